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
from types import ModuleType
from typing import TYPE_CHECKING

from eval_pipeline.core.scoring.rows import PairedRow
from eval_pipeline.core.store.results_store import ResultsStore

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from eval_pipeline.core.evaluation import EvalResult

Z95 = 1.96


def _pyplot() -> ModuleType:
    """matplotlib's pyplot on the non-interactive backend, imported when a chart is drawn:
    it costs ~0.5 s, which every process that loads the definitions would pay otherwise."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


@dataclass(frozen=True)
class TrendPoint:
    when: datetime
    mean: float
    se: float
    prompt_version: str


def trend_chart(points: Sequence[TrendPoint], metric: str, path: Path) -> Path:
    """Metric per full run with 95% CI bars; dashed lines where the evaluated prompt version
    changed (with nightly runs of production: where the production version moved)."""
    fig, ax = _pyplot().subplots(figsize=(7, 3.2), dpi=90)
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


def category_delta_chart(rows: Sequence[PairedRow], metric: str, path: Path) -> Path:
    """Candidate − baseline per category, with the confidence interval of each delta; a
    category too small to test has no interval and a hatched bar."""
    fig, ax = _pyplot().subplots(figsize=(7, 0.35 * len(rows) + 1.2), dpi=90)
    names = [f"{r.category} (n={r.n})" for r in rows]
    deltas = [r.delta for r in rows]
    errors = [
        [r.delta - r.ci_low if r.ci_low is not None else 0.0 for r in rows],
        [r.ci_high - r.delta if r.ci_high is not None else 0.0 for r in rows],
    ]
    colours = ["#c0392b" if r.decision == "fail" else "#7f8c8d" for r in rows]
    bars = ax.barh(names, deltas, xerr=errors, color=colours, capsize=3)
    for bar, row in zip(bars, rows, strict=True):
        if row.ci_low is None:
            bar.set_hatch("//")
            bar.set_alpha(0.5)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel(f"Δ {metric} (candidate − baseline)")
    ax.set_title("Per-category change; red: significantly worse; hatched: too few to test")
    ax.invert_yaxis()
    ax.grid(axis="x", alpha=0.3)
    return _save(fig, path)


def _save(fig: Figure, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, format="png")
    _pyplot().close(fig)
    return path


def markdown_image(path: Path, alt: str) -> str:
    """An inline image (data URI) for Markdown that cannot reference local files."""
    data = base64.b64encode(Path(path).read_bytes()).decode()
    return f"![{alt}](data:image/png;base64,{data})"


# Dagster shows Markdown metadata inline only under 1,000 characters (an image's data URI is
# always longer and sits behind "[Show Markdown]"), so each chart also exists as a Markdown
# table with text bars, trimmed to fit.
INLINE_LIMIT = 1000
_EIGHTHS = " ▏▎▍▌▋▊▉"


def text_bar(fraction: float, width: int = 10) -> str:
    """A bar of `fraction` (0..1) of `width` characters, in eighths of a character."""
    eighths = round(max(0.0, min(1.0, fraction)) * width * 8)
    full, rest = divmod(eighths, 8)
    return "█" * full + (_EIGHTHS[rest] if rest else "")


def trend_markdown(points: Sequence[TrendPoint], metric: str) -> str:
    """The latest full runs, newest last: when, version, mean ± 95% CI, a bar."""
    header = f"| run | version | {metric} | |\n|---|---|---:|---|\n"
    rows = [
        f"| {p.when:%m-%d %H:%M} | {p.prompt_version} | {p.mean:.3f} ± {Z95 * p.se:.3f} "
        f"| {text_bar(p.mean)} |\n"
        for p in points
    ]
    return fit_inline(header, rows, keep="last")


def delta_markdown(rows: Sequence[PairedRow], metric: str) -> str:
    """Candidate − baseline per category: Δ, a bar scaled to the largest change, and the
    decision (worse / too few to test)."""
    header = f"| category | n | Δ {metric} | | |\n|---|---:|---:|---|---|\n"
    largest = max((abs(r.delta) for r in rows), default=0.0) or 1.0
    lines = []
    for r in rows:
        sign = "▼" if r.delta < 0 else "▲" if r.delta > 0 else "·"
        note = (
            "too few to test" if r.ci_low is None else ("**worse**" if r.decision == "fail" else "")
        )
        bar = text_bar(abs(r.delta) / largest, width=8)
        lines.append(f"| {r.category} | {r.n} | {r.delta:+.3f} | {sign}{bar} | {note} |\n")
    return fit_inline(header, lines, keep="first")


def fit_inline(header: str, rows: list[str], keep: str, more: str = "in the chart") -> str:
    """Drop rows (the first ones with keep="last", else the last ones) until the Markdown
    table fits Dagster's inline limit; say how many were left out."""
    rows = list(rows)
    dropped = 0
    while rows and len(header) + sum(map(len, rows)) + 40 > INLINE_LIMIT:
        rows.pop(0 if keep == "last" else -1)
        dropped += 1
    note = f"\n({dropped} more {more})" if dropped else ""
    return (header + "".join(rows)).rstrip("\n") + note


@dataclass
class RunCharts:
    """A run's pictures: the primary metric's trend over the suite's full runs, and the
    gate's per-category change; each as its data and, when drawn, its PNG file."""

    metric: str
    trend: list[TrendPoint]
    categories: list[PairedRow]
    files: dict[str, Path]


def run_charts(store: ResultsStore, result: EvalResult, stem: Path) -> RunCharts:
    """The charts of ``result`` drawn next to ``stem`` (``<stem>-trend.png``,
    ``<stem>-categories.png``): what the CLI's report and Dagster's metadata both show."""
    metric = result.thresholds.primary_metric
    history = store.metric_history(result.run.suite, metric)
    points = [TrendPoint(r.started_at, m, se, r.prompt_version) for r, m, se in history]
    files: dict[str, Path] = {}
    if points:
        files["trend"] = trend_chart(points, metric, Path(f"{stem}-trend.png"))
    rows: list[PairedRow] = []
    gate = result.gate
    if gate is not None and gate.comparable:
        deltas = next(c.rows for c in gate.checks if c.name == "category_deltas")
        rows = [r for r in deltas if isinstance(r, PairedRow)]  # (all of them)
        path = Path(f"{stem}-categories.png")
        files["per-category delta"] = category_delta_chart(rows, metric, path)
    return RunCharts(metric, points, rows, files)
