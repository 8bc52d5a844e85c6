"""The inline (text) charts: they must stay under Dagster's inline limit and keep the rows
that matter when they have to drop some."""

from datetime import datetime, timedelta

from eval_pipeline.core.reports.charts import (
    INLINE_LIMIT,
    TrendPoint,
    delta_markdown,
    text_bar,
    trend_markdown,
)
from eval_pipeline.core.scoring.rows import PairedRow


def test_text_bar_is_proportional_in_eighths():
    assert text_bar(1.0) == "█" * 10
    assert text_bar(0.0) == ""
    assert text_bar(0.55) == "█████▌"  # 5.5 of 10 characters
    assert text_bar(2.0) == text_bar(1.0) and text_bar(-1.0) == ""


def test_a_long_trend_keeps_the_newest_runs_and_fits_inline():
    start = datetime(2026, 11, 1)
    points = [TrendPoint(start + timedelta(days=i), 0.5 + i / 100, 0.01, f"v{1 + i // 10}")
              for i in range(40)]  # fmt: skip
    text = trend_markdown(points, "order_correctness")
    assert len(text) < INLINE_LIMIT
    assert "| 12-10 00:00 | v4 | 0.890 ± 0.020 |" in text  # the newest run is kept
    assert "11-01" not in text  # the oldest are dropped, and the table says so
    kept = text.count("\n| ")  # rows after the header
    assert text.endswith(f"({40 - kept} more in the chart)")


def test_category_change_marks_worse_and_untested_rows():
    def row(category, n, delta, ci, decision):
        return PairedRow(metric="order_correctness", category=category, n=n, delta=delta,
                         ci_low=ci and ci[0], ci_high=ci and ci[1], p_value=None, mde=None,
                         decision=decision, cases_needed=None, note="")  # fmt: skip

    rows = [row("simple", 12, -0.5, (-0.7, -0.3), "fail"), row("combo", 3, -0.25, None, "warn"),
            row("drinks", 8, 0.0, (-0.1, 0.1), "pass")]  # fmt: skip
    text = delta_markdown(rows, "order_correctness")
    lines = text.splitlines()
    assert lines[2] == "| simple | 12 | -0.500 | ▼████████ | **worse** |"
    assert lines[3] == "| combo | 3 | -0.250 | ▼████ | too few to test |"
    assert lines[4] == "| drinks | 8 | +0.000 | · |  |"
