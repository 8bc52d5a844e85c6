"""Calibrate a suite's LLM judge against people: the judge grades a small labelled set
shipped with the suite, and its pass/fail verdicts are compared with the people's
(accuracy, Cohen's kappa with a 95% CI: core/scoring/agreement.py).

The labelled set is ``judge_labels.yaml`` in the suite's dataset directory:

    labels:
      - id: tone-01               # unique
        rubric: tone              # the judge's evaluator name in the suite
        input: {…}                # what the agent was asked (any JSON)
        output: {…}               # what it answered: a transcript, a response, any JSON
        human: pass               # the people's verdict: pass | fail

The judge runs through the runner like every judge (concurrency, timeouts, retries), and
its calls, tokens and cost are reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from eval_pipeline.core.errors import ConfigurationError
from eval_pipeline.core.running.pricing import PriceTable
from eval_pipeline.core.running.runner import RunnerConfig
from eval_pipeline.core.scoring.agreement import Agreement, cohen_kappa
from eval_pipeline.core.scoring.judging import JudgeJob, run_judges, uses_model
from eval_pipeline.core.scoring.summary import JudgeSpending
from eval_pipeline.core.store.records import ItemOutput
from eval_pipeline.core.suites.cases import ID_PATTERN, GoldenCase
from eval_pipeline.core.suites.suite import Suite
from eval_pipeline.core.util import safe_yaml
from eval_pipeline.evaluators.declare import evaluator_name, evaluator_version

LABELS_FILE = "judge_labels.yaml"
HUMAN = {"pass": True, "fail": False}
ID_PATTERN_RE = re.compile(ID_PATTERN)


class CalibrationError(ConfigurationError):
    """The labelled set or the rubric cannot be used; the message says where and why."""


@dataclass(frozen=True)
class Label:
    id: str
    rubric: str
    input: Any
    output: Any
    human_pass: bool


@dataclass(frozen=True)
class Disagreement:
    id: str
    judge_score: float | None
    human: str
    reasoning: str


@dataclass(frozen=True)
class Calibration:
    suite: str
    rubric: str
    judge_version: str
    agreement: Agreement
    min_kappa: float
    pass_score: float
    disagreements: list[Disagreement] = field(default_factory=list)
    judge_errors: int = 0
    judge_calls: int = 0
    judge_input_tokens: int = 0
    judge_output_tokens: int = 0
    judge_cost_usd: float = 0.0

    @property
    def below_floor(self) -> bool:
        """Below the floor, or not measurable (one label only): either way, not trusted."""
        kappa = self.agreement.kappa
        return kappa is None or kappa < self.min_kappa


def judges_of(suite: Suite) -> dict[str, Any]:
    """The suite's model-backed evaluators by name."""
    return {evaluator_name(f): f for f in suite.evaluators if uses_model(f)}


def load_labels(path: Path) -> list[Label]:
    if not path.is_file():
        raise CalibrationError(f"{path}: no labelled set (write {LABELS_FILE}: see docs/judges.md)")
    try:
        raw = safe_yaml.load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise CalibrationError(f"{path}: not valid YAML ({exc})") from exc
    entries = raw.get("labels") if isinstance(raw, dict) else None
    if not isinstance(entries, list):
        raise CalibrationError(f"{path}: expected a mapping with a 'labels' list")
    labels, seen = [], set()
    for i, entry in enumerate(entries):
        where = f"{path}: labels[{i}]"
        if not isinstance(entry, dict):
            raise CalibrationError(f"{where}: each label is a mapping")
        for key in ("id", "rubric", "output", "human"):
            if key not in entry:
                raise CalibrationError(f"{where}: missing field '{key}'")
        label_id = str(entry["id"])
        if not ID_PATTERN_RE.match(label_id) or label_id in seen:
            raise CalibrationError(f"{where}.id: {label_id!r} is not a unique id "
                                   "(letters, digits, '.', ':', '_', '-')")  # fmt: skip
        seen.add(label_id)
        human = str(entry["human"]).lower()
        if human not in HUMAN:
            raise CalibrationError(f"{where}.human: {entry['human']!r}; use pass or fail")
        labels.append(Label(label_id, str(entry["rubric"]), entry.get("input"), entry["output"],
                            HUMAN[human]))  # fmt: skip
    return labels


def calibrate(
    suite: Suite,
    rubric: str,
    labels_path: Path | None = None,
    *,
    runner: RunnerConfig | None = None,
    prices: PriceTable | None = None,
) -> Calibration:
    judges = judges_of(suite)
    if rubric not in judges:
        known = ", ".join(sorted(judges)) or "none"
        raise CalibrationError(f"suite {suite.name} has no judge named {rubric!r} "
                               f"(its judges: {known})")  # fmt: skip
    path = labels_path or suite.dataset_dir / LABELS_FILE
    labels = [x for x in load_labels(path) if x.rubric == rubric]
    if not labels:
        raise CalibrationError(f"{path}: no labels for rubric {rubric!r}")
    judge = judges[rubric]
    jobs = [JudgeJob(_case(x), ItemOutput(x.id, 0, _as_output(x.output)), judge) for x in labels]
    scores = {s.item_id: s for s in run_judges(jobs, runner, prices)}
    config = suite.thresholds.judges
    pairs, disagreements, errors = [], [], 0
    for label in labels:
        score = scores[label.id]
        if score.value is None:
            errors += 1
            continue
        judged = score.value >= config.pass_score
        pairs.append((judged, label.human_pass))
        if judged != label.human_pass:
            disagreements.append(Disagreement(label.id, score.value,
                                              "pass" if label.human_pass else "fail",
                                              score.comment or ""))  # fmt: skip
    if not pairs:
        first = next(iter(scores.values()))
        raise CalibrationError(f"the judge failed on every label: {first.comment}")
    spent = JudgeSpending.of(list(scores.values()))
    return Calibration(
        suite=suite.name, rubric=rubric, judge_version=evaluator_version(judge),
        agreement=cohen_kappa(pairs), min_kappa=config.min_kappa, pass_score=config.pass_score,
        disagreements=disagreements, judge_errors=errors, judge_calls=spent.calls,
        judge_input_tokens=spent.tokens.input, judge_output_tokens=spent.tokens.output,
        judge_cost_usd=spent.cost_usd,
    )  # fmt: skip


def labelled_rubrics(suite: Suite) -> list[str]:
    """The suite's judges that have labels in its dataset directory."""
    path = suite.dataset_dir / LABELS_FILE
    if not path.is_file():
        return []
    rubrics = {x.rubric for x in load_labels(path)}
    return [name for name in judges_of(suite) if name in rubrics]


def _case(label: Label) -> GoldenCase:
    data = label.input if isinstance(label.input, dict) else {"message": label.input}
    return GoldenCase(
        id=label.id,
        input=data,
        metadata={"category": "calibration", "difficulty": "easy", "tier": "full"},
    )


def _as_output(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {"response": str(value)}
