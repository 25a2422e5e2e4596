"""Helpers for testing aiozarr and stores built on it (they import pytest)."""
