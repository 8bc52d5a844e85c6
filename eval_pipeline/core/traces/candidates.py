"""Turn scored production traces into candidate golden cases for a person to review.

Two kinds of candidates: the worst traces (lowest mean reference-free score) and the most
novel ones (whose input shares few words with every existing golden case). They are
written in the golden-case format, with ``expected_output`` filled only when the trace
carries user feedback with a correction (``metadata.user_feedback.corrected_items``);
otherwise it is null and ``metadata.review_note`` says what to fill in. Promoting one =
moving it into ``datasets/<suite>/cases.yaml`` with a real category and expected output.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from eval_pipeline.core.store.records import ItemScore
from eval_pipeline.core.traces.observations import TraceRecord

_WORD = re.compile(r"[a-z0-9']+")


@dataclass(frozen=True)
class Candidate:
    trace: TraceRecord
    reason: str  # "worst" | "novel"
    mean_score: float
    novelty: float  # 1 - max word-set Jaccard similarity to an existing case input
    scores: dict[str, float]


def input_text(value: Any) -> str:
    """All string leaves of an input, joined: what a person would read."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return " ".join(input_text(v) for v in value.values())
    if isinstance(value, list):
        return " ".join(input_text(v) for v in value)
    return ""


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def novelty(text: str, existing: Sequence[frozenset[str]]) -> float:
    words = _words(text)
    if not words or not existing:
        return 1.0
    return 1.0 - max(len(words & e) / len(words | e) for e in existing)


def select_candidates(
    records: Iterable[TraceRecord],
    scores: Iterable[ItemScore],
    existing_inputs: Iterable[Any],
    *,
    limit: int = 20,
    min_novelty: float = 0.5,
) -> list[Candidate]:
    """Up to ``limit``: the worst half first (mean < 1), then the most novel (≥ min_novelty)."""
    by_trace: dict[str, dict[str, float]] = defaultdict(dict)
    for s in scores:
        if s.value is not None:
            by_trace[s.item_id][s.evaluator] = s.value
    existing = [_words(input_text(i)) for i in existing_inputs]
    rows = []
    for record in records:
        values = by_trace.get(record.trace_id, {})
        mean = sum(values.values()) / len(values) if values else 1.0
        rows.append((record, mean, novelty(input_text(record.input), existing), values))
    worst = sorted((r for r in rows if r[1] < 1.0), key=lambda r: (r[1], r[0].trace_id))
    chosen = [Candidate(r[0], "worst", r[1], r[2], r[3]) for r in worst[: (limit + 1) // 2]]
    taken = {c.trace.trace_id for c in chosen}
    novel = sorted(
        (r for r in rows if r[2] >= min_novelty and r[0].trace_id not in taken),
        key=lambda r: (-r[2], r[0].trace_id),
    )
    chosen += [Candidate(r[0], "novel", r[1], r[2], r[3]) for r in novel[: limit - len(chosen)]]
    return chosen


def candidate_id(suite: str, trace_id: str) -> str:
    return f"cand-{suite}-{hashlib.sha256(trace_id.encode()).hexdigest()[:10]}"


def candidate_case(suite: str, candidate: Candidate) -> dict[str, Any]:
    trace = candidate.trace
    feedback = trace.metadata.get("user_feedback")
    corrected = feedback.get("corrected_items") if isinstance(feedback, dict) else None
    note = (
        "expected output taken from the user's correction: check it"
        if corrected is not None
        else "fill in expected_output and a real category, then move into the dataset"
    )
    return {
        "id": candidate_id(suite, trace.trace_id),
        "input": trace.input,
        "expected_output": {"expected_items": corrected} if corrected is not None else None,
        "metadata": {
            "category": "unreviewed",
            "difficulty": "medium",
            "tier": "full",
            "source_trace_id": trace.trace_id,
            "source_time": trace.start_time.isoformat(),
            "reason": candidate.reason,
            "mean_score": round(candidate.mean_score, 4),
            "novelty": round(candidate.novelty, 3),
            "scores": {k: round(v, 4) for k, v in sorted(candidate.scores.items())},
            "observed_output": trace.output,
            "user_feedback": feedback,
            "review_note": note,
        },
    }


def write_review_file(path: Path, suite: str, candidates: Sequence[Candidate]) -> Path:
    """Atomically (temp file + rename) write the candidates as a YAML list of cases."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = (
        f"# Candidate golden cases for {suite}, from sampled production traces.\n"
        "# Review each one before promoting it into the dataset.\n"
    )
    body = yaml.safe_dump(
        [candidate_case(suite, c) for c in candidates], sort_keys=False, allow_unicode=True
    )
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(header + body)
    os.replace(tmp, path)
    return path
