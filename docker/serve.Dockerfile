# The cogr-search expansion service (`cogr-search serve`, DESIGN.md section 5).
#
# BASE: python:3.11-slim where a registry is in reach, localhost/cogr-python:bookworm here
# (python-base.Dockerfile). The context holds pyproject.toml, constraints.txt, README.md and
# cogr_search/ (`make images` stages them); packages come from PyPI with the project's pins.
# Run with a trained run mounted:
#   podman run -p 8300:8300 -v $PWD/runs:/runs:ro -e COGR_RUN=my-run localhost/cogr-serve
# The run directory (checkpoints, config) is mounted, never baked in; no model is
# downloaded at run time.
ARG BASE=python:3.11-slim
FROM ${BASE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/cogr/bin:$PATH \
    COGR_RUNS_DIR=/runs \
    COGR_RUN= \
    COGR_SERVE_PORT=8300

WORKDIR /app
# Dependencies first, in their own layer: a code change does not reinstall torch, nor does a
# README change (pyproject.toml names it, so an empty one stands in for the install).
COPY pyproject.toml constraints.txt ./
RUN python3 -m venv /opt/cogr \
    && mkdir -p cogr_search && touch cogr_search/__init__.py README.md \
    && pip install -q -c constraints.txt '.[train,serve]' \
    && pip uninstall -q -y cogr-search && rm -rf cogr_search build *.egg-info README.md
COPY README.md ./
COPY cogr_search ./cogr_search
RUN pip install -q --no-deps -c constraints.txt . && rm -rf build *.egg-info \
    && useradd --system --uid 10001 cogr

USER cogr
EXPOSE 8300
HEALTHCHECK --interval=5s --timeout=3s --start-period=300s --retries=3 \
    CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8300/health', timeout=2).status == 200 else 1)"
# Shell form on purpose: COGR_RUN comes from the environment; exec keeps signals working.
CMD ["sh", "-c", "exec cogr-search serve --run \"$COGR_RUN\" --host 0.0.0.0 --port \"$COGR_SERVE_PORT\""]
