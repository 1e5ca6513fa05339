# The cogr-search expansion service (`cogr-search serve`, DESIGN.md section 5).
#
# Build from the repository root:   docker build -f docker/serve.Dockerfile -t cogr-serve .
# Run with a trained run mounted:   docker run -p 8300:8300 -v $PWD/runs:/runs:ro -e COGR_RUN=my-run cogr-serve
#
# The image holds the code and the CPU ML stack (torch, transformers) needed to load a
# run's generators; the run directory (checkpoints, config) is mounted at /runs, never
# baked in. No model is downloaded at run time.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    COGR_RUNS_DIR=/runs \
    COGR_RUN= \
    COGR_SERVE_PORT=8300

WORKDIR /app
COPY pyproject.toml constraints.txt README.md ./
COPY cogr_search ./cogr_search
# CPU wheels of torch keep the image far smaller than the default CUDA build.
RUN pip install --index-url https://download.pytorch.org/whl/cpu --extra-index-url https://pypi.org/simple \
        -c constraints.txt '.[train,serve]' \
    && useradd --system --uid 10001 cogr

USER cogr
EXPOSE 8300
HEALTHCHECK --interval=10s --timeout=3s --start-period=120s --retries=3 \
    CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8300/health', timeout=2).status == 200 else 1)"
# Shell form on purpose: COGR_RUN comes from the environment; exec keeps signals working.
CMD ["sh", "-c", "exec cogr-search serve --run \"$COGR_RUN\" --host 0.0.0.0 --port \"$COGR_SERVE_PORT\""]
