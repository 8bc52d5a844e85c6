"""One module per migration, oldest first (``down_revision`` links them)."""
