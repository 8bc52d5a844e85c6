"""Alembic's environment for the results store: the migrations run on the connection
``migrate.upgrade`` holds, inside its transaction and under its lock."""

from alembic import context

from eval_pipeline.core.store.migrate import VERSION_TABLE
from eval_pipeline.core.store.tables import metadata

context.configure(
    connection=context.config.attributes["connection"],
    target_metadata=metadata,
    version_table=VERSION_TABLE,
)
with context.begin_transaction():
    context.run_migrations()
