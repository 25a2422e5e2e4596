"""How arrays and groups show themselves in a terminal and in a notebook (no I/O)."""

from __future__ import annotations

import html

from aiozarr.array import AsyncArray
from aiozarr.group import AsyncGroup
from aiozarr.sizes import human_bytes


def array_rows(array: AsyncArray) -> list[tuple[str, str]]:
    """The facts shown for an array, as (label, value) pairs."""
    meta = array.metadata
    chunks, shards = array.describe_grid()
    if meta.zarr_format == 3:
        codecs = " → ".join(c.name for c in meta.codecs)
        if array.is_sharded:
            inner = meta.codecs[0].configuration.get("codecs", [])
            codecs += " [" + " → ".join(c["name"] for c in inner) + "]"
    else:
        parts = [f["id"] for f in meta.filters or ()]
        parts += [meta.compressor["id"]] if meta.compressor else []
        codecs = " → ".join(parts) or "none"
    rows = [
        ("Name", array.name),
        ("Format", f"Zarr v{meta.zarr_format}"),
        ("Shape", str(array.shape)),
        ("Data type", str(array.dtype)),
        ("Chunks", chunks),
        ("Shards", shards if shards != "None" else "—"),
        ("Codecs", codecs),
        ("Fill value", repr(meta.fill_value)),
        ("Size (decoded)", human_bytes(array.nbytes)),
        ("Store", repr(array.store)),
    ]
    if meta.dimension_names:
        rows.insert(3, ("Dimensions", ", ".join(str(n) for n in meta.dimension_names)))
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
