"""Finding, reading and writing node metadata (arrays and groups) in a store.

Each format (`metadata/formats.py`) says which documents it reads and how; this module
holds the store and runs their reads. Format detection costs one request for v3
(`zarr.json`) and one more batch, with every v2 key (and `.zmetadata`) fetched
concurrently, when there is no `zarr.json`; v1 and the 2020 v3 draft cost one batch
more, only when the v2 keys all miss. v1 and draft nodes are read only (chunks may be
written; metadata may not).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any, Literal

import anyio

from aiozarr import config
from aiozarr.errors import (
    ConditionalWriteUnsupportedError,
    InvalidKeyError,
    NodeExistsError,
    NodeNotFoundError,
    StoreError,
    ValueTooLargeError,
    VersionConflictError,
    WriteOutcomeUnknownError,
)
from aiozarr.metadata import consolidated, formats, v2, v3
from aiozarr.metadata.format_protocol import (
    Absent,
    Fetch,
    Format,
    Reading,
    ReadOptions,
    Step,
    Stored,
    join,
)
from aiozarr.metadata.json import placeholder
from aiozarr.metadata.model import ArrayMetadata, GroupMetadata, Node
from aiozarr.storage.protocol import RangeRequest, Store, Versioned, write_conditions

#: A v3 node's document (a name a group's listing skips).
V3_KEY = v3.ZARR_JSON

#: The metadata documents a group of each format keeps beside its members, by
#: `zarr_format`: the names its listing skips, as zarr-python's does.
DOCUMENT_NAMES: dict[int, frozenset[str]] = {
    2: frozenset((v2.ZARRAY, v2.ZGROUP, v2.ZATTRS, v2.ZMETADATA_KEY)),
    3: frozenset((V3_KEY,)),
}
RESERVED_NAMES = DOCUMENT_NAMES[2] | DOCUMENT_NAMES[3]  # no node's name, in either format
#: The documents that make a node one (its claim, written first, deleted first); the
#: others (v2 `.zattrs`, `.zmetadata`) are no node without one.
CLAIM_NAMES = frozenset((v2.ZARRAY, v2.ZGROUP, V3_KEY))


class NodeLocation:
    """Where an array or group lives: its store and its path in it."""

    _store: Store
    _path: str

    @property
    def store(self) -> Store:
        return self._store

    @property
    def path(self) -> str:
        return self._path

    @property
    def name(self) -> str:
        """The absolute name, `/path`."""
        return "/" + self._path


def normalize_path(path: str) -> str:
    """A node path without leading/trailing slashes ("" is the root)."""
    return "/".join(part for part in path.split("/") if part)


def check_node_path(path: str) -> None:
    """Raise `InvalidKeyError` when a name in `path` is a metadata document's name, of
    either format (`zarr.json`, `.zarray`, `.zgroup`, `.zattrs`, `.zmetadata`)."""
    # Such a node is never listed, and its folder takes its parent's document's place
    # (a group `.zattrs` left the parent's attributes unwritable).
    for name in path.split("/"):
        if name in RESERVED_NAMES:
            raise InvalidKeyError(
                f"invalid node name {name!r} in {path!r}: it is the name of a Zarr metadata "
                f"document ({', '.join(sorted(RESERVED_NAMES))}), which no array or group may have"
            )


def metadata_request(key: str) -> RangeRequest:
    """The read of one metadata document: whole, at most `max_metadata_bytes`."""
    return RangeRequest(key, None, config.get().max_metadata_bytes)


@contextlib.contextmanager
def metadata_bound() -> Iterator[None]:
    """Say which setting bounds a metadata document that was refused as too large."""
    try:
        yield
    except ValueTooLargeError as exc:
        raise ValueTooLargeError(
            f"{exc} (metadata documents are limited by the max_metadata_bytes setting, "
            "AIOZARR_MAX_METADATA_BYTES)"
        ) from None


async def get_document(store: Store, key: str) -> object | None:
    """One metadata document's bytes (None if missing), refused past `max_metadata_bytes`."""
    with metadata_bound():
        return await store.get(key, max_bytes=config.get().max_metadata_bytes)


