"""`vlen-utf8` and `vlen-bytes`: variable-length strings and bytes (v3 codec extensions).

Both store a little-endian uint32 item count, then each item as a uint32 length
and its bytes, in C order; numcodecs' VLenUTF8 / VLenBytes implement exactly that.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numcodecs
import numpy as np
from numcodecs.abc import Codec as Numcodec

from aiozarr.codecs.base import ArrayToBytesCodec, ChunkSpec
from aiozarr.errors import CodecError, MetadataError


class _VlenCodec(ArrayToBytesCodec):
    _impl: ClassVar[Numcodec]

    def configuration(self) -> dict[str, Any]:
        return {}

    def validate(self, spec: ChunkSpec) -> None:
        if spec.dtype.kind not in "OT":
            raise MetadataError(
                f"codec {self.name!r} encodes variable-length data types, not {spec.dtype}"
            )

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> bytes:
        items = np.asarray(array, dtype=object).reshape(-1)
        if not items.flags.writeable:
            items = items.copy()  # numcodecs' VLenBytes needs a writable buffer
        try:
            return bytes(self._impl.encode(items))
        except (TypeError, ValueError) as error:
            raise CodecError(f"codec {self.name!r}: cannot encode: {error}") from error

    def decode(self, data: Any, spec: ChunkSpec) -> np.ndarray:
        view = memoryview(data).cast("B")
        check_item_count(self.name, view, math.prod(spec.shape))
        try:
            items = self._impl.decode(view)
        except (TypeError, ValueError, RuntimeError, UnicodeDecodeError) as error:
            raise CodecError(f"codec {self.name!r}: corrupt data: {error}") from error
        count = math.prod(spec.shape)
        if items.size != count:
            raise CodecError(
                f"codec {self.name!r}: chunk holds {items.size} items, expected {count}"
            )
        return items.reshape(spec.shape).astype(spec.dtype, copy=False)


def check_item_count(name: str, data: memoryview, count: int) -> None:
    """Refuse variable-length data whose header records another item count than `count`,
    before numcodecs allocates an array of as many items as the header says."""
    if data.nbytes >= 4 and (recorded := int.from_bytes(data[:4], "little")) != count:
        raise CodecError(f"codec {name!r}: chunk holds {recorded} items, expected {count}")


class VlenUtf8Codec(_VlenCodec):
    """Variable-length UTF-8 strings (object or numpy StringDType arrays)."""

    name = "vlen-utf8"
    _impl = numcodecs.VLenUTF8()


class VlenBytesCodec(_VlenCodec):
    """Variable-length byte strings (object arrays of bytes)."""

    name = "vlen-bytes"
    _impl = numcodecs.VLenBytes()
