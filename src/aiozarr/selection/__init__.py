"""Selections: what a numpy-style selection means on a chunk grid (pure; no I/O)."""
