"""Policy pack `cost-tags` (rules in `rules.py`)."""