async def get_documents(store: Store, keys: list[str]) -> list[Any]:
    """`get_document` of each key, in one batch."""
    with metadata_bound():
        return await store.get_partial_values([metadata_request(k) for k in keys])


async def read_node(
    store: Store,
    path: str,
    zarr_format: Literal[1, 2, 3] | None = None,
    *,
    use_consolidated: bool = True,
    array_only: bool = False,
) -> Node:
    """The metadata of the node at `path`; `NodeNotFoundError` when there is none.

    Without `zarr_format`: `zarr.json` and `.zmetadata` first, in one batch (a v3 node,
    or a consolidated v2 group, opens in that one round trip), then the v2 node's keys
    in one batch, then (only when those all miss) the v1 keys and the 2020 draft's
    documents in one more batch (the stages of `formats.py`).
    A group with consolidated metadata comes back with its members' metadata (unless
    `use_consolidated` is False). With `array_only` (the caller opens an array) a v2 read
    asks for `.zarray` and `.zattrs` alone, and for `.zgroup` only when there is no
    `.zarray`.
    """
    use_consolidated = use_consolidated and not array_only
    options = ReadOptions(zarr_format, use_consolidated, array_only, opening=True)
    (node,) = await _read_nodes(store, [path], options)
    if node is not None:
        return node
    asked = formats.numbered(zarr_format)
    missing = None if asked is None else asked.not_found(path)
    if asked is not None and missing is not None:
        raise NodeNotFoundError(
            f"no {asked.name} array or group at {path or '/'!r} ({missing}) in {store!r}"
        )
    raise NodeNotFoundError(f"no Zarr array or group at {path or '/'!r} in {store!r}")


async def read_members(
    store: Store, path: str, names: list[str], zarr_format: Literal[2, 3]
) -> dict[str, Node | None]:
    """The metadata of each child `names` of the group at `path` (None: no node there),
    read in one batch however many names there are: each child's `zarr.json` (v3), or
    its `.zarray`, `.zattrs`, `.zgroup` and `.zmetadata` (v2), as `read_node` with that
    format would read them one child at a time."""
    children = [join(path, name) for name in names]
    nodes = await _read_nodes(store, children, ReadOptions(zarr_format), batch=True)
    return dict(zip(names, nodes, strict=True))


#: The v2 node in its documents read, by name (the xarray backend reads a group's
#: documents with v3's in one batch, and parses them with this).
parse_v2 = v2.parse_documents


class _Run:
    """One format's read of one node: the step it waits on (None: done), the stage that
    step waits for (None: none), the answer read for it and not yet sent, and its node
    once done."""

    __slots__ = ("answer", "node", "reading", "stage", "step")

    def __init__(self, reading: Reading) -> None:
        self.reading = reading
        self.node: Node | None = None
        self.answer: list[Any] | None = None
        self.send(None)

    def send(self, answer: Any) -> None:
        try:
            step = self.reading.send(answer)
        except StopIteration as done:
            self.step, self.stage, self.node = None, None, done.value
        else:
            self.step = step
            self.stage = step.stage if isinstance(step, Fetch) else None

    def due(self, stage: int) -> bool:
        """Whether its step is to be answered now, at `stage`."""
        return self.step is not None and (self.stage is None or self.stage <= stage)


