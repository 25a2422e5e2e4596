"""Stores: where Zarr keys live (local disk, memory, object stores, zip) and wrappers."""

from aiozarr.storage.base import Buffer, ByteRange, RangeRequest, Store
from aiozarr.storage.counting import CountingStore
from aiozarr.storage.credentials import EnvironmentCredentials
from aiozarr.storage.local import LocalStore
from aiozarr.storage.memory import MemoryStore
from aiozarr.storage.object_store import ObjectStore
from aiozarr.storage.url import from_url
from aiozarr.storage.zip import ZipStore

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
