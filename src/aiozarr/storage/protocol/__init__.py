"""The store protocol: `Store`, what the engine and the nodes see of any store.

`store.py` is the abstract store (the v3 store operations, all async) with the values
a read asks for and gets back; `wrapper.py` the base of stores that pass requests on;
`write_conditions.py` whether a store's write conditions can be trusted.
"""

from aiozarr.storage.protocol.store import (
    UNCHANGED,
    Answer,
    Buffer,
    ByteRange,
    Capabilities,
    RangeRequest,
    Store,
    TornReadError,
    Unchanged,
    Version,
    Versioned,
    check_key,
    check_size,
    dir_entries,
    lasting,
    read_as_batch,
    sized_version,
    stored_size,
)

__all__ = [
    "UNCHANGED",
    "Answer",
    "Buffer",
    "ByteRange",
    "Capabilities",
    "RangeRequest",
    "Store",
    "TornReadError",
    "Unchanged",
    "Version",
    "Versioned",
    "check_key",
    "check_size",
    "dir_entries",
    "lasting",
    "read_as_batch",
    "sized_version",
    "stored_size",
]
