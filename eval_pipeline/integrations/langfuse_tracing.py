"""Trace every evaluated item to Langfuse: one trace per (run, case, repeat).

The root observation carries the case input and the agent's output contract (the same
shape production traces are read back in); the LangGraph run below it is recorded by the
Langfuse LangChain ``CallbackHandler``. Trace ids are derived from (run, case, repeat), so
scores can be attached later without storing ids.

The item's root observation has an id derived from (run, case, repeat) too
(``langfuse_client.item_root_span_id``): its scores go on it, where Langfuse's experiment
views read item scores. An item executed again under the same run id (a re-executed
Dagster run keeps its run id, and runs again the items its first attempt did not finish)
writes that observation again: Langfuse keeps the last. Other span ids are new on every
execution. Scores are upserted by id, so each appears once.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langfuse import Langfuse
from langfuse._client.propagation import _propagate_attributes  # see langfuse_experiments.py
from langfuse.langchain import CallbackHandler

from eval_pipeline.core.running import agent as agents
from eval_pipeline.core.running.agent import Agent, AgentResult
from eval_pipeline.core.store.records import ItemOutput
from eval_pipeline.core.suites.cases import GoldenCase
from eval_pipeline.core.util.redact import redact
from eval_pipeline.integrations import langfuse_experiments as experiments
from eval_pipeline.integrations.langfuse_client import item_spans, item_trace_id
from eval_pipeline.integrations.langfuse_datasets import item_id


class TracedAgent:
    """Wraps an agent under test; tracing problems never fail the item (the SDK exports
    spans in the background and only logs export errors)."""

    def __init__(
        self,
        agent: Agent,
        client: Langfuse,
        *,
        public_key: str,
        run_id: str,
        trace_name: str,
        tags: list[str],
        metadata: dict[str, str],
        environment: str,
        suite: str,
        prompt: dict[str, Any] | None = None,
        dataset: experiments.ExperimentDataset | None = None,
        trace_reused: bool = False,
    ):
        self.suite = suite
        self.trace_reused = trace_reused  # v4: memo-served items get a span of this run
        self.dataset = dataset  # v4: the dataset (and items) the experiment spans name
        self.agent = agent
        self.environment = environment
        self.prompt = prompt  # {"name", "version"}: linked to the generations below
        self.client = client
        self.handler = CallbackHandler(public_key=public_key)
        self.run_id = run_id
        self.trace_name = trace_name
        self.tags = tags
        self.metadata = metadata

    @contextmanager
    def _item(self, case: GoldenCase, repeat: int, **extra: str) -> Iterator[Any]:
        """The item's root observation in this run's trace, with the experiment attributes
        on it and on everything below it."""
        trace_id = item_trace_id(self.run_id, case.id, repeat)
        description = f"eval-pipeline run {self.run_id} of {self.suite}"
        with (
            item_spans(self.run_id, case.id, repeat, description),
            self.client.start_as_current_observation(
                trace_context={"trace_id": trace_id},
                name=self.trace_name,
                as_type="agent",
                input=case.input,
                metadata={"case_id": case.id, "repeat": str(repeat), **extra},
            ) as root,
            _propagate_attributes(
                trace_name=self.trace_name,
                session_id=self.run_id,
                tags=self.tags,
                metadata={**self.metadata, "case_id": case.id, "repeat": str(repeat)},
                environment=self.environment,  # every span below, the callback's too
                prompt=self.prompt,
                experiment=experiments.propagated(  # type: ignore[arg-type]
                    self.run_id,
                    self._item_id(case.id),
                    root.id,
                    self.metadata,
                    self.dataset.id if self.dataset else None,
                ),
            ),
        ):
            root._otel_span.set_attributes(experiments.root_attributes(case.expected_output))
            yield root

    def _item_id(self, case_id: str) -> str:
        """The case's dataset item: in the linked dataset, else in the suite's own."""
        if self.dataset is not None and case_id in self.dataset.items:
            return self.dataset.items[case_id]
        return item_id(self.suite, case_id)

    async def reused(self, case: GoldenCase, repeat: int, output: ItemOutput) -> None:
        """An item the memo answered (core/running/runner.py calls this): on a server that
        groups experiments from spans (v4), its own root observation in this run's trace,
        with the output and the run that produced it, so this run's experiment lists it
        (its scores go on this trace: langfuse_scores.item_score_payloads). Never raises."""
        if not self.trace_reused:
            return
        try:
            with self._item(case, repeat, reused_from=output.source_run_id or "") as root:
                root.update(output=experiments.shown_output(output.output))
        except Exception:  # tracing never fails an item
            return

    async def run(self, case: GoldenCase, *, repeat: int, callbacks: Any = ()) -> AgentResult:
        with self._item(case, repeat) as root:
            try:
                result = await self.agent.run(
                    case, repeat=repeat, callbacks=[*callbacks, self.handler]
                )
            except Exception as exc:
                root.update(level="ERROR", status_message=redact(f"{type(exc).__name__}: {exc}"))
                raise
            root.update(output=experiments.shown_output(result.output))
        return result

    @property
    def prompt_read(self) -> bool:
        return agents.prompt_read(self.agent)

    @property
    def service_url(self) -> str | None:
        return agents.service_url(self.agent)

    @property
    def offered_tools(self) -> frozenset[str] | None:
        return agents.offered_tools(self.agent)

    async def aclose(self) -> None:
        await agents.close(self.agent)
