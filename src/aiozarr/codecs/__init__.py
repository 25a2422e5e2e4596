"""Codecs: turn chunks into bytes and back (pure; no store, loop or thread).

Importing this package registers every built-in codec.
"""

from aiozarr.codecs import builtin  # noqa: F401 (registers the built-in codecs)
from aiozarr.codecs.base import (
    ArrayToArrayCodec,
    ArrayToBytesCodec,
    BytesToBytesCodec,
    ChunkSpec,
    Codec,
    CodecRole,
)
from aiozarr.codecs.chain import CodecChain
from aiozarr.codecs.numcodecs_v2 import NumcodecsV2Codec
from aiozarr.codecs.registry import (
    get_codec,
    get_codec_class,
    register_codec,
    registered_codecs,
)
from aiozarr.codecs.sharding import ShardIndex, ShardingCodec, ShardLayout, layout_of

__all__ = [
    "ArrayToArrayCodec",
    "ArrayToBytesCodec",
    "BytesToBytesCodec",
    "ChunkSpec",
    "Codec",
    "CodecChain",
    "CodecRole",
    "NumcodecsV2Codec",
    "ShardIndex",
    "ShardLayout",
    "ShardingCodec",
    "get_codec",
    "get_codec_class",
    "layout_of",
    "register_codec",
    "registered_codecs",
]
