"""Array and group metadata: the format-independent model and its documents per format."""

from aiozarr.metadata import formats
from aiozarr.metadata.model import ArrayMetadata, ChunkKeyEncoding, CodecMetadata, GroupMetadata
from aiozarr.metadata.v2 import (
    attrs_to_json,
    parse_zarray,
    parse_zgroup,
    zarray_to_json,
    zgroup_to_json,
)
from aiozarr.metadata.v3 import array_to_json, group_to_json, parse_array, parse_group, parse_node

__all__ = [
    "ArrayMetadata",
    "ChunkKeyEncoding",
    "CodecMetadata",
    "GroupMetadata",
    "array_to_json",
    "attrs_to_json",
    "formats",
    "group_to_json",
    "parse_array",
    "parse_group",
    "parse_node",
    "parse_zarray",
    "parse_zgroup",
    "zarray_to_json",
    "zgroup_to_json",
]
