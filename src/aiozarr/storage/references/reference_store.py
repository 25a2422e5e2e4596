"""`ReferenceStore`: a read-only store over kerchunk references (virtual Zarr).

A reference file maps each Zarr key to bytes that live elsewhere:

    {"version": 1,
     "templates": {"u": "s3://bucket/data.h5"},
     "refs": {".zgroup": "{\\"zarr_format\\": 2}",       # inline text
              "x/.zarray": "base64:eyJ6YXJy...",         # inline, base64
              "x/0.0": ["{{u}}", 1024, 4096],           # a byte range of another object
              "x/0.1": ["s3://bucket/whole.bin"]}}      # all of another object

Reads for many keys become byte-range reads of the target objects, grouped by target
store: one `stream_partial_values` per target store, so ranges into one file coalesce
(the target store's `coalesce_gap_bytes`) and different files run concurrently under
the target store's request budget, with its retries. Relative target URLs resolve
against the reference file's directory. Version 0 (a plain `{key: value}` mapping) is
read too, and so is the Parquet form kerchunk writes (`kerchunk.df.refs_to_dataframe`;
see `storage/references/parquet.py`; needs pyarrow). Templates and `gen` items (keys
generated over ranges) are rendered by `storage/references/templating.py`.

A reference file is not trusted: its targets must lie in the reference file's own
bucket or host (its own directory for a local file) or under a prefix the caller
allows (`allowed_targets`), and the caller's options go only where the caller gave them
(`storage/references/targets.py`). A refused target raises `ReferenceTargetError` when
the references are loaded (JSON: every distinct target is checked then, no request
made) and again whenever an entry is read.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import numbers
import os
import reprlib
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aiozarr.byte_range import ByteRange
from aiozarr.errors import (
    MetadataError,
    SourceChangedError,
    StoreError,
    UnsupportedError,
    ValueTooLargeError,
)
from aiozarr.sizes import memory_bytes
from aiozarr.storage.backends.redaction import redact_url
from aiozarr.storage.policy.fanin import Emit, Spawn, fan_in
from aiozarr.storage.protocol import (
    Answer,
    Buffer,
    Capabilities,
    RangeRequest,
    Store,
    Version,
    Versioned,
    check_size,
    dir_entries,
    read_as_batch,
    sized_version,
)
from aiozarr.storage.references.parquet import ParquetRefs
from aiozarr.storage.references.targets import TargetPolicy, locate
from aiozarr.storage.references.templating import Templates, generate

__all__ = ["ReferenceStore", "is_reference_source", "open_references"]

_NULL = object()  # a key whose entry is null


def is_reference_source(source: object) -> bool:
    """Whether `source` looks like kerchunk references: a dict with "refs", the path/URL
    of a `.json` file or a `.parq`/`.parquet` directory, a local directory of Parquet
    references, or anything with a `reference://` prefix."""
    if isinstance(source, Mapping):
        return "refs" in source or _is_version1(source)
    if isinstance(source, str | os.PathLike):
        text = os.fspath(source)
        if text.startswith("reference://"):
            return True
        if text.lower().rstrip("/").endswith((".json", ".parq", ".parquet")):
            return True
        root = Path(text)
        # Parquet references: `.zmetadata` holding "record_size" and no `.zgroup` (a
        # consolidated Zarr group has one, and a possibly large .zmetadata to skip).
        if _is_local(text) and (root / ".zmetadata").is_file():
            if (root / ".zgroup").exists() or (root / "zarr.json").exists():
                return False
            with contextlib.suppress(ValueError, OSError):
                return "record_size" in json.loads((root / ".zmetadata").read_bytes())
    return False


def open_references(
    source: Mapping[str, Any] | str | os.PathLike[str],
    *,
    storage_options: Mapping[str, Any] | None = None,
    target_options: Mapping[str, Any] | None = None,
    allowed_targets: Sequence[str] | str | None = None,
) -> ReferenceStore:
    """A `ReferenceStore` over `source`: a references dict, the path/URL of its JSON, or
    the path/URL of a directory of Parquet references (see `ReferenceStore` for what it
    may read and with which options).
    """
    return ReferenceStore(
        source,
        storage_options=storage_options,
        target_options=target_options,
        allowed_targets=allowed_targets,
    )


def _split_url(url: str) -> tuple[str, str]:
    """`"s3://b/dir/f.h5"` -> `("s3://b/dir", "f.h5")`; paths likewise."""
    head, _, name = url.rstrip("/").rpartition("/")
    if not name:
        raise StoreError(f"reference target {url!r} names no object")
    return head if head else ".", name


def _is_local(url: str) -> bool:
    scheme = urlsplit(url).scheme
    return scheme in ("", "file") or len(scheme) == 1


def _merge_allowed(*sources: Sequence[str] | str | None) -> list[str]:
    """The allowed prefixes given as an argument and inside storage_options."""
    out: list[str] = []
    for source in sources:
        if isinstance(source, str | os.PathLike):
            out.append(os.fspath(source))
        elif source is not None:
            out.extend(os.fspath(p) for p in source)
    return out


class ReferenceStore(Store):
    """A read-only `Store` whose keys are kerchunk references into other objects.

    `source` is a references dict (`{"version": 1, "refs": ...}` or version 0's plain
    mapping), the path/URL of its JSON file, or the path/URL of the directory kerchunk
    writes Parquet references into; files are read on first use.

    Targets are read only in the reference file's own bucket or host (for a local file:
    its own directory and below; for a dict: nowhere) and under the prefixes of
    `allowed_targets` (`["s3://noaa-goes16/", "/data/nc/"]`; `"s3://"` alone allows every
    bucket); anything else raises `ReferenceTargetError`. Inline values are always read.
    `storage_options` open the reference file and the targets in its own bucket or host
    (a dict has no file: there they are the targets' options); `target_options` are the
    options of the targets: one dict for all of them, or `{url prefix: options}` per
    prefix; other targets get no options. `allowed_targets` and `target_options` may come
    inside `storage_options` (`{"allowed_targets": [...], "target_options": {...}}`),
    which is how `aiozarr.open_*` and the xarray backend pass them.
    """

    # Its values are inline or ranges of other objects, read through their stores (whose
    # request policies apply), each answer's version telling the reference's length; it
    # is never written.
    CAPABILITIES = Capabilities(
        writes=False, deletes=False, delegates_reads=True, sized_versions=True
    )

    def __init__(
        self,
        source: Mapping[str, Any] | str | os.PathLike[str],
        *,
        storage_options: Mapping[str, Any] | None = None,
        target_options: Mapping[str, Any] | None = None,
        allowed_targets: Sequence[str] | str | None = None,
    ) -> None:
        super().__init__(read_only=True)
        self._source = source if isinstance(source, Mapping) else os.fspath(source)
        if isinstance(self._source, str):
            self._source = self._source.removeprefix("reference://")
        options = dict(storage_options or {})
        if isinstance(self._source, str) and not self._source and "fo" in options:
            raise UnsupportedError(
                'fsspec\'s reference spelling ("reference://" with storage_options '
                "fo=..., remote_protocol=..., remote_options=...) is not read: pass the "
                f"reference file itself ({redact_url(str(options['fo']))!r}) as the URL, the "
                "targets' options as target_options and trusted target prefixes as "
                "allowed_targets"
            )
        allowed = _merge_allowed(allowed_targets, options.pop("allowed_targets", None))
        if "target_options" in options:
            if target_options is not None:
                raise StoreError("target_options given twice (argument and storage_options)")
            target_options = options.pop("target_options")
        self._options = options
        self._refs: dict[str, Any] | None = None
        home = None if isinstance(self._source, Mapping) else locate(self._source)
        if home is None and target_options is None and options:
            target_options = options  # a dict has no file: its options are its targets'
        self._base = home.parent if home is not None else None  # relative targets
        self._policy = TargetPolicy(
            home,
            allowed_targets=allowed,
            storage_options=self._options,
            target_options=target_options,
        )
        self._targets: dict[tuple[str, str], Store] = {}
        self._resolved: dict[str, tuple[Store, str]] = {}  # target URL as written -> read
        self._parquet: ParquetRefs | None = None
        if isinstance(source, Mapping):
            self._refs = self._parse(source)
            self._check_targets(self._refs)

    # -- loading -----------------------------------------------------------------------

    async def _load(self) -> dict[str, Any]:
        if self._refs is not None:
            return self._refs
        assert isinstance(self._source, str)
        base, name = _split_url(self._source)
        own = None if _is_local(base) or base.startswith("memory://") else self._options
        store = self._store_for(base, ("home", own))
        if not name.lower().endswith(".json"):  # a directory of Parquet references?
            meta = await store.get(f"{name}/.zmetadata")
            if meta is not None:
                doc = _json_doc(meta, f"{self._source}/.zmetadata")
                if isinstance(doc, Mapping) and "record_size" in doc:
                    self._parquet = ParquetRefs(store, name, doc, self._source)
                    self._refs = {}
                    return self._refs
        data = await store.get(name)
        if data is None:
            raise StoreError(f"cannot read references: {self._source!r} not found")
        refs = self._parse(_json_doc(data, self._source))
        self._check_targets(refs)
        self._refs = refs
        return self._refs

    def _check_targets(self, refs: Mapping[str, Any]) -> None:
        """Check every distinct target once, as the references are loaded: a refused one
        fails the open, not some later read (no request is made)."""
        for key, value in refs.items():  # a malformed entry fails when it is read
            url = value[0] if isinstance(value, list) and value else None
            if isinstance(url, str) and url and url not in self._resolved:
                self._resolve(url, key)

    async def _lookup(self, keys: Sequence[str]) -> list[Any]:
        """The reference (inline value or `[url, ...]` list) of each key; None if absent."""
        refs = await self._load()
        if self._parquet is not None:
            return await self._parquet.lookup(keys)
        # null: listed, neither a reference nor data (refused when read, not fill values)
        return [_NULL if key in refs and refs[key] is None else refs.get(key) for key in keys]

    @property
    def _where(self) -> str:
        """How messages name these references: the file, or "references" for a dict."""
        return self._source if isinstance(self._source, str) else "references"

    def _null(self, key: str) -> MetadataError:
        return MetadataError(
            f"{self._where}: the reference of {key!r} is malformed: null (a reference is [url] or "
            "[url, offset, length], or inline data)"
        )

    async def _keys(self) -> list[str]:
        """Every key, sorted (for Parquet references this reads every record)."""
        refs = await self._load()
        return sorted(await self._parquet.keys() if self._parquet is not None else refs)

    def _parse(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        where = self._where
        if not isinstance(doc, Mapping):
            raise MetadataError(f"{where}: expected a JSON object")
        if "refs" not in doc and not _is_version1(doc):  # version 0: the mapping itself
            return _scalar_chunks(dict(doc))
        if doc.get("version", 1) != 1:
            raise UnsupportedError(f"{where}: reference version {doc.get('version')!r}")
        for field in ("refs", "templates"):
            if field in doc and not isinstance(doc[field], Mapping):
                raise MetadataError(
                    f"{where}: {field!r} must be a JSON object, got {reprlib.repr(doc[field])}"
                )
        templates = Templates(doc.get("templates", {}), where)
        refs = dict(doc.get("refs", {}))
        if templates:
            for key, value in refs.items():
                if isinstance(value, list) and value and isinstance(value[0], str):
                    refs[key] = [templates.url(value[0], key), *value[1:]]
        if doc.get("gen") is not None:  # generated keys replace literal ones, as fsspec's
            refs.update(generate(doc["gen"], templates, where))
        return _scalar_chunks(refs)

    # -- resolving keys ----------------------------------------------------------------

    def _store_for(self, base: str, options: tuple[str, Mapping[str, Any] | None]) -> Store:
        """The store rooted at `base`, opened with `options` (`(name, options)`: stores
        are shared by targets in one directory that take the same options)."""
        which, opts = options
        store = self._targets.get((base, which))
        if store is None:
            from aiozarr.storage.opening.url import from_url

            check = self._policy.check_redirect  # http(s): no redirect unchecked
            store = from_url(base, storage_options=opts, read_only=True, check_redirect=check)
            self._targets[(base, which)] = store
        return store

    def _resolve(self, url: str, key: str | None = None) -> tuple[Store, str]:
        """(store, key in it) of target `url` as a reference writes it, once checked:
        relative to the reference file's directory, normalised, and allowed."""
        found = self._resolved.get(url)
        if found is not None:
            return found
        target = locate(url, self._base)
        self._policy.check(target, key)
        base, name = _split_url(target.url)
        found = self._resolved[url] = (
            self._store_for(base, self._policy.options_for(target)),
            name,
        )
        return found

    def _target(self, value: list[Any], key: str) -> tuple[Store, str, int, int | None]:
        """(target store, key in it, offset, length or None for all) of a reference."""
        url, offset, length = self._entry(value, key)
        store, name = self._resolve(url, key)
        return store, name, offset, length

    def _entry(self, value: list[Any], key: str) -> tuple[str, int, int | None]:
        """(target URL, offset, length or None for all) of reference `value` of `key`:
        `[url]` or `[url, offset, length]` (a subclass may append items of its own).
        Raises `MetadataError` naming the reference file, the key and the entry."""
        problem = _entry_problem(value)
        if problem:
            raise MetadataError(
                f"{self._where}: the reference of {key!r} is malformed: {reprlib.repr(value)} "
                f"({problem}; a reference is [url] or [url, offset, length])"
            )
        if len(value) == 1:
            return value[0], 0, None
        return value[0], int(value[1]), int(value[2])

    def _target_refused(
        self, error: StoreError, keys: list[str], reads: list[RangeRequest]
    ) -> StoreError:
        """`error`, from a target read for the references `keys`, naming them and this
        store too (the target knows only its own object): a source changed since it was
        referenced (412), a whole target over its bound (the keys read whole), a target
        that fails for good."""
        if isinstance(error, ValueTooLargeError):
            keys = [k for k, r in zip(keys, reads, strict=True) if r.max_bytes]
        named = ", ".join(map(repr, keys[:5]))
        named += f" and {len(keys) - 5} more" if len(keys) > 5 else ""
        return type(error)(f"cannot read {named} of {self!r}: {error}")

    def _verify(self, key: str, value: list[Any], version: Any) -> None:
        """Check a target's answer before its bytes are used: here nothing; a store whose
        references carry checksums of their targets (icechunk's) compares `version`."""

    def _inline(self, value: Any, key: str) -> bytes:
        if isinstance(value, str):
            if value.startswith("base64:"):
                try:
                    return base64.b64decode(value[len("base64:") :])
                except binascii.Error as error:
                    raise MetadataError(
                        f"{self._where}: the inline value of {key!r} is not valid base64 "
                        f"({error}): {reprlib.repr(value)}"
                    ) from None
            return value.encode()
        if isinstance(value, bytes):
            return value
        return json.dumps(value).encode()  # version 0 may hold JSON documents as objects

    # -- reads -------------------------------------------------------------------------

    async def read(
        self, key: str, byte_range: ByteRange | None, max_bytes: int | None
    ) -> Versioned | None:
        """A batch of one: the bound travels with it to the target store, which checks it
        before reading (and the target's own request policy retries it)."""
        return await read_as_batch(self, key, byte_range, max_bytes)

    @contextlib.asynccontextmanager
    async def stream_versioned_values(self, requests: Sequence[RangeRequest]) -> AsyncIterator[Any]:
        """`(request index, answer, version)` as answers land; reads of one target store
        go as one batch to it (it coalesces ranges of one object and runs objects
        concurrently). Each answer's version tells the value's size (`stored_size`): a
        reference's answer carries its target's version with the reference's length as
        the size, an inline value one that tells its size alone (`sized_version`).
        """
        values = await self._lookup([request.key for request in requests])
        ready: list[Answer] = []
        by_store: dict[int, tuple[Store, list[int], list[RangeRequest]]] = {}
        for i, (request, value) in enumerate(zip(requests, values, strict=True)):
            if value is None:
                ready.append((i, None, None))
            elif value is _NULL:
                raise self._null(request.key)
            elif not isinstance(value, list):
                data = self._inline(value, request.key)
                size = len(data)
                if request.byte_range is None:
                    check_size(request.key, size, request.max_bytes, self)
                else:
                    start, stop = request.byte_range.resolve(size)
                    data = data[start:stop]
                ready.append((i, data, sized_version(None, size)))
            else:
                store, read = self._target_read(request, value)
                _, indices, reads = by_store.setdefault(id(store), (store, [], []))
                indices.append(i)
                reads.append(read)

        async def fetch(
            emit: Emit, store: Store, indices: list[int], reads: list[RangeRequest]
        ) -> None:
            keys = [requests[i].key for i in indices]
            checking = False  # an answer's own checks name its key: passed on as they are
            try:
                async with store.stream_versioned_values(reads) as answers:
                    async for j, data, version in answers:
                        key, value = keys[j], values[indices[j]]
                        checking = True
                        if data is None:
                            raise self._missing(key, value, reads[j].key, store)
                        self._check_length(key, value, reads[j], data, store)
                        self._verify(key, value, version)
                        checking = False
                        emit((indices[j], data, _sized(value, version)))
            except StoreError as error:  # the target's own: named with the keys asking
                renamed = (SourceChangedError, ValueTooLargeError)
                if checking or not (type(error) is StoreError or isinstance(error, renamed)):
                    raise
                raise self._target_refused(error, keys, reads) from error

        async def fetch_all(emit: Emit, spawn: Spawn) -> None:
            for item in ready:
                emit(item)
            for store, indices, reads in by_store.values():
                spawn(fetch, emit, store, indices, reads)

        async with fan_in(fetch_all) as answers:
            yield answers

    def _target_read(self, request: RangeRequest, value: list[Any]) -> tuple[Store, RangeRequest]:
        """The target store of reference `value` and the read of it that serves
        `request`, refused before any request where it asks for more than a reader can
        hold: over `request.max_bytes` for a whole value, else over the process's memory
        (a length claimed far beyond the target's end would be read part by part)."""
        key = request.key
        store, name, offset, length = self._target(value, key)
        bound = None
        if request.byte_range is None:
            if length is not None:  # the reference says how long the value is
                check_size(key, length, request.max_bytes, self)
            else:  # a whole target object: its store checks it before reading
                bound = request.max_bytes
        read = RangeRequest(name, _compose(offset, length, request.byte_range), bound)
        asked = None if read.byte_range is None else read.byte_range.length
        if asked is not None and asked > memory_bytes():
            raise ValueTooLargeError(
                f"cannot read {key!r} in {self!r}: its reference {reprlib.repr(value[:3])} "
                f"asks for {asked} bytes of its target {value[0]!r} ({name!r} in "
                f"{store!r}), more than the {memory_bytes()} of memory this process may "
                "use; it was not read"
            )
        return store, read

    async def exists(self, key: str) -> bool:
        return (await self._lookup([key]))[0] is not None

    async def getsize(self, key: str) -> int | None:
        """Size of the value at `key`, from the reference (a HEAD for whole-object refs)."""
        value = (await self._lookup([key]))[0]
        if value is None:
            return None
        if value is _NULL:
            raise self._null(key)
        if not isinstance(value, list):
            return len(self._inline(value, key))
        store, name, _, length = self._target(value, key)
        if length is not None:
            return length
        size = await store.getsize(name)
        if size is None:
            raise self._missing(key, value, name, store)
        return size

    def _check_length(
        self, key: str, value: list[Any], read: RangeRequest, data: Any, store: Store
    ) -> None:
        """Raise `StoreError` where a reference that gives its length got fewer bytes
        than it says: its target ends before the range (a store clips such a range, and
        the short bytes would be decoded as a corrupt chunk, naming neither)."""
        byte_range = read.byte_range
        if len(value) < 3 or byte_range is None or byte_range.length is None:
            return
        got = memoryview(data).nbytes
        if got < byte_range.length:
            raise StoreError(
                f"cannot read {key!r} in {self!r}: its target {value[0]!r} ({read.key!r} in "
                f"{store!r}) holds {got} of the {byte_range.length} bytes at offset "
                f"{byte_range.offset} that the reference {reprlib.repr(value[:3])} names: "
                "it ends before them"
            )

    def _missing(self, key: str, value: list[Any], name: str, store: Store) -> StoreError:
        """The error for a reference whose target object does not exist: an absent key
        would read as fill values, hiding that the data is gone."""
        return StoreError(
            f"cannot read {key!r} in {self!r}: its target {value[0]!r} ({name!r} in "
            f"{store!r}) does not exist"
        )

    # -- listing -----------------------------------------------------------------------

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        for key in await self._keys():
            if key.startswith(prefix):
                yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        head = prefix.strip("/")
        head = f"{head}/" if head else ""
        names = {
            key[len(head) :].split("/", 1)[0]
            for key in await self._keys()
            if key.startswith(head) and len(key) > len(head)
        }
        for name in sorted(names):
            yield name

    async def list_dir_entries(self, prefix: str) -> AsyncIterator[tuple[str, bool | None]]:
        for entry in dir_entries(await self._keys(), prefix):
            yield entry

    def __repr__(self) -> str:
        source = self._source if isinstance(self._source, str) else "<dict>"
        return f"ReferenceStore({source!r})"


def _json_doc(data: Buffer, where: str) -> Any:
    try:
        return json.loads(bytes(memoryview(data)))
    except (ValueError, RecursionError) as error:  # RecursionError: nested too deeply
        raise MetadataError(f"{where}: not valid JSON ({error})") from None


def _is_version1(doc: Mapping[str, Any]) -> bool:
    """Whether `doc` is version 1 references without "refs" (all of them generated);
    version 0 has no "version" key holding the integer 1 (its values are text or lists)."""
    version = doc.get("version")
    return isinstance(version, int) and not isinstance(version, bool) and version == 1


def _scalar_chunks(refs: dict[str, Any]) -> dict[str, Any]:
    """`refs` with the chunk of a 0-d v2 array that VirtualiZarr 2 names `"x/"` (an empty
    chunk key) under the key Zarr reads, `"x/0"` (else it read as the fill value)."""
    for key in [k for k in refs if k.endswith("/") and f"{k}.zarray" in refs]:
        refs.setdefault(f"{key}0", refs.pop(key))
    return refs


def _entry_problem(value: list[Any]) -> str:
    """What is wrong with reference list `value`, or "". Offsets and lengths are
    integers (not bools, which Python counts as 0 and 1) at least 0."""
    if len(value) in (0, 2):  # 1 or 3 (more: a subclass's own items after them)
        return f"{len(value)} items"
    if not isinstance(value[0], str) or not value[0]:
        return "its target is not a URL"
    for what, number in zip(("offset", "length"), value[1:3], strict=False):
        if isinstance(number, bool) or not isinstance(number, numbers.Integral):
            return f"the {what} is not an integer"
        if number < 0:
            return f"the {what} is negative"
    return ""


def _sized(value: list[Any], version: Version | None) -> Version | None:
    """The version of an answer of reference `value`: its target's, telling the
    reference's length as the value's stored size (a span of a chunk is checked against
    it, as a whole read is: `stored_size`); a whole target's own, as its store tells it."""
    if len(value) == 1:  # a whole target: its store's version tells its size, or not
        return version
    return sized_version(version, int(value[2]))


def _compose(offset: int, length: int | None, byte_range: ByteRange | None) -> ByteRange | None:
    """The range of the target object that `byte_range` of a reference covers."""
    if length is None:  # the reference is a whole object: ask for the range as is
        return byte_range
    if byte_range is None:
        return ByteRange.of(offset, length)
    start, stop = byte_range.resolve(length)
    return ByteRange.of(offset + start, stop - start)
