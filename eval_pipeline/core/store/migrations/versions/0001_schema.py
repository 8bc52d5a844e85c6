"""The results store's schema as it was when migrations began: every table, created only
where it is missing (a store written before migrations keeps its tables and rows; the
next migration adds the columns an older one lacks).

Revision ID: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("run_id", sa.String(200), primary_key=True),
        sa.Column("suite", sa.String(100), nullable=False),
        sa.Column("prompt_name", sa.String(200), nullable=False),
        sa.Column("prompt_version", sa.String(50), nullable=False),
        sa.Column("prompt_hash", sa.String(64), nullable=False),
        sa.Column("dataset_version", sa.String(64), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("tier", sa.String(20), nullable=False),
        sa.Column("repeats", sa.Integer, nullable=False),
        sa.Column("prompt_config", sa.JSON, nullable=False),
        sa.Column("model_params", sa.JSON, nullable=False),
        sa.Column("agent_version", sa.String(100), nullable=False),
        sa.Column("evaluator_versions", sa.JSON, nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
        sa.Column("dagster_run_id", sa.String(100)),
        sa.Column("error", sa.Text),
        sa.Column("notes", sa.JSON),
        sa.Column("baseline_run_id", sa.String(200)),
        sa.Column("options", sa.JSON),
        sa.Column("gate_note", sa.Text),
        sa.Column("agent_versioned", sa.Boolean),
        sa.Column("code_commit", sa.String(80)),
        sa.Column("stopped", sa.Text),
        sa.Column("owner", sa.String(300)),
        if_not_exists=True,
    )  # fmt: skip
    op.create_table(
        "item_outputs",
        sa.Column("run_id", sa.String(200), sa.ForeignKey("runs.run_id"), primary_key=True),
        sa.Column("item_id", sa.String(200), primary_key=True),
        sa.Column("repeat", sa.Integer, primary_key=True),
        sa.Column("output", sa.JSON),
        sa.Column("error", sa.Text),
        sa.Column("latency_ms", sa.Float, nullable=False),
        sa.Column("input_tokens", sa.Integer, nullable=False),
        sa.Column("output_tokens", sa.Integer, nullable=False),
        sa.Column("cost_usd", sa.Float, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("source_run_id", sa.String(200)),
        sa.Column("error_kind", sa.String(100)),
        sa.Column("usage", sa.JSON),
        sa.Column("unpriced_models", sa.JSON),
        sa.Column("fault", sa.String(20)),
        if_not_exists=True,
    )  # fmt: skip
    op.create_table(
        "item_scores",
        sa.Column("run_id", sa.String(200), sa.ForeignKey("runs.run_id"), primary_key=True),
        sa.Column("item_id", sa.String(200), primary_key=True),
        sa.Column("repeat", sa.Integer, primary_key=True),
        sa.Column("evaluator", sa.String(200), primary_key=True),
        sa.Column("value", sa.Float),
        sa.Column("comment", sa.Text),
        sa.Column("metadata", sa.JSON),
        sa.Column("error_kind", sa.String(100)),
        sa.Column("data_type", sa.String(20)),
        sa.Column("category", sa.String(200)),
        if_not_exists=True,
    )  # fmt: skip
    op.create_table(
        "summaries",
        sa.Column("run_id", sa.String(200), sa.ForeignKey("runs.run_id"), primary_key=True),
        sa.Column("summary", sa.JSON, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        if_not_exists=True,
    )  # fmt: skip
    op.create_table(
        "verdicts",
        sa.Column("run_id", sa.String(200), sa.ForeignKey("runs.run_id"), primary_key=True),
        sa.Column("verdict", sa.String(20), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("metric", sa.String(200)),
        sa.Column("delta", sa.Float),
        sa.Column("ci_low", sa.Float),
        sa.Column("ci_high", sa.Float),
        sa.Column("baseline_run_id", sa.String(200)),
        sa.Column("decided_after", sa.Text),
        if_not_exists=True,
    )  # fmt: skip
    op.create_table(
        "outbox",
        sa.Column("id", sa.String(200), primary_key=True),
        sa.Column("kind", sa.String(50), nullable=False),
        sa.Column("payload", sa.JSON, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("last_error", sa.Text),
        sa.Column("queued_at", sa.DateTime(timezone=True), nullable=False),
        if_not_exists=True,
    )  # fmt: skip
    op.create_table(
        "item_memo",
        sa.Column("memo_key", sa.String(64), primary_key=True),
        sa.Column("suite", sa.String(100), nullable=False),
        sa.Column("item_id", sa.String(200), nullable=False),
        sa.Column("repeat", sa.Integer, nullable=False),
        sa.Column("output", sa.JSON, nullable=False),
        sa.Column("latency_ms", sa.Float, nullable=False),
        sa.Column("input_tokens", sa.Integer, nullable=False),
        sa.Column("output_tokens", sa.Integer, nullable=False),
        sa.Column("cost_usd", sa.Float, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("usage", sa.JSON),
        sa.Column("run_id", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        if_not_exists=True,
    )  # fmt: skip
    op.create_index("ix_runs_suite_version_status", "runs",
                    ["suite", "prompt_version", "status"], if_not_exists=True)  # fmt: skip


def downgrade() -> None:
    for table in ("item_memo", "outbox", "verdicts", "summaries", "item_scores",
                  "item_outputs", "runs"):  # fmt: skip
        op.drop_table(table)
