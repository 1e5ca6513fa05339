# The local stand-in for python:3.11-slim: Debian bookworm's Python 3.11 with venv.
ARG BASE=localhost/cogr-base:bookworm
FROM ${BASE}
RUN apt-get update -q \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3 python3-venv ca-certificates \
    && rm -rf /var/lib/apt/lists/*
