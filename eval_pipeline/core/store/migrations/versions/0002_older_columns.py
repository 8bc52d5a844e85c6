"""The columns a store written by an older release lacks, added in place (they are all
nullable: its rows keep NULL there, read as each column's default). This was the store's
hand-written ALTER TABLE, run on every open before there were migrations.

Revision ID: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"

ADDED = {  # the columns added to a table after its first release
    "runs": [
        sa.Column("notes", sa.JSON),
        sa.Column("baseline_run_id", sa.String(200)),
        sa.Column("options", sa.JSON),
        sa.Column("gate_note", sa.Text),
        sa.Column("agent_versioned", sa.Boolean),
        sa.Column("code_commit", sa.String(80)),
        sa.Column("stopped", sa.Text),
        sa.Column("owner", sa.String(300)),
    ],
    "item_outputs": [
        sa.Column("source_run_id", sa.String(200)),
        sa.Column("error_kind", sa.String(100)),
        sa.Column("usage", sa.JSON),
        sa.Column("unpriced_models", sa.JSON),
        sa.Column("fault", sa.String(20)),
    ],
    "item_scores": [
        sa.Column("metadata", sa.JSON),
        sa.Column("error_kind", sa.String(100)),
        sa.Column("data_type", sa.String(20)),
        sa.Column("category", sa.String(200)),
    ],
    "verdicts": [
        sa.Column("metric", sa.String(200)),
        sa.Column("delta", sa.Float),
        sa.Column("ci_low", sa.Float),
        sa.Column("ci_high", sa.Float),
        sa.Column("baseline_run_id", sa.String(200)),
        sa.Column("decided_after", sa.Text),
    ],
    "outbox": [sa.Column("last_error", sa.Text)],
    "item_memo": [sa.Column("usage", sa.JSON)],
}


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    for table, columns in ADDED.items():
        present = {c["name"] for c in inspector.get_columns(table)}
        for column in columns:
            if column.name not in present:  # SQLite has no ADD COLUMN IF NOT EXISTS
                op.add_column(table, column)


def downgrade() -> None:
    """Nothing to undo: the columns are part of the schema 0001 creates."""
