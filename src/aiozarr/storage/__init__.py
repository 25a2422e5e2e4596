"""Stores: where Zarr keys live (local disk, memory, object stores) and wrappers."""

from aiozarr.storage.base import Buffer, ByteRange, RangeRequest, Store

__all__ = ["Buffer", "ByteRange", "RangeRequest", "Store"]
