"""Policy pack `tenancy` (rules in `rules.py`)."""
