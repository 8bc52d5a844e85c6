"""The results store's Alembic migrations, applied by ``core/store/migrate.py``."""
