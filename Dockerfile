# syntax=docker/dockerfile:1
# Build stage: turn the project into a wheel (and fetch its dependencies' wheels).
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY handlers ./handlers
COPY jobs ./jobs
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

# Final stage: no compilers, no pip cache, a non-root user, nothing written outside /tmp.
FROM python:3.11-slim
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
