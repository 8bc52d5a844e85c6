"""Summaries of a run: means per evaluator, per category and difficulty, latency, cost.

Means are taken over per-case means (repeats are averaged first), so a case run five
times weighs as much as a case run once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import pandas as pd

from eval_pipeline.core.scoring.categories import distributions
from eval_pipeline.core.scoring.reducers import flaky_items
from eval_pipeline.core.scoring.stats import mean_se
from eval_pipeline.core.store.records import ItemOutput, ItemScore
from eval_pipeline.core.suites.cases import GoldenCase


@dataclass(frozen=True)
class SliceRow:
    """One category (or difficulty): how many cases, and each metric's mean over them."""

    n: int
    means: dict[str, float | None]


@dataclass(frozen=True)
class PassCount:
    """Cases whose value of ``metric`` is at least ``threshold``."""

    metric: str
    threshold: float
    count: int
    of: int


@dataclass(frozen=True)
class RunEvaluation:
    value: float | None
    comment: str | None = None


@dataclass(frozen=True)
class Latency:
    p50: float | None = None
    p95: float | None = None
    mean: float | None = None


@dataclass(frozen=True)
class ErrorKind:
    """Items that failed the same way: how many, which, and one message as an example."""

    count: int
    example: str
    items: list[str] = field(default_factory=list)  # the first few
    fault: str | None = None  # agent | infrastructure | configuration (running/failures.py)


@dataclass(frozen=True)
class Tokens:
    input: int = 0
    output: int = 0


@dataclass(frozen=True)
class Summary:
    """What a run amounts to; stored with the run as JSON (``to_dict`` / ``from_dict``)."""

    n_cases: int
    n_items: int
    repeats: int
    n_errors: int
    metrics: dict[str, float | None]
    metric_se: dict[str, float | None] = field(default_factory=dict)
    error_items: list[str] = field(default_factory=list)
    # Items that stopped at an interrupt no scripted answer resumed (core/util/interrupts.py)
    n_paused: int = 0
    paused_items: list[str] = field(default_factory=list)
    flaky_items: list[dict[str, Any]] = field(default_factory=list)
    passed: PassCount | None = None
    by_category: dict[str, SliceRow] = field(default_factory=dict)
    by_difficulty: dict[str, SliceRow] = field(default_factory=dict)
    run_evaluations: dict[str, RunEvaluation] = field(default_factory=dict)
    latency_ms: Latency = field(default_factory=Latency)
    tokens: Tokens = field(default_factory=Tokens)
    cost_usd: float = 0.0
    attempts: int = 0
    # Reused from the memo (core/running/memo.py): their cost and latency are those of the
    # run that produced them; "spent" is what this run paid.
    n_reused: int = 0
    cost_usd_spent: float = 0.0
    unpriced_models: list[str] = field(default_factory=list)  # calls not in cost_usd
    errors_by_kind: dict[str, ErrorKind] = field(default_factory=dict)  # most frequent first
    # Scores an evaluator could not give (it raised, its judge call failed, a stepwise
    # step errored): "evaluator: kind" → how many; never counted as a 0.
    n_score_errors: int = 0
    score_errors_by_kind: dict[str, ErrorKind] = field(default_factory=dict)
    # The agent's model calls that offered tools, and how many were answered with a call
    # (none of many: the endpoint may ignore tools, e.g. llama.cpp without tool_choice)
    calls_with_tools: int = 0
    tool_call_answers: int = 0
    invalid_tool_calls: int = 0  # … answered with tool calls whose arguments did not parse
    # Model-backed evaluators (LLM judges): their calls, tokens and cost, apart from the agent's
    judge_calls: int = 0
    judge_tokens: Tokens = field(default_factory=Tokens)
    judge_cost_usd: float = 0.0
    # Categorical metrics: how many scores fell in each category (categories.py)
    categories: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def cost_note(self) -> str:
        """What the cost leaves out, for reports ("" when every model had a price)."""
        if not self.unpriced_models:
            return ""
        return (f"without the models that have no price ({', '.join(self.unpriced_models)}: "
                "add them to EVAL_PRICES_FILE)")  # fmt: skip

    def metric(self, name: str) -> float | None:
        return self.metrics.get(name)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Summary:
        """Read a stored summary; keys a newer version added get their defaults."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["by_category"] = _slices(data.get("by_category"))
        values["by_difficulty"] = _slices(data.get("by_difficulty"))
        values["run_evaluations"] = {
            k: RunEvaluation(**v) for k, v in (data.get("run_evaluations") or {}).items()
        }
        values["passed"] = PassCount(**data["passed"]) if data.get("passed") else None
        values["latency_ms"] = Latency(**(data.get("latency_ms") or {}))
        values["tokens"] = Tokens(**(data.get("tokens") or {}))
        values["judge_tokens"] = Tokens(**(data.get("judge_tokens") or {}))
        for name in ("errors_by_kind", "score_errors_by_kind"):
            values[name] = {k: ErrorKind(**v) for k, v in (data.get(name) or {}).items()}
        return cls(**values)


def _slices(raw: Mapping[str, Any] | None) -> dict[str, SliceRow]:
    return {k: SliceRow(int(v["n"]), dict(v["means"])) for k, v in (raw or {}).items()}


def scores_table(cases: Sequence[GoldenCase], scores: Sequence[ItemScore]) -> pd.DataFrame:
    """Long table: item_id, repeat, evaluator, value, category, difficulty."""
    frame = pd.DataFrame(
        [(s.item_id, s.repeat, s.evaluator, s.value) for s in scores],
        columns=["item_id", "repeat", "evaluator", "value"],
    )
    meta = pd.DataFrame(
        [(c.id, c.category, c.metadata.difficulty) for c in cases],
        columns=["item_id", "category", "difficulty"],
    )
    return frame.merge(meta, on="item_id", how="left")


def per_case_means(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (item, evaluator): the mean over repeats."""
    return (
        table.groupby(["item_id", "evaluator", "category", "difficulty"], dropna=False)["value"]
        .mean()
        .reset_index()
    )


