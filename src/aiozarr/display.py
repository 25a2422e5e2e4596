"""How arrays and groups show themselves in a terminal and in a notebook (no I/O)."""

from __future__ import annotations

import html

from aiozarr.array import AsyncArray
from aiozarr.description import codecs_text
from aiozarr.group import AsyncGroup
from aiozarr.sizes import human_bytes


def array_rows(array: AsyncArray) -> list[tuple[str, str]]:
    """The facts shown for an array, as (label, value) pairs, from its description."""
    described = array.description
    chunks, shards = described.grid_text()
    rows = [
        ("Name", described.name),
        ("Format", f"Zarr v{described.zarr_format}"),
        ("Shape", str(described.shape)),
        ("Data type", described.dtype),
        ("Chunks", chunks),
        ("Shards", shards if described.shards is not None else "—"),
        ("Codecs", codecs_text(described.codecs)),
        ("Fill value", repr(described.fill_value)),
        ("Size (decoded)", human_bytes(described.decoded_bytes)),
        ("Store", described.store),
    ]
    if described.dimension_names:
        rows.insert(3, ("Dimensions", ", ".join(str(n) for n in described.dimension_names)))
    return rows


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
