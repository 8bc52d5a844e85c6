"""Pictures for people: the primary metric per night, and per-category deltas.

PNG files drawn with matplotlib's non-interactive backend (no display needed).
"""

from __future__ import annotations

import base64
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

Z95 = 1.96


@dataclass(frozen=True)
class TrendPoint:
    when: datetime
    mean: float
    se: float
    prompt_version: str


def trend_chart(points: Sequence[TrendPoint], metric: str, path: Path) -> Path:
    """Metric per full run with 95% CI bars; dashed lines where the evaluated prompt version
    changed (with nightly runs of production: where the production version moved)."""
    fig, ax = plt.subplots(figsize=(7, 3.2), dpi=90)
    xs = list(range(len(points)))
    ax.errorbar(
        xs,
        [p.mean for p in points],
        yerr=[Z95 * p.se for p in points],
        fmt="o-",
        capsize=3,
        color="#1f5fa8",
    )
    for i, (before, after) in enumerate(itertools.pairwise(points), start=1):
        if after.prompt_version != before.prompt_version:
            ax.axvline(i - 0.5, color="#c0392b", linestyle="--", linewidth=1)
            ax.annotate(
                after.prompt_version,
                (i - 0.5, 1.0),
                color="#c0392b",
                fontsize=8,
                xytext=(3, -10),
                textcoords="offset points",
            )
    ax.set_xticks(
        xs, [p.when.strftime("%m-%d %H:%M") for p in points], rotation=30, ha="right", fontsize=7
    )
    ax.set_xlim(-0.5, max(len(points) - 0.5, 0.5))
    low = min((p.mean - Z95 * p.se for p in points), default=0.0)
    ax.set_ylim(max(0.0, low - 0.05), 1.02)
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} per full run (95% CI); dashed: prompt version changed", fontsize=10)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def category_delta_chart(rows: Sequence[dict], metric: str, path: Path) -> Path:
    """Candidate − baseline per category, with the confidence interval of each delta; a
    category too small to test has no interval and a hatched bar."""
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(rows) + 1.2), dpi=90)
    names = [f"{r['category']} (n={r['n']})" for r in rows]
    deltas = [r["delta"] for r in rows]
    errors = [
        [r["delta"] - r["ci_low"] if r["ci_low"] is not None else 0.0 for r in rows],
        [r["ci_high"] - r["delta"] if r["ci_high"] is not None else 0.0 for r in rows],
    ]
    colours = ["#c0392b" if r["decision"] == "fail" else "#7f8c8d" for r in rows]
    bars = ax.barh(names, deltas, xerr=errors, color=colours, capsize=3)
    for bar, row in zip(bars, rows, strict=True):
        if row["ci_low"] is None:
            bar.set_hatch("//")
            bar.set_alpha(0.5)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel(f"Δ {metric} (candidate − baseline)")
    ax.set_title("Per-category change; red: significantly worse; hatched: too few to test")
    ax.invert_yaxis()
    ax.grid(axis="x", alpha=0.3)
    return _save(fig, path)


def _save(fig, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)
    return path


def markdown_image(path: Path, alt: str) -> str:
    """An inline image (data URI) for Markdown that cannot reference local files."""
    data = base64.b64encode(Path(path).read_bytes()).decode()
    return f"![{alt}](data:image/png;base64,{data})"