def _pivot(per_case: pd.DataFrame, by: str) -> dict[str, SliceRow]:
    if per_case.empty:
        return {}
    means = per_case.pivot_table(index=by, columns="evaluator", values="value", aggfunc="mean")
    counts = per_case.groupby(by)["item_id"].nunique()
    return {
        str(key): SliceRow(int(counts[key]), {k: _r(v) for k, v in row.items()})
        for key, row in means.iterrows()
    }


def _r(value: Any) -> float | None:
    return None if pd.isna(value) else round(float(value), 4)


def summarize(
    cases: Sequence[GoldenCase],
    outputs: Sequence[ItemOutput],
    scores: Sequence[ItemScore],
    run_evaluations: Mapping[str, RunEvaluation] | None = None,
    *,
    pass_metric: str | None = None,
    pass_at: float = 1.0,
    repeats: int | None = None,
) -> Summary:
    """The run's summary; ``passed`` counts the cases whose ``pass_metric`` (mean over
    repeats) is at least ``pass_at``. ``repeats``: the run's repeats per case (default:
    the most any case has; a sequential run may repeat a few flaky cases more)."""
    per_case = per_case_means(scores_table(cases, scores))
    metrics = per_case.groupby("evaluator")["value"].mean() if not per_case.empty else {}
    latencies = pd.Series([o.latency_ms for o in outputs], dtype=float)
    return Summary(
        n_cases=len({o.item_id for o in outputs}),
        n_items=len(outputs),
        repeats=repeats or max((o.repeat for o in outputs), default=-1) + 1,
        n_errors=sum(1 for o in outputs if o.error),
        error_items=sorted({o.item_id for o in outputs if o.error})[:50],
        n_paused=sum(1 for o in outputs if o.status == "paused"),
        paused_items=sorted({o.item_id for o in outputs if o.status == "paused"})[:50],
        metrics={k: _r(v) for k, v in dict(metrics).items()},
        metric_se={  # standard errors over per-case means, never over run averages
            str(k): _r(mean_se(group.dropna().tolist()).se) if group.notna().any() else None
            for k, group in per_case.groupby("evaluator")["value"]
        },
        flaky_items=flaky_items(scores),
        passed=_passed(per_case, pass_metric, pass_at),
        by_category=_pivot(per_case, "category"),
        by_difficulty=_pivot(per_case, "difficulty"),
        run_evaluations=dict(run_evaluations or {}),
        latency_ms=Latency(
            p50=_r(latencies.quantile(0.5)) if len(latencies) else None,
            p95=_r(latencies.quantile(0.95)) if len(latencies) else None,
            mean=_r(latencies.mean()) if len(latencies) else None,
        ),
        tokens=Tokens(
            input=int(sum(o.input_tokens for o in outputs)),
            output=int(sum(o.output_tokens for o in outputs)),
        ),
        cost_usd=round(sum(o.cost_usd for o in outputs), 6),
        attempts=int(sum(o.attempts for o in outputs)),
        n_reused=sum(1 for o in outputs if o.source_run_id),
        cost_usd_spent=round(sum(o.cost_usd for o in outputs if not o.source_run_id), 6),
        unpriced_models=sorted({m for o in outputs for m in o.unpriced_models}),
        errors_by_kind=errors_by_kind(outputs),
        calls_with_tools=_usage_sum(outputs, "calls_with_tools"),
        tool_call_answers=_usage_sum(outputs, "tool_call_answers"),
        invalid_tool_calls=_usage_sum(outputs, "invalid_tool_calls"),
        n_score_errors=sum(1 for s in scores if s.error_kind),
        score_errors_by_kind=score_errors_by_kind(scores),
        **_judge_fields(JudgeSpending.of(scores)),
        categories=distributions(scores),
    )


