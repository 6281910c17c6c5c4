# flipgate as a Docker container action (see action.yml and the README, "On GitHub").
#
# A `runs.image: Dockerfile` action is built on every workflow run, so this
# stays short: a wheel built in one stage, installed without test extras in a
# slim Python image with git. Build with `--build-arg WITH_AZURE=true` to add
# the optional azure-ai-evaluation judge backend.

FROM python:3.12-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.12-slim-bookworm
ARG WITH_AZURE=false
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# git reads the base and head commits (never checks them out). The runner mounts
# the workspace owned by another uid; flipgate's one git runner marks exactly that
# directory safe on each call, so no system-wide safe.directory is needed.
RUN apt-get update \
    && apt-get install -y --no-install-recommends git \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /wheels /tmp/wheels
RUN wheel="$(ls /tmp/wheels/flipgate-*.whl)" \
    && if [ "$WITH_AZURE" = "true" ]; then wheel="${wheel}[azure]"; fi \
    && pip install --no-cache-dir "$wheel" \
    && rm -rf /tmp/wheels
# GitHub sets the working directory (the workspace) itself: absolute paths only.
ENTRYPOINT ["/usr/local/bin/flipgate", "action"]
