"""A suite: one agent + its golden dataset + evaluators + thresholds + the prompt it watches.

Suites are declared in a project file (agents/project/) and resolved into this value: the
agent is reached through ``make_agent`` (an adapter built from the declaration), the
evaluators are the callables themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from eval_pipeline.core.errors import USER_CODE_FAILURES
from eval_pipeline.core.options import DEFAULTS
from eval_pipeline.core.prompts.labels import PromptVersion
from eval_pipeline.core.running.agent import Agent
from eval_pipeline.core.running.commit import code_commit
from eval_pipeline.core.running.memo import (
    dataset_resources,
    installed_fingerprint,
    source_fingerprint,
)
from eval_pipeline.core.scoring.thresholds import Thresholds
from eval_pipeline.core.suites.cases import (
    CaseSet,
    CaseValidator,
    DatasetError,
    FieldNeeds,
    GoldenCase,
    LangfuseDatasetRef,
    load_cases,
    validate_cases,
)
from eval_pipeline.evaluators.declare import (
    Evaluator,
    RunEvaluator,
    case_fields,
    evaluator_name,
    evaluator_version,
)

# (prompt, LLM settings, the suite's dataset directory) -> the agent for one run
# The raw (location, case) pairs of a remote dataset; injected from integrations (core
# never imports Langfuse): integrations/services.py ``Services.suite``.
CaseSource = Callable[[LangfuseDatasetRef], list[tuple[str, Any]]]
AgentFactory = Callable[[PromptVersion | None, Any, Path], Agent]


@dataclass(frozen=True)
class Suite:
    name: str
    dataset_dir: Path
    build_agent: AgentFactory
    evaluators: Sequence[Evaluator]
    thresholds: Thresholds
    prompt_name: str | None = None
    # Where the thresholds were written (their file, or the project file's suite entry),
    # for errors naming a field of them; "" when none were (the defaults).
    thresholds_origin: str = ""
    run_evaluators: Sequence[RunEvaluator] = ()
    categories: tuple[str, ...] | None = None  # None: whatever the cases use
    absence_categories: tuple[str, ...] = ()  # categories whose cases expect "do nothing"
    validate_case: CaseValidator | None = None
    watched_labels: tuple[str, ...] = ("production", "staging")
    repeats: int = 1
    concurrency: int = (
        DEFAULTS.concurrency
    )  # of the runs automation starts (the CLI: --concurrency)
    agent_version: str = "1"  # declared by the project; the code fingerprint is added
    memoize: bool = True  # False: nothing tells when the agent changed (an unversioned service)
    agent_description: str = ""  # what `agent:` points at, for reports and doctor
    # The agent says whether it read its prompt once built (a graph's factory reads it);
    # otherwise only a run's notes tell (agents/adapters/kinds.py).
    prompt_read_when_built: bool = False
    trace_name: str = ""  # name of the agent's root observation in production traces
    trace_evaluators: Sequence[Evaluator] = ()  # reference-free, for production traces
    source_paths: tuple[Path, ...] = ()  # the agent's code, fingerprinted into code_version
    # ``dataset: langfuse:NAME[@VERSION]``: the cases are that dataset's items, read through
    # ``case_source`` (None: Langfuse is not configured); ``dataset_dir`` is then the
    # project's directory (the agent's data files).
    dataset_ref: LangfuseDatasetRef | None = None
    case_source: CaseSource | None = None

    @cached_property
    def code_version(self) -> str:
        """``agent_version`` plus a hash of the agent's code and the data files beside the
        cases, and one of the installed packages' versions (a new langchain can change an
        answer as surely as an edit): any change there changes the memo keys of the suite's
        items, and keeps a run from being UNCHANGED."""
        beside = dataset_resources(self.dataset_dir) if self.dataset_ref is None else []
        files = [*self.source_paths, *beside]
        return f"{self.agent_version}+{source_fingerprint(files)}+{installed_fingerprint()}"

    @cached_property
    def code_commit(self) -> str | None:
        """The commit of the repository the agent's code is in (core/running/commit.py)."""
        return code_commit(self.source_paths[0] if self.source_paths else self.dataset_dir)

    def make_agent(self, prompt: PromptVersion | None, settings: Any) -> Agent:
        """The agent for one run with ``prompt`` on ``settings`` (factories run here)."""
        return self.build_agent(prompt, settings, self.dataset_dir)

    def load_cases(self, warnings: list[str] | None = None) -> CaseSet:
        """The suite's cases; a case lacking a field its evaluators read is refused
        (DatasetError), fields none of them reads are noted in ``warnings``."""
        if self.dataset_ref is not None:
            return validate_cases(self.remote_raw_cases(), origin=str(self.dataset_ref),
                                  categories=self.categories, validate=self._check,
                                  notice=self.field_needs.unknown, warnings=warnings)  # fmt: skip
        return load_cases(self.dataset_dir, categories=self.categories, validate=self._check,
                          notice=self.field_needs.unknown, warnings=warnings)  # fmt: skip

    @property
    def dataset_origin(self) -> str:
        """Where the cases come from, for doctor, reports and Dagster metadata."""
        return str(self.dataset_ref) if self.dataset_ref is not None else str(self.dataset_dir)

    def remote_raw_cases(self) -> list[tuple[str, Any]]:
        assert self.dataset_ref is not None
        if self.case_source is None:
            raise DatasetError([
                f"suite '{self.name}': dataset '{self.dataset_ref}' is a Langfuse dataset but "
                "Langfuse is not configured: set LANGFUSE_PUBLIC_KEY, LANGFUSE_SECRET_KEY and "
                "LANGFUSE_BASE_URL (or LANGFUSE_HOST), or point 'dataset:' at a local folder"
            ])  # fmt: skip
        try:
            return self.case_source(self.dataset_ref)
        except DatasetError as exc:
            raise DatasetError([f"suite '{self.name}': {p}" for p in exc.problems]) from exc

    def _check(self, case: GoldenCase) -> list[tuple[str, str]]:
        """What the evaluators read that the case lacks, then the suite's own validator (a
        validator that raises, exits or answers something else than (field, problem) pairs
        is a problem of the case, naming it: the dataset is refused, exit 2)."""
        return [*self.field_needs.problems(case), *self._own_problems(case)]

    def _own_problems(self, case: GoldenCase) -> list[tuple[str, str]]:
        if self.validate_case is None:
            return []
        name = getattr(self.validate_case, "__qualname__", repr(self.validate_case))
        try:
            found = self.validate_case(case)
        except USER_CODE_FAILURES as exc:
            return [("case_validator", f"{name} raised {type(exc).__name__}: {exc}; fix the "
                     "suite's case_validator")]  # fmt: skip
        if found is None:
            return []
        pairs = list(found) if isinstance(found, list | tuple) else None
        if pairs is None or not all(isinstance(p, list | tuple) and len(p) == 2 for p in pairs):
            return [("case_validator", f"{name} returned {found!r:.80}: it must return a list "
                     "of (field, problem) pairs (empty when the case is fine)")]  # fmt: skip
        return [(str(f), str(problem)) for f, problem in pairs]

    @cached_property
    def field_needs(self) -> FieldNeeds:
        """The case fields the suite's evaluators read (``reads``) or may use."""
        required: dict[str, list[str]] = {}
        known: set[str] = set()
        undeclared = False
        for fn in self.evaluators:
            fields = case_fields(fn)
            if fields is None:
                undeclared = True
                continue
            for path in fields.reads:
                required.setdefault(path, []).append(evaluator_name(fn))
                known.update(path.split("|"))
            known.update(fields.may_read)
        return FieldNeeds({path: tuple(readers) for path, readers in required.items()},
                          None if undeclared else frozenset(known))  # fmt: skip

    def versions_of_evaluators(self) -> dict[str, str]:
        """Each evaluator's version (a fingerprint of its code and parameters, see
        evaluators/declare.py), recorded with every run."""
        return {evaluator_name(f): evaluator_version(f)
                for f in [*self.evaluators, *self.run_evaluators]}  # fmt: skip
