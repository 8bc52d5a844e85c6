"""The retry policy of every agent's LLM node (transient provider errors only)."""

from langgraph.types import RetryPolicy

from eval_pipeline.core.retry import is_retryable

LLM_RETRY_POLICY = RetryPolicy(max_attempts=2, initial_interval=0.5, retry_on=is_retryable)
