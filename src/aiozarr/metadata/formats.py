"""The metadata formats aiozarr reads, in the order they are asked.

Detection runs stage by stage (`format_protocol.FIRST`, `SECOND`, `LAST`), and within a stage in
this order: the first format to return a node has it. `format_of` asks `owns` in this
order too, so a format that refines another (the draft's model is v2's) comes before it.
A new format is a module with a `Format` and one line here.
"""

from __future__ import annotations

from aiozarr.errors import MetadataError
from aiozarr.metadata import model, v1, v2, v3, v3draft
from aiozarr.metadata.format_protocol import Format
from aiozarr.metadata.model import Node

FORMATS: tuple[Format, ...] = (
    v1.FORMAT,
    v3draft.FORMAT,
    v3.FORMAT,
    v2.FORMAT,
)


def format_of(meta: Node) -> Format:
    """The format `meta` was read in, or is to be written in."""
    for fmt in FORMATS:
        if fmt.owns(meta):
            return fmt
    raise MetadataError(f"no metadata format reads or writes Zarr format {meta.zarr_format}")


def label(meta: Node) -> str:
    """The name of the format `meta` was read in, for display: "Zarr v3", "Zarr v2", the
    2020 draft's own (its `zarr_format` says 2, as zarr-python 2 reported it)."""
    return format_of(meta).name


def numbered(zarr_format: int | None) -> Format | None:
    """The format `zarr_format=` asks for (None when no format has that number)."""
    return next((fmt for fmt in FORMATS if fmt.zarr_format == zarr_format), None)


def writable() -> tuple[Format, ...]:
    """The formats metadata is written in."""
    return tuple(fmt for fmt in FORMATS if fmt.writable)


model.use_documents(lambda meta: format_of(meta).to_dict(meta))
