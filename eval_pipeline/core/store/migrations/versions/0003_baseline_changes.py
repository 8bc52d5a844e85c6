"""Baselines a team manages: why a run may never be a baseline (``runs.not_baseline``,
decided when it settled: init's placeholder cases, every item failed in the agent), and
the history of what the team decided (``baseline_changes``: runs retired and restored,
a suite's baseline pinned and unpinned).

Revision ID: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    if "not_baseline" not in {c["name"] for c in inspector.get_columns("runs")}:
        op.add_column("runs", sa.Column("not_baseline", sa.Text))
    op.create_table(
        "baseline_changes",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("suite", sa.String(100), nullable=False),
        sa.Column("run_id", sa.String(200), nullable=False),
        sa.Column("action", sa.String(20), nullable=False),
        sa.Column("label", sa.String(100)),
        sa.Column("by", sa.String(200), nullable=False),
        sa.Column("why", sa.Text, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        if_not_exists=True,
    )  # fmt: skip
    op.create_index("ix_baseline_changes_suite", "baseline_changes", ["suite"],
                    if_not_exists=True)  # fmt: skip


def downgrade() -> None:
    op.drop_index("ix_baseline_changes_suite", "baseline_changes")
    op.drop_table("baseline_changes")
    op.drop_column("runs", "not_baseline")
