"""How arrays and groups show themselves in a terminal and in a notebook (no I/O)."""

from __future__ import annotations

import html

from aiozarr.nodes.array import AsyncArray
from aiozarr.nodes.group import AsyncGroup


def array_rows(array: AsyncArray) -> list[tuple[str, str]]:
    """The facts shown for an array, as (label, value) pairs: its description's rows,
    the ones `arr.info` and `aiozarr info` show."""
    return array.description.rows()


def array_html(array: AsyncArray) -> str:
    """An HTML table for notebooks."""
    cells = "".join(
        f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
        f"<td style='text-align:left'>{html.escape(v)}</td></tr>"
        for k, v in array_rows(array)
    )
    return f"<table><caption>aiozarr.Array</caption>{cells}</table>"


def group_html(group: AsyncGroup, tree: str) -> str:
    """The group's hierarchy (`tree` text) as preformatted HTML."""
    return (
        f"<div><b>aiozarr.Group</b> {html.escape(group.name)} "
        f"<small>{html.escape(repr(group.store))}</small>"
        f"<pre>{html.escape(tree)}</pre></div>"
    )