def _judge_fields(spent: JudgeSpending) -> dict[str, Any]:
    """The summary's judge_* fields (a summary stored before this type keeps its shape)."""
    return {"judge_calls": spent.calls, "judge_tokens": spent.tokens,
            "judge_cost_usd": spent.cost_usd}  # fmt: skip


def _usage_sum(outputs: Sequence[ItemOutput], key: str) -> int:
    return int(sum(u.get(key, 0) for o in outputs for u in (o.usage or {}).values()))


@dataclass(frozen=True)
class JudgeSpending:
    """What the model-backed evaluators (LLM judges) of some scores spent."""

    calls: int = 0
    tokens: Tokens = Tokens()
    cost_usd: float = 0.0

    @classmethod
    def of(cls, scores: Sequence[ItemScore]) -> JudgeSpending:
        """From the scores' metadata, where each judge records its calls, tokens and cost."""
        spent = [s.metadata for s in scores if s.metadata and "judge_calls" in s.metadata]
        return cls(
            calls=int(sum(m["judge_calls"] for m in spent)),
            tokens=Tokens(input=int(sum(m["judge_input_tokens"] for m in spent)),
                          output=int(sum(m["judge_output_tokens"] for m in spent))),
            cost_usd=round(sum(m["judge_cost_usd"] for m in spent), 6),
        )  # fmt: skip


EXAMPLE_CHARS = 300
LISTED_ITEMS = 5


def errors_by_kind(outputs: Sequence[ItemOutput]) -> dict[str, ErrorKind]:
    """Errored items grouped by kind (status code, timeout, exception type), the most
    frequent first, each with its first message as an example."""
    groups: dict[str, list[ItemOutput]] = {}
    for o in outputs:
        if o.error:
            kind = o.error_kind or o.error.partition(":")[0].strip() or "error"
            groups.setdefault(kind, []).append(o)
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return {
        kind: ErrorKind(len(members), (members[0].error or "")[:EXAMPLE_CHARS],
                        sorted({o.item_id for o in members})[:LISTED_ITEMS], members[0].fault)
        for kind, members in ranked
    }  # fmt: skip


def score_errors_by_kind(scores: Sequence[ItemScore]) -> dict[str, ErrorKind]:
    """Scores that are errors, grouped by evaluator and kind, the most frequent first."""
    groups: dict[str, list[ItemScore]] = {}
    for s in scores:
        if s.error_kind:
            groups.setdefault(f"{s.evaluator}: {s.error_kind}", []).append(s)
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return {
        kind: ErrorKind(len(members), (members[0].comment or "")[:EXAMPLE_CHARS],
                        sorted({s.item_id for s in members})[:LISTED_ITEMS])
        for kind, members in ranked
    }  # fmt: skip


def _passed(per_case: pd.DataFrame, metric: str | None, pass_at: float) -> PassCount | None:
    if metric is None or per_case.empty:
        return None
    values = per_case[per_case["evaluator"] == metric]["value"].dropna()
    if values.empty:
        return None
    return PassCount(metric, pass_at, int((values >= pass_at).sum()), len(values))


def markdown_table(rows: Mapping[str, SliceRow], key_title: str) -> str:
    """Render slices (category → n and means) as a Markdown table."""
    if not rows:
        return "_no rows_"
    columns = sorted({c for r in rows.values() for c in r.means})
    head = f"| {key_title} | n | " + " | ".join(columns) + " |"
    sep = "|---|---:|" + "---:|" * len(columns)
    lines = [head, sep]
    for key, row in rows.items():
        cells = [_fmt(row.means.get(c)) for c in columns]
        lines.append(f"| {md_escape(key)} | {row.n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    return "–" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


MD_SPECIAL = "\\`*_{}[]<>|#"


def md_escape(text: str) -> str:
    """Data (ids, categories, comments) must not inject Markdown or HTML into reports, nor
    break a table row with a line break."""
    for ch in MD_SPECIAL:
        text = text.replace(ch, "\\" + ch)
    return " ".join(text.splitlines())
