"""Leakage and duplicate reports across a project's split versions."""
