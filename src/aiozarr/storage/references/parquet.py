"""`ParquetRefs`: kerchunk references in the Parquet form (`kerchunk.df.refs_to_dataframe`).

The directory holds `.zmetadata`, `{"metadata": {key: JSON document}, "record_size": N}`
with every metadata key, and per array FIELD the files `FIELD/refs.R.parq` with columns
path, offset, size, raw. Row i of record R is the chunk numbered `R * N + i` in C order
over the chunk grid. A row with raw bytes is inline; one without a path is a missing
chunk; offset = size = 0 (or both null) means the whole object, and a row whose offset
or size alone is null is malformed: reading its key raises `MetadataError` naming the
record file and the row (the record's other rows read); a record file without the
path, offset or size column is malformed as a whole. Records are read when a key
needs them and kept in a small LRU. Nothing is sized by what `.zmetadata` declares: a
grid of 10**9 chunks is listed from the record files there are, a batch of records at a
time.

Record files are untrusted input, bounded before they are parsed: a file is read only
up to `_RECORD_FILE_OVERHEAD + record_size * _MAX_ROW_BYTES` bytes (else
`ValueTooLargeError`), and its Parquet footer must declare at most `record_size` rows
and at most that many bytes uncompressed (else `MetadataError`) before any row is read.
A store that cannot list (plain HTTP) is listed by reading every record the grid can
have, at most `_MAX_UNLISTED_RECORDS` per array: a larger grid is an `UnsupportedError`
before any record is requested.
"""

from __future__ import annotations

import json
import math
import re
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import anyio

from aiozarr.errors import MetadataError, UnsupportedError
from aiozarr.storage.protocol import Buffer, RangeRequest, Store

__all__ = ["ParquetRefs"]

_RECORD_FILE = re.compile(r"refs\.(\d+)\.parq")


