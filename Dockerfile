# User-code image: serves the eval_pipeline code location over gRPC to the Dagster
# webserver and daemon; the K8sRunLauncher starts every run in a pod from this same image.
#
#   docker build --platform linux/amd64 -t eval-pipeline:0.1.0 .
#
# Pinned: the base image tag (patch release and Debian release), and every Python package by
# version and sha256 hash (deploy/requirements.lock, from scripts/lock_deploy.py). For a
# fully reproducible base, add the digest your registry reports: FROM python:…@sha256:….
FROM python:3.11.14-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN useradd --create-home --uid 10001 --user-group app
WORKDIR /app

# Dependencies first (their own layer, rebuilt only when the lock changes), hash-checked;
# then the project itself without resolving anything.
COPY deploy/requirements.lock ./deploy/requirements.lock
RUN pip install --require-hashes --no-deps -r deploy/requirements.lock
COPY pyproject.toml README.md ./
COPY eval_pipeline ./eval_pipeline
RUN pip install --no-deps . && rm -rf build eval_pipeline.egg-info
COPY examples ./examples

# The project file declares the suites (paths relative to it; its plugins and agents are
# imported from beside it). A team's image copies its own project instead of the examples.
# Runs write their store and charts under EVAL_HOME unless EVAL_RESULTS_URL points at Postgres (the Helm values do);
# secrets come from the environment only.
ENV EVAL_PROJECT=/app/examples/eval-pipeline.yaml \
    EVAL_HOME=/home/app/.eval_home

USER 10001:10001
EXPOSE 4000
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
    CMD ["dagster", "api", "grpc-health-check", "-p", "4000"]
CMD ["dagster", "api", "grpc", "-h", "0.0.0.0", "-p", "4000", "-m", "eval_pipeline.definitions"]
