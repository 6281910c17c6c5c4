# flipgate as a Docker container action (see action.yml and docs/action.md).
#
# Reproducible: the base is pinned by digest and every dependency is installed from
# a lock with hashes (requirements/*.txt, made by scripts/lock-image). Only flipgate's
# own wheel is built from this checkout. Build with `--build-arg WITH_AZURE=true` to
# add the optional azure-ai-evaluation judge backend; the two variants share every
# layer up to the azure one.

# python:3.12-slim-bookworm as docker-library/repo-info recorded it on 2026-08-25 (Python
# 3.12.14): the digest of the multi-architecture index (amd64, arm64, ...). The one pin of the
# base; docker.yml's `base-digest` job says when the tag has moved on. To build on a local
# stand-in stored under the tag, pass --build-arg BASE_IMAGE=python:3.12-slim-bookworm.
ARG BASE_IMAGE=docker.io/library/python:3.12-slim-bookworm@sha256:0f5b26b9518d002b6173fd61daad821fa340635ebfec5bba471013f9ca114579

FROM ${BASE_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# The build backend from its lock too, then the wheel without build isolation.
COPY requirements/build.txt ./requirements/
RUN pip install --no-cache-dir --require-hashes --only-binary=:all: -r requirements/build.txt
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip wheel --no-cache-dir --no-deps --no-build-isolation --wheel-dir /wheels .

FROM ${BASE_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# git reads the base and head commits (never checks them out). The runner mounts
# the workspace owned by another uid; flipgate's one git runner marks exactly that
# directory safe on each call, so no system-wide safe.directory is needed.
RUN apt-get update \
    && apt-get install -y --no-install-recommends git \
    && rm -rf /var/lib/apt/lists/*
COPY requirements/image.txt /tmp/requirements/
RUN pip install --no-cache-dir --require-hashes --only-binary=:all: -r /tmp/requirements/image.txt
# Everything above is shared by both variants; the azure lock keeps the plain lock's pins.
ARG WITH_AZURE=false
COPY requirements/image-azure.txt /tmp/requirements/
RUN if [ "$WITH_AZURE" = "true" ]; then \
        pip install --no-cache-dir --require-hashes --only-binary=:all: \
            -r /tmp/requirements/image-azure.txt; \
    fi \
    && rm -rf /tmp/requirements
COPY --from=build /wheels /tmp/wheels
# Its dependencies are all installed above: --no-deps, and pip check proves nothing is missing.
RUN pip install --no-cache-dir --no-deps --no-index /tmp/wheels/flipgate-*.whl \
    && rm -rf /tmp/wheels \
    && pip check
# GitHub sets the working directory (the workspace) itself: absolute paths only.
ENTRYPOINT ["/usr/local/bin/flipgate", "action"]
