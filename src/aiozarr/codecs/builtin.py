"""The built-in codecs, registered by name when `aiozarr.codecs` is imported.

Codec modules define their classes and know nothing of the registry; this table is
the one place that lists them. It sits above both, so the registry imports no codec
(and the sharding codec, which builds its inner codecs through the registry, closes
no loop).
"""

from __future__ import annotations

from aiozarr.codecs.base import Codec
from aiozarr.codecs.blosc import BloscCodec
from aiozarr.codecs.bytes import BytesCodec
from aiozarr.codecs.cast_value import CastValueCodec
from aiozarr.codecs.crc32c import Crc32cCodec
from aiozarr.codecs.gzip import GzipCodec
from aiozarr.codecs.registry import register_codec
from aiozarr.codecs.scale_offset import ScaleOffsetCodec
from aiozarr.codecs.sharding import ShardingCodec
from aiozarr.codecs.transpose import TransposeCodec
from aiozarr.codecs.vlen import VlenBytesCodec, VlenUtf8Codec
from aiozarr.codecs.zstd import ZstdCodec

#: Every built-in codec class, registered under its `name` in this order.
BUILTIN_CODECS: tuple[type[Codec], ...] = (
    BloscCodec,
    BytesCodec,
    CastValueCodec,
    Crc32cCodec,
    GzipCodec,
    ScaleOffsetCodec,
    TransposeCodec,
    VlenUtf8Codec,
    VlenBytesCodec,
    ZstdCodec,
    ShardingCodec,
)

for _codec in BUILTIN_CODECS:
    register_codec(_codec)
