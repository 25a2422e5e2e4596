"""Whole-hierarchy tools: copy, migrate between formats, consolidate metadata."""
