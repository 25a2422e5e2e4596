"""`IcechunkStore`: one snapshot of an icechunk repository, read as a Zarr store.

An icechunk manifest is a reference file in another form: it turns each chunk key into
inline bytes or a byte range of another object (`chunks/<id>` in the repository, or a
virtual chunk's file). So the store is a `ReferenceStore` whose references come from the
snapshot and its manifests instead of a JSON document: each node's `zarr.json` is the
document the snapshot holds, each chunk key the reference its manifest gives. Reads then
plan, batch and coalesce as kerchunk's do: one batch for the manifests the keys need
(fetched once per process: they are immutable, and kept by id), then every range grouped
by object, coalesced and fetched concurrently under the target store's request policy.

Native chunks lie in the repository, read with its options. Virtual chunks are read only
under the prefixes the caller allows (`allowed_targets`, with `target_options` per
prefix: `storage/references/targets.py`), never because the repository lists a
container. A virtual chunk stored with a checksum is read only from the object it was
referenced in (`format.ChunkRef`): an answer whose ETag differs, or a local file changed
after the recorded time, raises `SourceChangedError` (see `checksums.py`).
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any
from urllib.parse import unquote

from aiozarr import fork_safe
from aiozarr.errors import (
    InvalidKeyError,
    MetadataError,
    ReferenceTargetError,
    RefNotFoundError,
    SourceChangedError,
    StoreError,
    UnsupportedError,
)
from aiozarr.storage.backends.guarded_http import GuardedHTTPStore
from aiozarr.storage.backends.object_store import ObjectStore
from aiozarr.storage.protocol import Capabilities, RangeRequest, Store, check_key, dir_entries
from aiozarr.storage.references.conditional_reads import ConditionalReads
from aiozarr.storage.references.icechunk.checksums import checksum_problem
from aiozarr.storage.references.icechunk.format import (
    ChunkRef,
    Manifest,
    Node,
    RepoInfo,
    Snapshot,
    absolute_location,
    parse_manifest,
    parse_ref_json,
    parse_repo_info,
    parse_snapshot,
    virtual_chunk_containers,
)
from aiozarr.storage.references.icechunk.kept import kept_files, repository_scope
from aiozarr.storage.references.icechunk.keys import ChunkKeys
from aiozarr.storage.references.reference_store import ReferenceStore

__all__ = ["IcechunkStore"]


class IcechunkStore(ReferenceStore):
    """A read-only `Store` presenting one snapshot of the icechunk repository at `url`
    (`"s3://bucket/repo"`, a local path, ...), spec version 1 or 2.

    The snapshot is the one branch `branch` points at (`"main"` by default), or tag
    `tag`, or snapshot `snapshot` (its id); give at most one. `as_of` (a time, or its
    ISO 8601 text; without a zone: UTC) takes the branch's snapshot that was newest
    then (spec-2 repositories: their `repo` file holds the history). It is resolved on
    first use and kept: a branch moved later is not followed (open the store again).
    `storage_options` open the repository (and may carry `branch`, `tag`, `snapshot`,
    `as_of`, `allowed_targets` and `target_options`, as `aiozarr.open_*` passes them);
    `allowed_targets` are the url prefixes virtual chunks may be read under
    (`["s3://noaa-goes16/", "/data/nc/"]`) and `target_options` their options (one dict,
    or `{url prefix: options}`).
    """

    # Values are the snapshot's documents or ranges of other objects (read through
    # their stores' request policies); every node's metadata is in the snapshot.
    CAPABILITIES = Capabilities(
        writes=False,
        deletes=False,
        delegates_reads=True,
        metadata_in_hand=True,
        sized_versions=True,  # a reference's length (`ReferenceStore`)
    )

    def __init__(
        self,
        url: str | os.PathLike[str],
        *,
        branch: str | None = None,
        tag: str | None = None,
        snapshot: str | None = None,
        as_of: datetime.datetime | str | None = None,
        storage_options: Mapping[str, Any] | None = None,
        target_options: Mapping[str, Any] | None = None,
        allowed_targets: Sequence[str] | str | None = None,
    ) -> None:
        options = dict(storage_options or {})
        given = {"branch": branch, "tag": tag, "snapshot": snapshot, "as_of": as_of}
        for name in given:
            value = options.pop(name, None)
            if value is not None and given[name] is not None:
                raise StoreError(f"{name} given twice (argument and storage_options)")
            given[name] = given[name] if given[name] is not None else value
        self._ref, self._as_of = _chosen_ref(given)
        self._url = os.fspath(url).rstrip("/")
        # The repository's entry file names its directory: chunks/<id> resolve there, and
        # its options go to targets in its own bucket (or, local, its own directory).
        super().__init__(
            f"{self._url}/repo",
            storage_options=options,
            target_options=target_options,
            allowed_targets=allowed_targets,
        )
        assert self._base is not None
        if (self._base.is_local or self._base.scheme == "memory") and self._options:
            raise StoreError(  # the names only: the values may be credentials
                f"local repository {self._url!r} takes no storage options but branch, tag, "
                f"snapshot, as_of, allowed_targets and target_options; got "
                f"{sorted(self._options)}"
            )
        self._snapshot: Snapshot | None = None
        self._info: RepoInfo | None = None  # the spec-2 `repo` file, where it was read
        self._meta: dict[str, bytes] = {}
        self._arrays: dict[str, tuple[Node, ChunkKeys]] = {}
        self._scope = repository_scope(self._url, self._options)  # its keys in kept_files
        self._first_load: asyncio.Future[None] | None = None  # the snapshot being read
        self._loading: dict[str, asyncio.Future[Manifest]] = {}  # manifests being read
        # by id of the store wrapped and the condition
        self._conditional: dict[tuple[int, str | None, int | None], Store] = {}

    # -- the snapshot ------------------------------------------------------------------

    def _repository(self) -> Store:
        """The store of the repository's own directory."""
        assert self._base is not None
        remote = not self._base.is_local and self._base.scheme != "memory"
        return self._store_for(self._base.url, ("home", self._options if remote else None))

    async def _snapshot_id(self, repo: Store) -> str:
        """The id of the snapshot the branch, tag or id given names: one batch reads
        the spec-2 `repo` file and the spec-1 ref file together (and, for a tag, the
        marker icechunk 1.x writes beside the ref of a deleted one)."""
        kind, name = self._ref
        if kind == "snapshot":
            return name
        assert self._base is not None
        segment = local_ref_segment(name) if self._base.is_local else name
        ref_key = f"refs/{kind}.{segment}/ref.json"
        asked = [RangeRequest("repo")]
        if _is_key(ref_key):  # else no spec-1 ref can be read: the repo file's alone
            asked.append(RangeRequest(ref_key))
            if kind == "tag":
                asked.append(RangeRequest(f"{ref_key}.deleted"))
        info, *spec1 = await repo.get_partial_values(asked)
        ref = spec1[0] if spec1 else None
        deleted = any(marker is not None for marker in spec1[1:])
        where = f"{self._url}/"
        if info is not None:
            refs = self._info = parse_repo_info(info, f"{where}repo")
            found = (refs.branches if kind == "branch" else refs.tags).get(name)
            if found is not None and self._as_of is not None:
                return self._snapshot_as_of(refs, found)
        elif ref is not None:
            found = None if deleted else parse_ref_json(ref, where + ref_key)
        else:
            raise RefNotFoundError(
                f"{self._url!r}: not an icechunk repository, or it has no {kind} {name!r} "
                f"(neither {where}repo nor {where}{ref_key} exists)"
            )
        if found is None:
            gone = " (it was deleted)" if deleted else ""
            raise RefNotFoundError(f"{self._url!r}: the repository has no {kind} {name!r}{gone}")
        if self._as_of is not None:
            raise UnsupportedError(
                f"{self._url!r}: as_of reads the history of spec-2 repositories (icechunk "
                "2.x); this one is spec 1: open one of its snapshot ids instead"
            )
        return found

    def _snapshot_as_of(self, refs: RepoInfo, tip: str) -> str:
        assert self._as_of is not None
        epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
        found = refs.as_of(tip, (self._as_of - epoch) // datetime.timedelta(microseconds=1))
        if found is None:
            raise RefNotFoundError(
                f"{self._url!r}: branch {self._ref[1]!r} has no snapshot as old as "
                f"{self._as_of.isoformat()}"
            )
        return found

    async def snapshot(self) -> Snapshot:
        """The snapshot read (its id, its nodes), read on first use.

        Raises:
            NodeNotFoundError: There is no repository at the URL, or it has no such
                branch, tag or snapshot.
        """
        await self._load()
        assert self._snapshot is not None
        return self._snapshot

    async def _load(self) -> dict[str, Any]:
        while self._snapshot is None:
            pending = self._first_load
            if pending is not None and pending.get_loop() is asyncio.get_running_loop():
                await asyncio.wait([pending])  # a read that failed leaves it to this one
                continue
            await self._read_snapshot()
        self._refs = {}
        return self._refs

    async def _read_snapshot(self) -> None:
        """Read the ref and the snapshot it names, and index it: the first read of a
        store, which the reads that start meanwhile wait for (one ref and one snapshot
        read for all of them)."""
        self._first_load = done = asyncio.get_running_loop().create_future()
        try:
            repo = self._repository()
            key = f"snapshots/{await self._snapshot_id(repo)}"
            snapshot = kept_files().get(self._scope + key)
            if snapshot is None:  # immutable: read once per process
                data = await repo.get(key)
                if data is None:
                    raise RefNotFoundError(
                        f"{self._url!r}: the repository has no snapshot {key[10:]!r} "
                        f"({key!r} not found)"
                    )
                snapshot = parse_snapshot(data, f"{self._url}/{key}")
                kept_files().put(self._scope + key, snapshot, len(data))
            self._index(snapshot)
        finally:
            if self._first_load is done:
                self._first_load = None
            done.set_result(None)

    def _index(self, snapshot: Snapshot) -> None:
        """Each node's `zarr.json` key and each array's chunk key grammar, unless another
        first read (another task, or thread) indexed a snapshot while this one was read:
        the branch may have moved in between, and the first indexed stands, whole, so one
        store never presents the nodes of two snapshots."""
        meta: dict[str, bytes] = {}
        arrays: dict[str, tuple[Node, ChunkKeys]] = {}
        for path, node in snapshot.nodes.items():
            prefix = path.strip("/")
            meta[f"{prefix}/zarr.json" if prefix else "zarr.json"] = node.zarr_json
            if node.is_array:
                arrays[prefix] = (node, ChunkKeys.of(_document(node, self._url)))
        with _FIRST_INDEX:
            if self._snapshot is None:  # set last: a reader that sees it sees the rest
                self._meta, self._arrays, self._snapshot = meta, arrays, snapshot

    # -- keys -> references ------------------------------------------------------------

    def _chunk_of(self, key: str) -> tuple[Node, tuple[int, ...]] | None:
        """The array node and chunk coordinates `key` names, None if it names none."""
        parts = key.split("/")
        for i in range(len(parts) - 1, -1, -1):
            found = self._arrays.get("/".join(parts[:i]))
            if found is not None:
                node, keys = found
                coords = keys.parse("/".join(parts[i:]))
                return None if coords is None else (node, coords)
        return None

    async def _lookup(self, keys: Sequence[str]) -> list[Any]:
        """Each key's reference: inline bytes, `[url, offset, length, chunk]`, or None."""
        found = await self._entries(keys)
        if any(isinstance(f, ChunkRef) and (f.location or "")[:6] == "vcc://" for f in found):
            await self._read_info()  # relative locations name its containers
        return [
            self._reference(f, k) if isinstance(f, ChunkRef) else f
            for f, k in zip(found, keys, strict=True)
        ]

    async def getsize(self, key: str) -> int | None:
        """Size of the value at `key`, from its snapshot or manifest: no request to a
        chunk's target, and none refused (sizes are not reads)."""
        found = (await self._entries([key]))[0]
        if isinstance(found, ChunkRef):
            return len(found.inline) if found.inline is not None else found.length
        return None if found is None else len(found)

    async def _entries(self, keys: Sequence[str]) -> list[bytes | ChunkRef | None]:
        """Each key's document bytes, the manifest's `ChunkRef`, or None."""
        await self._load()
        out: list[Any] = [None] * len(keys)
        wanted: list[tuple[int, Node, tuple[int, ...], list[str]]] = []
        for i, key in enumerate(keys):
            if key in self._meta:
                out[i] = self._meta[key]
            elif (found := self._chunk_of(key)) is not None:
                node, coords = found
                ids = [m.manifest_id for m in node.manifests if m.covers(coords)]
                if ids:
                    wanted.append((i, node, coords, ids))
        manifests = await self._fetch_manifests({m for *_, ids in wanted for m in ids})
        # Each key in the first manifest covering it, then (absent there) the next.
        while wanted:
            groups: dict[tuple[str, str], list[tuple[int, tuple[int, ...]]]] = {}
            later = []
            for i, node, coords, ids in wanted:
                groups.setdefault((ids[0], node.node_id), []).append((i, coords))
                if len(ids) > 1:
                    later.append((i, node, coords, ids[1:]))
            for (manifest_id, node_id), items in groups.items():
                chunks = manifests[manifest_id].get_many(node_id, [c for _, c in items])
                for (i, _), chunk in zip(items, chunks, strict=True):
                    if chunk is not None and out[i] is None:
                        out[i] = chunk
            wanted = [item for item in later if out[item[0]] is None]
        return out

    def _reference(self, chunk: ChunkRef, key: str) -> Any:
        if chunk.inline is not None:
            return chunk.inline
        if chunk.chunk_id is not None:
            return [f"chunks/{chunk.chunk_id}", chunk.offset, chunk.length, chunk]
        assert chunk.location is not None
        try:
            location = absolute_location(chunk.location, self._info, f"{self._url}/repo")
        except ReferenceTargetError as error:
            raise ReferenceTargetError(f"cannot read {key!r} of {self._url!r}: {error}") from None
        try:
            self._resolve(location, key)  # refused before any request if not allowed
        except ReferenceTargetError as error:
            raise ReferenceTargetError(f"{error}{self._container_hint(location)}") from None
        return [location, chunk.offset, chunk.length, chunk]

    def _container_hint(self, location: str) -> str:
        """Where the repository read declares a container for `location`: its name and
        how to allow it (the declaration itself authorizes nothing)."""
        info = self._info
        containers = {} if info is None else virtual_chunk_containers(info, f"{self._url}/repo")
        # icechunk writes a location percent-encoded (`donn%C3%A9es`), a prefix as given
        where = unquote(location)
        prefix = max((p for p in containers if where.startswith(unquote(p))), key=len, default=None)
        if prefix is None:
            return ""
        kinds = ", ".join(containers[prefix]) or "no store"
        return (
            f"; the repository declares virtual chunk container {prefix!r} ({kinds}): "
            f"allowed_targets=[{prefix!r}] reads it (its options in target_options)"
        )

    async def virtual_chunk_containers(self) -> dict[str, dict[str, Any]] | None:
        """The virtual chunk containers the repository's configuration declares: url
        prefix -> the settings of its store as written (`{"s3": {"region": ...}}`).
        None for a spec-1 repository (its configuration, YAML, is not read). They
        authorize nothing: virtual chunks are read under `allowed_targets`."""
        await self._load()
        info = await self._read_info()
        return None if info is None else virtual_chunk_containers(info, f"{self._url}/repo")

    async def _read_info(self) -> RepoInfo | None:
        """The spec-2 `repo` file (a branch's or tag's open read it already)."""
        if self._info is None:
            data = await self._repository().get("repo")
            if data is not None:
                self._info = parse_repo_info(data, f"{self._url}/repo")
        return self._info

    async def _fetch_manifests(self, ids: set[str]) -> dict[str, Manifest]:
        """The manifests `ids`: those kept (`kept.py`), those another lookup is reading
        (awaited, not read again: a read's lookups run at once, a sharded array's index
        and parts each asking for the same manifest), the rest read in one batch."""
        kept = kept_files()
        found = {i: m for i in ids if (m := kept.get(f"{self._scope}manifests/{i}")) is not None}
        loop = asyncio.get_running_loop()
        mine: list[str] = []
        theirs: dict[str, asyncio.Future[Manifest]] = {}
        for manifest_id in sorted(ids - found.keys()):
            pending = self._loading.get(manifest_id)
            if pending is None:
                mine.append(manifest_id)
                self._loading[manifest_id] = loop.create_future()
            elif pending.get_loop() is loop:
                theirs[manifest_id] = pending
            else:  # read in another event loop, whose future this one cannot await
                found.update(await self._read_manifests([manifest_id]))
        if mine:
            found.update(await self._read_manifests(mine, handing_over=True))
        for manifest_id, pending in theirs.items():
            await asyncio.wait([pending])  # its outcome, not its cancellation, is ours
            if pending.cancelled():  # the read that was to bring it failed: read it here
                found.update(await self._fetch_manifests({manifest_id}))
            else:
                found[manifest_id] = pending.result()
        return found

    async def _read_manifests(
        self, ids: list[str], *, handing_over: bool = False
    ) -> dict[str, Manifest]:
        """Read the manifests `ids` in one batch and keep them; `handing_over`: hand each
        to the lookups waiting on it (its future cancelled where the read failed)."""
        out: dict[str, Manifest] = {}
        try:
            keys = [f"manifests/{i}" for i in ids]
            answers = await self._repository().get_partial_values([RangeRequest(k) for k in keys])
            for manifest_id, key, data in zip(ids, keys, answers, strict=True):
                if data is None:
                    raise StoreError(f"{self._url!r}: manifest {key!r} is missing")
                manifest = parse_manifest(data, f"{self._url}/{key}")
                kept_files().put(self._scope + key, manifest, manifest.nbytes)
                out[manifest_id] = manifest
        finally:
            for manifest_id in ids if handing_over else ():
                pending = self._loading.pop(manifest_id)
                if manifest_id in out:
                    pending.set_result(out[manifest_id])
                else:
                    pending.cancel()
        return out

    def _resolve(self, url: str, key: str | None = None) -> tuple[Store, str]:
        """As a reference file's, but the path of a remote location is percent-decoded
        after it is checked, as icechunk reads it (`sp%20ace.nc` is `sp ace.nc`, `%25`
        a `%`); encoded slashes, backslashes and dots are refused before that, and
        encoded control characters (`%00`) after it."""
        store, name = super()._resolve(url, key)
        if "%" in name and not url[:5].lower().startswith("file:"):
            name = unquote(name)
            if any(ord(c) < 32 or ord(c) == 127 for c in name):
                raise ReferenceTargetError(
                    f"virtual chunk location {url!r} is refused: its path encodes a control "
                    "character, which no object name should hold"
                )
        return store, name

    def _target(self, value: list[Any], key: str) -> tuple[Store, str, int, int | None]:
        """A virtual chunk with a checksum, on an object store or over http(s), is read
        with the checksum as the GET's condition, through a store kept per target and
        checksum (`ConditionalReads`, `GuardedHTTPStore.conditioned`): chunks of one
        object referenced under different checksums are each read under their own. It
        is compared on the answer too (`_verify`)."""
        store, name, offset, length = super()._target(value, key)
        chunk = value[3] if len(value) > 3 else None
        if chunk is None or (chunk.etag is None and chunk.last_modified is None):
            return store, name, offset, length
        if not isinstance(store, GuardedHTTPStore | ObjectStore):
            return store, name, offset, length  # a local file: compared on the answer
        which = (id(store), chunk.etag, chunk.last_modified)
        conditional = self._conditional.get(which)
        if conditional is None:
            if isinstance(store, GuardedHTTPStore):
                conditional = store.conditioned(etag=chunk.etag, modified_by=chunk.last_modified)
            else:
                conditional = ConditionalReads(
                    store, etag=chunk.etag, modified_by=chunk.last_modified
                )
            self._conditional[which] = conditional
        return conditional, name, offset, length

    def _verify(self, key: str, value: list[Any], version: Any) -> None:
        chunk = value[3] if len(value) > 3 else None
        if chunk is None or chunk.location is None:
            return
        problem = checksum_problem(chunk, version)
        if problem is not None:
            raise SourceChangedError(
                f"cannot read {key!r} of {self._url!r}: its virtual chunk source "
                f"{chunk.location!r} changed since it was referenced ({problem})"
            )

    # -- listing -----------------------------------------------------------------------

    async def _keys(self) -> list[str]:
        """Every key: the documents, and the chunk keys of every manifest (all read)."""
        await self._load()
        keys = list(self._meta)
        for prefix, (node, grammar) in self._arrays.items():
            keys.extend(await self._chunk_keys(prefix, node, grammar))
        return sorted(keys)

    async def _chunk_keys(self, prefix: str, node: Node, grammar: ChunkKeys) -> list[str]:
        manifests = await self._fetch_manifests({m.manifest_id for m in node.manifests})
        head = f"{prefix}/" if prefix else ""
        coords: set[tuple[int, ...]] = set()
        for manifest in manifests.values():
            coords.update(manifest.coords(node.node_id))
        return [head + grammar.key(c) for c in coords]

    async def _keys_below(self, prefix: str) -> list[str]:
        """The keys to list directory `prefix` with: the documents, and the chunk keys
        only of an array `prefix` lies in (listing a group reads no manifest)."""
        await self._load()
        head = prefix.strip("/")
        keys = list(self._meta)
        for path, (node, grammar) in self._arrays.items():
            if not path or head == path or head.startswith(f"{path}/"):
                keys.extend(await self._chunk_keys(path, node, grammar))
        return sorted(keys)

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        async for name, _ in self.list_dir_entries(prefix):
            yield name

    async def list_dir_entries(self, prefix: str) -> AsyncIterator[tuple[str, bool | None]]:
        for entry in dir_entries(await self._keys_below(prefix), prefix):
            yield entry

    def __getstate__(self) -> dict[str, Any]:
        """Pinned to the snapshot read, so every process (dask's workers) reads that one
        even where the branch moved since; manifests are read again where needed."""
        state = super().__getstate__()
        if self._snapshot is not None:
            state["_ref"], state["_as_of"] = ("snapshot", self._snapshot.id), None
        state["_conditional"] = {}
        state["_first_load"], state["_loading"] = None, {}  # futures of this process's loop
        return state

    def __repr__(self) -> str:
        kind, name = self._ref
        as_of = "" if self._as_of is None else f", as_of={self._as_of.isoformat()!r}"
        return f"IcechunkStore({self._url!r}, {kind}={name!r}{as_of})"


#: Held while a store takes the snapshot it indexed (a moment; shared, so that a store
#: pickles without a lock of its own); released in a forked child.
_FIRST_INDEX = fork_safe.lock()
#: The characters of icechunk's snapshot ids (Crockford base 32, as written).
_CROCKFORD = frozenset("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
#: The characters a spec-1 repository on local disk keeps as they are in a ref's name.
_LOCAL_SAFE = frozenset(chr(c) for c in range(32, 127)) - set('\\{^}%`]">[~<#|*?/')


def _chosen_ref(
    given: Mapping[str, Any],
) -> tuple[tuple[str, str], datetime.datetime | None]:
    """((kind, name) of the snapshot to read, as_of as an aware time or None) from the
    branch, tag, snapshot and as_of given (None: not given)."""
    named = {k: v for k, v in given.items() if v is not None and k != "as_of"}
    if len(named) > 1:
        raise StoreError(f"give one of branch, tag or snapshot, got {sorted(named)}")
    for kind, name in named.items():
        if not isinstance(name, str) or not name:
            raise StoreError(f"{kind} must be a non-empty name, got {name!r}")
    snapshot = named.get("snapshot")
    if snapshot is not None:  # Crockford base 32 is read in either case, as icechunk does
        snapshot = named["snapshot"] = snapshot.upper()
    if snapshot is not None and (len(snapshot) != 20 or not set(snapshot) <= _CROCKFORD):
        raise StoreError(
            f"snapshot {snapshot!r} is no icechunk snapshot id (20 characters of Crockford "
            "base 32, as `session.commit` returns): no such snapshot"
        )
    ref = next(iter(named.items()), ("branch", "main"))
    as_of = given.get("as_of")
    if as_of is None:
        return ref, None
    if ref[0] != "branch":
        raise StoreError(f"as_of goes with a branch, not a {ref[0]}")
    if isinstance(as_of, str):
        try:
            as_of = datetime.datetime.fromisoformat(as_of)
        except ValueError:
            raise StoreError(f"as_of: {as_of!r} is not an ISO 8601 time") from None
    if not isinstance(as_of, datetime.datetime):
        raise StoreError(f"as_of must be a datetime or its ISO 8601 text, got {as_of!r}")
    if as_of.tzinfo is None:
        as_of = as_of.replace(tzinfo=datetime.UTC)
    return ref, as_of


def _is_key(key: str) -> bool:
    try:
        check_key(key)
    except InvalidKeyError:
        return False
    return True


def local_ref_segment(name: str) -> str:
    """A branch's or tag's name as a spec-1 repository on local disk spells it in its
    `refs/` folder names: icechunk's local storage percent-encodes (UTF-8, uppercase
    hex) control characters, non-ASCII and `\\ { ^ } % ` ] " > [ ~ < # | * ? /` (icechunk
    refuses `/` in a ref name; it is encoded here so it never names a subfolder)."""
    return "".join(
        c if c in _LOCAL_SAFE else "".join(f"%{b:02X}" for b in c.encode()) for c in name
    )


def _document(node: Node, url: str) -> Mapping[str, Any]:
    try:
        doc = json.loads(node.zarr_json)
    except ValueError as error:
        raise MetadataError(f"{url}: node {node.path!r}: zarr.json is not JSON ({error})") from None
    if not isinstance(doc, Mapping):
        raise MetadataError(f"{url}: node {node.path!r}: zarr.json is not a JSON object")
    return doc
