# syntax=docker/dockerfile:1
# The base image by tag (what it is) and digest (exactly which build: the same bytes on every build,
# and a retagged image cannot slip in). To move to a newer python:3.11-slim, read its current digest
#   docker buildx imagetools inspect python:3.11-slim        (the "Digest:" line)
# or after a pull: docker inspect --format '{{index .RepoDigests 0}}' python:3.11-slim
# and replace the digest here; a build can also override it: --build-arg PYTHON_IMAGE=...
ARG PYTHON_IMAGE=python:3.11-slim@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7

# Build stage: compile the message catalogs, turn the project into a wheel (and fetch its dependencies' wheels).
# The .mo files go into the wheel (pyproject's package-data lists bot/locale/*/LC_MESSAGES/*.mo), compiled by
# the Babel the bot depends on, so the bot does not compile a catalog when it starts.
FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY handlers ./handlers
COPY jobs ./jobs
RUN pip install --no-cache-dir "babel>=2.14" \
    && pybabel compile -d bot/locale -D messages \
    && pip wheel --no-cache-dir --wheel-dir /wheels .

# Final stage: no compilers, no pip cache, a non-root user, nothing written outside /tmp. The digest chart's
# Chinese title, axis and legend need a font with CJK glyphs: Debian's fonts-wqy-microhei (and fontconfig, which
# finds it), without recommended packages, the package lists removed.
FROM ${PYTHON_IMAGE}
RUN apt-get update \
    && apt-get install --yes --no-install-recommends fonts-wqy-microhei fontconfig \
    && rm -rf /var/lib/apt/lists/*
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    MPLCONFIGDIR=/tmp/matplotlib \
    PATH=/opt/gpu-quota-bot/bin:$PATH
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    python -m venv /opt/gpu-quota-bot \
    && /opt/gpu-quota-bot/bin/pip install --no-cache-dir --no-index --find-links /wheels gpu-quota-bot \
    && /opt/gpu-quota-bot/bin/pip uninstall --yes pip setuptools wheel \
    && useradd --uid 10001 --no-create-home --shell /usr/sbin/nologin bot
USER 10001:10001
WORKDIR /tmp
EXPOSE 3000
ENTRYPOINT ["gpu-quota-bot"]
CMD ["run"]
