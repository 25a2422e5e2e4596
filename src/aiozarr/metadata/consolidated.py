"""Consolidated metadata, whatever its format: a group's members' metadata by path.

Each format reads and writes its own form: v2's `.zmetadata` document (`v2.py`, whose
names are repeated here for the callers that write it), v3's `consolidated_metadata`
inside the group's `zarr.json` (`v3.py`).
"""

from __future__ import annotations

from collections.abc import Mapping

from aiozarr.metadata.model import ArrayMetadata, GroupMetadata
from aiozarr.metadata.v2 import ZMETADATA_KEY, parse_zmetadata, zmetadata_json

__all__ = ["ZMETADATA_KEY", "parse_zmetadata", "subtree", "zmetadata_json"]

Node = ArrayMetadata | GroupMetadata


def subtree(members: Mapping[str, Node], name: str) -> dict[str, Node]:
    """The members below the member `name`, with paths relative to it."""
    prefix = f"{name}/"
    return {p[len(prefix) :]: m for p, m in members.items() if p.startswith(prefix)}
