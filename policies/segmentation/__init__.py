"""Policy pack `segmentation` (rules in `rules.py`)."""
