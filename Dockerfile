# User-code image: serves the eval_pipeline code location over gRPC.
FROM python:3.11-slim
RUN useradd --create-home --uid 10001 app
WORKDIR /app
COPY pyproject.toml README.md ./
COPY eval_pipeline ./eval_pipeline
COPY datasets ./datasets
COPY prompts ./prompts
RUN pip install --no-cache-dir .
USER app
ENV EVAL_DATASETS_DIR=/app/datasets EVAL_PROMPTS_DIR=/app/prompts EVAL_HOME=/home/app/.eval_home
EXPOSE 4000
HEALTHCHECK CMD dagster api grpc-health-check -p 4000 || exit 1
CMD ["dagster", "api", "grpc", "-h", "0.0.0.0", "-p", "4000", "-m", "eval_pipeline.definitions"]
