"""Policy pack `gpu-guardrails` (rules in `rules.py`)."""
