"""`python -m aiozarr`: the command line."""

from aiozarr.cli import run

run()