async def _read_nodes(
    store: Store,
    paths: list[str],
    options: ReadOptions,
    *,
    batch: bool = False,
    read: dict[str, Versioned | None] | None = None,
) -> list[Node | None]:
    """Run the formats' reads of every path, a detection stage at a time: a format starts
    at its stage, unless the path already has a node; the steps due at one stage go out
    in one batch (a key two formats ask for, once); then each path's formats go on in
    their order (follow-ups read at once) until one has a node. With `batch`, even a
    single document is read as a batch; with `read`, every document read is put there
    with its version (`_answer`)."""
    asked = [fmt for fmt in formats.FORMATS if options.zarr_format in fmt.asked_by]
    runs: list[list[_Run | None]] = [[None] * len(asked) for _ in paths]
    found: list[Node | None] = [None] * len(paths)
    live = list(range(len(paths)))
    stage = min((fmt.stage for fmt in asked), default=None)
    try:
        while stage is not None and live:
            now = []
            for i in live:
                node_runs = runs[i]
                for j, fmt in enumerate(asked):
                    if fmt.stage == stage:
                        node_runs[j] = _Run(fmt.read(paths[i], options))
                    run = node_runs[j]
                    if run is not None and run.due(stage):
                        now.append(run)
            steps = [run.step for run in now]
            answers = await _answer(store, steps, batch, read)  # type: ignore[arg-type]
            for run, answer in zip(now, answers, strict=True):
                run.answer = answer  # sent in the formats' order: the first node wins
            for i in live:
                got = _settle(runs[i], stage)
                while isinstance(got, _Run):  # a follow-up step: read it alone
                    (got.answer,) = await _answer(store, [got.step], read=read)  # type: ignore[list-item]
                    got = _settle(runs[i], stage)
                if got is not None:
                    found[i], runs[i] = got, []  # let its reads go now, not with the last path
            live = [i for i in live if found[i] is None]
            stage = _next_stage(asked, [runs[i] for i in live], stage)
    except Absent as absent:
        raise NodeNotFoundError(f"{absent} {store!r}") from None
    finally:
        for node_runs in runs:
            _close(node_runs)
    return found


def _next_stage(asked: list[Format], runs: list[list[_Run | None]], stage: int) -> int | None:
    """The next stage anything waits for, after `stage`: a format still to start, or a
    step parked."""
    later = [fmt.stage for fmt in asked if fmt.stage > stage]
    for node_runs in runs:
        later += [run.stage for run in node_runs if run is not None and run.stage is not None]
    return min(later, default=None)


def _settle(node_runs: list[_Run | None], stage: int) -> Node | _Run | None:
    """Send one path's formats their answers in their order until one has a node (the
    others then stop) or has a follow-up step due (returned, to be answered)."""
    for run in node_runs:
        if run is None:
            continue
        if run.answer is not None:
            answer, run.answer = run.answer, None
            run.send(answer)
        if run.due(stage):
            return run
        if run.node is not None:
            _close(node_runs)
            return run.node
    return None


def _close(runs: list[_Run | None]) -> None:
    for run in runs:
        if run is not None and run.step is not None:
            run.reading.close()
            run.step = run.stage = None


async def _answer(
    store: Store,
    steps: list[Step],
    batch: bool = False,
    read: dict[str, Versioned | None] | None = None,
) -> list[Any]:
    """The answer to each step: the documents of every `Fetch` (`Stored`, None when
    missing) read as one plain read when there is one key in all (unless `batch`), else
    as one batch, each key once; the keys below each `ListKeys` prefix. With `read`, the
    documents are read with their versions, and put there by key (None: missing)."""
    keys = list(dict.fromkeys(k for step in steps if isinstance(step, Fetch) for k in step.keys))
    data: list[Any] = []
    if read is not None and keys:
        with metadata_bound():
            got = await store.get_versioned_values([metadata_request(k) for k in keys])
        read.update(zip(keys, got, strict=True))
        data = [None if answer is None else answer[0] for answer in got]
    elif len(keys) == 1 and not batch:
        data = [await get_document(store, keys[0])]
    elif keys or any(isinstance(step, Fetch) for step in steps):
        data = await get_documents(store, keys)
    stored = {k: None if d is None else Stored(k, d) for k, d in zip(keys, data, strict=True)}
    answers: list[Any] = []
    for step in steps:
        if isinstance(step, Fetch):
            answers.append([stored[k] for k in step.keys])
        else:
            answers.append([key async for key in store.list_prefix(step.prefix)])
    return answers


