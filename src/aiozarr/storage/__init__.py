"""Stores: where Zarr keys live (local disk, memory, object stores, zip) and wrappers."""

from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.credentials import EnvironmentCredentials
from aiozarr.storage.backends.local import LocalStore
from aiozarr.storage.backends.memory import MemoryStore
from aiozarr.storage.backends.object_store import ObjectStore
from aiozarr.storage.backends.zip import ZipStore
from aiozarr.storage.opening.url import from_url
from aiozarr.storage.protocol import Buffer, ByteRange, RangeRequest, Store

__all__ = [
    "Buffer",
    "ByteRange",
    "CountingStore",
    "EnvironmentCredentials",
    "LocalStore",
    "MemoryStore",
    "ObjectStore",
    "RangeRequest",
    "Store",
    "ZipStore",
    "from_url",
]
