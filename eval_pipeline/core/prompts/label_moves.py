"""Which evaluations a prompt-label change calls for (the sensor's logic, framework-free).

State is ``{suite: {label: version}}`` for the labels each suite watches. Comparing the
state the sensor saw last (its cursor) with the registry's current state gives the labels
that moved; each (suite, version) that a label moved to gets one evaluation request:
full tier if a full-tier label (``production``) moved there, else the smoke tier.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

LabelState = dict[str, dict[str, int]]
FULL_TIER_LABELS = ("production",)


@dataclass(frozen=True)
class WatchedPrompt:
    suite: str
    prompt_name: str
    labels: tuple[str, ...]


@dataclass(frozen=True)
class LabelMove:
    label: str
    old: int | None  # None: first seen (first tick, or a label that did not exist)
    new: int

    def __str__(self) -> str:
        return f"{self.label}: {'–' if self.old is None else f'v{self.old}'} → v{self.new}"


@dataclass(frozen=True)
class EvalRequest:
    suite: str
    prompt_name: str
    version: int
    tier: str
    moves: tuple[LabelMove, ...]
    run_key: str

    @property
    def partition_version(self) -> str:
        return f"v{self.version}"

    def tags(self) -> dict[str, str]:
        def versions(values: Sequence[int | None]) -> str:
            return ",".join("none" if v is None else f"v{v}" for v in values)

        return {
            "eval/trigger": "prompt_label_sensor",
            "eval/suite": self.suite,
            "eval/prompt": self.prompt_name,
            "eval/tier": self.tier,
            "eval/label": ",".join(m.label for m in self.moves),
            "eval/from_version": versions([m.old for m in self.moves]),
            "eval/to_version": f"v{self.version}",
        }


@dataclass
class SensorCursor:
    """What the sensor saw last; ``seq`` counts changes so run keys stay unique."""

    labels: LabelState = field(default_factory=dict)
    seq: int = 0

    def dumps(self) -> str:
        return json.dumps({"labels": self.labels, "seq": self.seq}, sort_keys=True)

    @classmethod
    def loads(cls, text: str | None) -> SensorCursor | None:
        """None for a first tick; an unreadable cursor is treated as a first tick too."""
        if not text:
            return None
        try:
            data = json.loads(text)
            labels = {
                str(s): {str(label): int(v) for label, v in by_label.items()}
                for s, by_label in data["labels"].items()
            }
            return cls(labels=labels, seq=int(data["seq"]))
        except (ValueError, KeyError, TypeError, AttributeError):
            return None


def current_state(
    watched: Sequence[WatchedPrompt], snapshot: Mapping[str, Mapping[str, int]]
) -> LabelState:
    """Project the registry snapshot ``{prompt: {label: version}}`` onto the suites."""
    state: LabelState = {}
    for w in watched:
        by_label = snapshot.get(w.prompt_name, {})
        state[w.suite] = {label: by_label[label] for label in w.labels if label in by_label}
    return state


def plan_requests(
    previous: SensorCursor | None,
    state: LabelState,
    watched: Sequence[WatchedPrompt],
    *,
    evaluated: Callable[[str, int, str], bool],
    full_tier_labels: Sequence[str] = FULL_TIER_LABELS,
) -> tuple[list[EvalRequest], SensorCursor]:
    """The requests for labels that moved, and the cursor to store after submitting them.

    First tick (``previous`` is None): nothing has "moved", so only versions that were never
    evaluated at the tier their label calls for (``evaluated(suite, version, tier)``) are
    requested. A label that disappears requests nothing.
    """
    prompts = {w.suite: w.prompt_name for w in watched}
    seen = previous.labels if previous else {}
    grouped: dict[tuple[str, int], list[LabelMove]] = {}
    for suite, by_label in sorted(state.items()):
        for label, version in sorted(by_label.items()):
            old = seen.get(suite, {}).get(label)
            if previous is not None and old == version:
                continue
            tier = "full" if label in full_tier_labels else "smoke"
            if previous is None and evaluated(suite, version, tier):
                continue
            grouped.setdefault((suite, version), []).append(LabelMove(label, old, version))
    changed = previous is None or state != previous.labels
    seq = (previous.seq if previous else 0) + (1 if changed else 0)
    requests = []
    for (suite, version), moves in sorted(grouped.items()):
        tier = "full" if any(m.label in full_tier_labels for m in moves) else "smoke"
        requests.append(
            EvalRequest(
                suite=suite,
                prompt_name=prompts[suite],
                version=version,
                tier=tier,
                moves=tuple(moves),
                run_key=f"prompt-label:{suite}:v{version}:{tier}:{seq}",
            )
        )
    return requests, SensorCursor(labels=state, seq=seq)
