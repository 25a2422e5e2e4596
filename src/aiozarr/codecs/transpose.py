"""`transpose`: permute the chunk's dimensions before it is serialized (v3 core spec)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from aiozarr.codecs.base import ArrayToArrayCodec, ChunkSpec
from aiozarr.errors import MetadataError


class TransposeCodec(ArrayToArrayCodec):
    """Encode `a` as `a.transpose(order)`; decode with the inverse permutation."""

    name = "transpose"
    decodes_parts = True  # a block of the chunk is a block of the transposed chunk

    def __init__(self, order: Sequence[int] | str) -> None:
        self._named = order if order in ("C", "F") else None  # a pre-1.0 spelling
        if self._named is not None:
            self.order: tuple[int, ...] = ()  # known once `validate` sees the chunk's rank
            self._inverse: tuple[int, ...] = ()
            return
        if isinstance(order, str) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in order
        ):
            raise MetadataError(f"field 'order' must be a list of integers, got {order!r}")
        if sorted(order) != list(range(len(order))):
            raise MetadataError(
                f"field 'order' must be a permutation of 0..{len(order) - 1}, got {list(order)}"
            )
        self.order = tuple(order)
        self._inverse = tuple(int(i) for i in np.argsort(self.order))

    @classmethod
    def lenient_config(cls, config: Mapping[str, Any]) -> tuple[Mapping[str, Any], list[str]]:
        """Accept `order` "C" / "F" (v3 drafts before 1.0; zarrita): identity / reversed axes."""
        order = config.get("order")
        if order in ("C", "F"):
            what = "the axes in order" if order == "C" else "the axes reversed"
            return config, [f"field 'order' is {order!r}, read as {what}"]
        return config, []

    def configuration(self) -> dict[str, Any]:
        if self._named is not None and not self.order:
            return {"order": self._named}
        return {"order": list(self.order)}

    def validate(self, spec: ChunkSpec) -> None:
        if self._named is not None:  # the permutation "C" / "F" stands for, at this rank
            ndim = len(spec.shape)
            self.order = tuple(range(ndim)) if self._named == "C" else tuple(range(ndim))[::-1]
            self._inverse = tuple(int(i) for i in np.argsort(self.order))
        if len(self.order) != len(spec.shape):
            raise MetadataError(
                f"codec 'transpose': field 'order' {list(self.order)} has {len(self.order)} "
                f"entries but the chunk has {len(spec.shape)} dimensions"
            )

    def axis_order(self, ndim: int) -> tuple[int, ...]:
        """The permutation: a transpose only reorders axes."""
        if self._named is not None and len(self.order) != ndim:
            return tuple(range(ndim)) if self._named == "C" else tuple(range(ndim))[::-1]
        return self.order

    def resolve(self, spec: ChunkSpec) -> ChunkSpec:
        return ChunkSpec(tuple(spec.shape[i] for i in self.order), spec.dtype, spec.fill_value)

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return array.transpose(self.order)

    def decode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return array.transpose(self._inverse)