async def read_versioned(
    store: Store, path: str, like: Node
) -> tuple[Node | None, dict[str, Versioned | None]]:
    """The node at `path` read again, in the format of `like` (an array's documents alone
    when `like` is an array; a group's consolidated metadata kept), with every document
    read and its version by key (None: missing). The node is None when there is none of
    `like`'s kind there."""
    is_array = isinstance(like, ArrayMetadata)
    options = ReadOptions(formats.format_of(like).zarr_format, True, is_array)  # type: ignore[arg-type]
    read: dict[str, Versioned | None] = {}
    (node,) = await _read_nodes(store, [path], options, read=read)
    return (node if isinstance(node, ArrayMetadata) == is_array else None), read


def consolidated_member(group: GroupMetadata, name: str) -> Node | None:
    """The member `name` (a relative path) as the group's consolidated metadata gives it."""
    members = group.consolidated
    if members is None or name not in members:
        return None
    node = members[name]
    if isinstance(node, GroupMetadata):
        node = dataclasses.replace(node, consolidated=consolidated.subtree(members, name))
    return node


def consolidated_names(group: GroupMetadata) -> list[str] | None:
    """The direct members' names from consolidated metadata, sorted; None without it."""
    if group.consolidated is None:
        return None
    return sorted(p for p in group.consolidated if "/" not in p)


def metadata_key(path: str, meta: ArrayMetadata) -> str:
    """The key of the document `meta` was read from (named in errors and warnings)."""
    return formats.format_of(meta).metadata_key(path, meta)


def chunk_prefix(path: str, meta: ArrayMetadata) -> str:
    """The key prefix of the array's chunks: `path/`, or `data/root/path/` in the draft."""
    return formats.format_of(meta).chunk_prefix(path, meta)


def node_documents(path: str, meta: Node) -> dict[str, bytes]:
    """The keys and documents that store `meta` at `path`."""
    return formats.format_of(meta).documents(path, meta)


async def write_node(store: Store, path: str, meta: Node, *, unfinished: bool = False) -> None:
    """Store the metadata of a new node: `NodeExistsError` when another writer created
    one there since `prepare_node` looked.

    The node's claim (`zarr.json`; v2: `.zarray` or `.zgroup`) is written first, only
    if absent (`create_document`), so of creators racing for one path exactly one wins:
    the others' handles would otherwise write chunks in a layout no longer stored. Its
    other documents (a v2 `.zattrs`) follow, once the node is this writer's. With
    `unfinished` the claim is a placeholder no reader opens (`json.placeholder`) and
    nothing follows: `finish_node` writes the documents once the chunks are written.
    Where a v2 `.zattrs` follows (written, or deleted as stale), a claim found holding
    its bytes after a lost answer is `WriteOutcomeUnknownError` (another creator's, its
    `.zattrs` would go); a v3 `zarr.json` is the whole node, so such a claim is ours.
    """
    fmt = formats.format_of(meta)
    docs = fmt.documents(path, meta)
    claim = _claim_key(fmt, path, meta)
    doc = docs.pop(claim)
    if unfinished:
        doc, docs = placeholder(doc, claim), {}
    stale = fmt.stale_keys(path, meta)
    try:
        created = await create_document(store, claim, doc, owned=bool(docs or stale))
    except WriteOutcomeUnknownError as error:
        raise WriteOutcomeUnknownError(
            f"{error}; the node at {path or '/'!r} may be another writer's identical one, so "
            f"{', '.join([*docs, *stale])} was left as found (neither written nor deleted): "
            "read the node (single_writer=True: no other writer exists)"
        ) from error
    if not created:
        raise NodeExistsError(
            f"an array or group was created at {path or '/'!r} in {store!r} by another "
            "writer meanwhile"
        )
    try:
        # Only now: deleted before the claim, a `.zattrs` a winning creator wrote would go.
        for key in stale:
            await store.delete(key)
        await store.set_many(docs.items())
    except BaseException as error:
        with anyio.CancelScope(shield=True):
            await _take_back(store, path, claim, docs, error)
        raise