class ParquetRefs:
    """The references of the Parquet directory `root` of `store` (`doc`: its
    `.zmetadata`; `where`: how to name it in errors)."""

    _CACHED_RECORDS = 64
    #: Bytes one row may take in a record file: a URL and an inlined small chunk.
    _MAX_ROW_BYTES = 16 * 1024
    #: Bytes of a record file that are not rows: footer, schema, page headers.
    _RECORD_FILE_OVERHEAD = 64 * 1024
    #: Records read one by one to list an array where the store cannot list.
    _MAX_UNLISTED_RECORDS = 10_000

    def __init__(self, store: Store, root: str, doc: Mapping[str, Any], where: str) -> None:
        self._store = store
        self._root = root
        self._where = where
        record_size = doc.get("record_size")
        if isinstance(record_size, bool) or not isinstance(record_size, int) or record_size < 1:
            raise MetadataError(
                f"{where}/.zmetadata: record_size must be a positive integer, got {record_size!r}"
            )
        self._record_size = record_size
        meta = doc.get("metadata") or {}
        if not isinstance(meta, Mapping):
            raise MetadataError(f"{where}/.zmetadata: metadata must be an object")
        self._meta = {
            key: (value if isinstance(value, str) else json.dumps(value)).encode()
            for key, value in meta.items()
        }
        # Everything is in memory already: offer it as v2 consolidated metadata too.
        consolidated = {"zarr_consolidated_format": 1, "metadata": dict(meta)}
        self._meta.setdefault(".zmetadata", json.dumps(consolidated).encode())
        self._records: OrderedDict[tuple[str, int], list[Any]] = OrderedDict()

    def _grid(self, field: str) -> list[int] | None:
        """Chunks per dimension of array `field` ([1] for a 0-d one); None if no array."""
        zarray = self._meta.get(f"{field}/.zarray")
        if zarray is None:
            return None
        try:
            meta = json.loads(zarray)
            grid = [
                math.ceil(int(s) / int(c))
                for s, c in zip(meta["shape"], meta["chunks"], strict=True)
            ]
        except (ValueError, TypeError, KeyError, ZeroDivisionError) as error:
            raise MetadataError(
                f"{self._where}: {field}/.zarray has no valid shape and chunks ({error})"
            ) from None
        return grid or [1]

    def _locate(self, key: str) -> tuple[str, int, int] | None:
        """(field, record, row) holding chunk `key`, or None for no such chunk."""
        field, _, chunk = key.rpartition("/")
        grid = self._grid(field)
        try:
            index = [int(part) for part in chunk.split(".")]
        except ValueError:
            return None
        if grid is None or len(index) != len(grid):
            return None
        number = 0
        for i, n in zip(index, grid, strict=True):
            if not 0 <= i < n:
                return None
            number = number * n + i
        return field, number // self._record_size, number % self._record_size

    async def _read_records(self, wanted: Sequence[tuple[str, int]]) -> None:
        """Have every record in `wanted` cached, reading the missing ones concurrently."""
        missing = sorted({w for w in wanted if w not in self._records})
        for where, rows in zip(missing, await self._fetch_records(missing), strict=True):
            self._records[where] = rows
        for where in wanted:  # most recent last; the LRU keeps at least all of `wanted`
            self._records.move_to_end(where)
        while len(self._records) > max(self._CACHED_RECORDS, len(set(wanted))):
            self._records.popitem(last=False)

    async def _fetch_records(self, records: Sequence[tuple[str, int]]) -> list[list[Any]]:
        """The rows of each record (none where its file is missing), read concurrently."""
        if not records:
            return []
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise UnsupportedError(
                "reading Parquet references needs pyarrow: pip install 'aiozarr[references]'"
            ) from None
        keys = [f"{self._root}/{field}/refs.{record}.parq" for field, record in records]
        limit = self._RECORD_FILE_OVERHEAD + self._record_size * self._MAX_ROW_BYTES
        datas = await self._store.get_partial_values([RangeRequest(k, None, limit) for k in keys])

        def parse(key: str, data: Buffer) -> list[Any]:
            try:
                return parse_rows(key, data)
            except (pa.ArrowException, OSError) as error:
                raise MetadataError(
                    f"{self._where}: {key} is not a readable Parquet record file ({error})"
                ) from None

        def parse_rows(key: str, data: Buffer) -> list[Any]:
            file = pq.ParquetFile(pa.BufferReader(bytes(memoryview(data))))
            rows = file.metadata.num_rows
            size = sum(
                file.metadata.row_group(i).total_byte_size for i in range(file.num_row_groups)
            )
            if rows > self._record_size or size > limit:
                raise MetadataError(
                    f"{self._where}: {key} holds {rows} rows ({size} bytes uncompressed); "
                    f"a record holds at most record_size = {self._record_size} rows "
                    f"({limit} bytes)"
                )
            wanted = [n for n in ("path", "offset", "size", "raw") if n in file.schema_arrow.names]
            missing = [n for n in ("path", "offset", "size") if n not in wanted]
            if missing:  # no path: every chunk absent; no offset, size: every one whole
                raise MetadataError(
                    f"{self._where}: {key} has no {missing[0]!r} column: a record file of "
                    "references holds the columns path, offset, size and raw"
                )
            table = file.read(columns=wanted)
            columns = [
                table.column(name).to_pylist() if name in wanted else None
                for name in ("path", "offset", "size", "raw")
            ]
            return [_row(columns, i) for i in range(table.num_rows)]

        # No file: no chunk of that record is stored. Parsing is CPU work: a thread.
        return [
            [] if data is None else await anyio.to_thread.run_sync(parse, key, data)
            for key, data in zip(keys, datas, strict=True)
        ]

    async def lookup(self, keys: Sequence[str]) -> list[Any]:
        """The reference of each key (bytes or a `[url, ...]` list), None if absent."""
        places = [None if key in self._meta else self._locate(key) for key in keys]
        await self._read_records([(p[0], p[1]) for p in places if p is not None])
        out: list[Any] = []
        for key, place in zip(keys, places, strict=True):
            if place is None:
                out.append(self._meta.get(key))
                continue
            rows = self._records.get((place[0], place[1]), [])
            row = rows[place[2]] if place[2] < len(rows) else None
            if isinstance(row, _NullField):
                field, record, i = place
                raise MetadataError(
                    f"{self._where}: the reference of {key!r} (row {i} of "
                    f"{field}/refs.{record}.parq) is malformed: {row.value!r} ({row.why})"
                )
            out.append(row)
        return out

    async def keys(self) -> list[str]:
        """Every metadata key and every stored chunk key (reads every record file)."""
        fields = [k.removesuffix("/.zarray") for k in self._meta if k.endswith("/.zarray")]
        chunk_keys: list[str] = []
        for field in fields:
            grid = self._grid(field) or [1]
            chunks = math.prod(grid)
            async for record, rows in self._stored_records(field, chunks):
                first = record * self._record_size
                for i, row in enumerate(rows[: self._record_size]):
                    if row is not None and first + i < chunks:
                        index = ".".join(map(str, _unravel(first + i, grid)))
                        chunk_keys.append(f"{field}/{index}")
        return [*self._meta, *chunk_keys]

    async def _stored_records(
        self, field: str, chunks: int
    ) -> AsyncIterator[tuple[int, list[Any]]]:
        """(record number, rows) of each record file of `field`, a batch at a time: those
        a listing finds (a store that lists), else every record the grid can have (at
        most `_MAX_UNLISTED_RECORDS`)."""
        count = -(-chunks // self._record_size)
        if self._store.listable:
            folder = f"{self._root}/{field}/"
            found = [_RECORD_FILE.fullmatch(n) async for n in self._store.list_dir(folder)]
            numbers: Any = sorted(int(m[1]) for m in found if m and int(m[1]) < count)
        elif count <= self._MAX_UNLISTED_RECORDS:
            numbers = range(count)
        else:
            raise UnsupportedError(
                f"{self._where}: cannot list {field}: the store cannot list, and its grid "
                f"has {count} records, over the {self._MAX_UNLISTED_RECORDS} read one by one"
                " to find the stored ones; open it from a store that lists"
            )
        for start in range(0, len(numbers), self._CACHED_RECORDS):
            batch = [(field, n) for n in numbers[start : start + self._CACHED_RECORDS]]
            for (_, number), rows in zip(batch, await self._fetch_records(batch), strict=True):
                yield number, rows


class _NullField:
    """A row with a path whose offset or size alone is null: fsspec reads it as
    `[path, offset, None]`, which no reader can serve. Kept as a row (its key is listed)
    and refused when that key is read, so the record's other rows still read."""

    def __init__(self, path: Any, offset: Any, size: Any, why: str = "") -> None:
        self.value = [path, offset, size]
        self.why = why or "a null offset or size beside a path; a whole object has both 0"


def _row(columns: list[list[Any] | None], i: int) -> Any:
    """One Parquet row as a reference: inline bytes, `[url]`, `[url, offset, size]`, None
    (a `_NullField` where the offset or the size alone is null)."""
    path, offset, size, raw = (None if c is None else c[i] for c in columns)
    if raw is not None:
        if not isinstance(raw, bytes):
            return _NullField(path, offset, size, f"its raw value is a {type(raw).__name__}")
        return raw
    if path is None:
        return None
    for value in (offset, size):  # NaN (pandas' null), a fraction, a string: malformed
        if value is not None and not (
            isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        ):
            return _NullField(path, offset, size, "an offset or size that is not an integer")
    if not offset and not size and (offset is None) == (size is None):
        return [path]
    if offset is None or size is None:
        return _NullField(path, offset, size)
    return [path, int(offset), int(size)]


def _unravel(number: int, grid: Sequence[int]) -> list[int]:
    """The chunk index numbered `number` in C order over `grid`."""
    index: list[int] = []
    for n in reversed(grid):
        number, i = divmod(number, n)
        index.append(i)
    return index[::-1]
