"""Cross-field rules of an estate, run by the loader after the schema: every problem at once, one line each."""