async def _take_back(
    store: Store, path: str, claim: str, docs: dict[str, bytes], error: BaseException
) -> None:
    """Delete the claim of a node whose other documents failed (or were cancelled), then
    those documents: left, the node stood created without its attributes, and the
    create run again raised `NodeExistsError`. Says on `error` what was left."""
    try:
        await store.delete(claim)
    except Exception as undo:  # the store still refusing: say what stays
        error.add_note(
            f"the node at {path or '/'!r} stays created without {', '.join(docs)}: its "
            f"{claim!r} could not be deleted again ({undo})"
        )
        return
    error.add_note(f"nothing was created at {path or '/'!r}: its {claim!r} was deleted again")
    with contextlib.suppress(Exception):  # not a node without its claim
        await store.delete_many(docs)


async def finish_node(store: Store, path: str, meta: Node) -> None:
    """Replace the placeholder `write_node(..., unfinished=True)` left with the node's
    documents, its claim last: until then no reader opens the node."""
    fmt = formats.format_of(meta)
    docs = fmt.documents(path, meta)
    claim = _claim_key(fmt, path, meta)
    doc = docs.pop(claim)
    await store.set_many(docs.items())
    await store.set(claim, doc)


def _claim_key(fmt: Format, path: str, meta: Node) -> str:
    return fmt.metadata_key(path, meta) if isinstance(meta, ArrayMetadata) else fmt.group_key(path)


async def create_document(store: Store, key: str, doc: bytes, *, owned: bool = False) -> bool:
    """Write `doc` at `key` only if there is none there; False (nothing written) if there
    is. On the store's condition (If-None-Match: *, or the local store's `flock`) where
    it has one; where it has none, or its server is known not to honour it, a read and a
    write under the key's lock in this process (other processes may still race).
    `owned`: who wrote it matters (`set_if(claim=True)`, unless `single_writer`): a try
    whose answer was lost is `WriteOutcomeUnknownError`, even where `doc` is there."""
    if store.supports_conditional_writes and store.runtime.conditions.problem is None:
        claim = owned and not config.get().single_writer
        try:
            await store.set_if(key, doc, None, claim=claim)
        except WriteOutcomeUnknownError:
            if claim:
                raise
            return False
        except VersionConflictError:
            return False
        except StoreError:
            if not await _conditions_refused(store, key):
                raise
        else:
            return True
    async with store.runtime.locks.hold([key]):
        if await get_document(store, key) is not None:
            return False
        await store.set(key, doc)
        return True


async def _conditions_refused(store: Store, key: str) -> bool:
    """Whether a conditional write that failed failed because the server takes no
    conditions (a probe says so, `write_conditions.ensure_trusted`): such a server
    still creates nodes, as it did before creation was conditional."""
    prefix = key.rpartition("/")[0]
    try:
        await write_conditions.ensure_trusted(store, f"{prefix}/" if prefix else "", [key])
    except ConditionalWriteUnsupportedError:
        return True
    return False


def overlapping(a: Store, a_path: str, b: Store, b_path: str) -> bool:
    """Whether node `a_path` of store `a` and node `b_path` of `b` are one node or one
    lies inside the other (the same data, whatever each store's read-only flag or where
    each is rooted: a group's store and one opened at an array inside it): a copy that
    replaces the second would delete what it reads from the first."""
    (a_space, a_prefix), (b_space, b_prefix) = a.key_space(), b.key_space()
    if a_space != b_space:
        return False
    a_parts = [part for part in (a_prefix + a_path).split("/") if part]
    b_parts = [part for part in (b_prefix + b_path).split("/") if part]
    n = min(len(a_parts), len(b_parts))
    return a_parts[:n] == b_parts[:n]


async def existing_node(store: Store, path: str) -> Node | None:
    """The node at `path`; None where there is none."""
    try:
        return await read_node(store, path)
    except NodeNotFoundError:
        return None
