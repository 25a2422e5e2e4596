"""Changing a node's stored metadata without losing another writer's change.

Every change of an existing node's metadata (a resize, an append's growth, attributes)
is a pure function from the metadata as stored to the metadata wanted (`Apply`).
`update_node` reads the node's documents with their versions, applies the change to
what it read, and writes each document that changed on the condition that it is still
the version read (If-Match; If-None-Match where it was missing), as chunk writes do
(`engine/write.py`). When another writer came first, it reads again and applies the
change to what that writer stored, so both changes land; after `MAX_ATTEMPTS` tries, or
`retry_deadline_s`, it raises `VersionConflictError` naming the keys. A change that does
not fit what is stored any more (an append whose other dimensions another writer
changed) raises `VersionConflictError` too, and nothing is written; one that does not
fit the handle's own metadata is refused before any I/O. A group's documents include
the one holding its consolidated metadata (v2's `.zmetadata`), so a change of its own
attributes or members reaches the snapshot readers take them from, on its version too.

The read is the handle's own, made as the change starts: a handle's cached metadata
(possibly from a group's consolidated snapshot) is never written back. Within a process
the documents' keys are locked for the read-apply-write (`storage/policy/locks.py`), so
handles of one store never conflict with each other; a store that cannot write on a
condition is written unconditionally, protected by those locks alone.
docs/decisions/failure-model.md says why and what a reader sees.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

import anyio

from aiozarr import config
from aiozarr.codecs import CodecChain
from aiozarr.engine.entry import WriteSettings
from aiozarr.errors import (
    AiozarrError,
    NodeNotFoundError,
    UnfinishedNodeError,
    VersionConflictError,
    WriteOutcomeUnknownError,
    unwrap_group,
)
from aiozarr.metadata import formats
from aiozarr.metadata.format_protocol import Format
from aiozarr.metadata.model import ArrayMetadata, GroupMetadata, Node
from aiozarr.nodes import hierarchy
from aiozarr.storage.protocol import Store, Versioned, write_conditions

__all__ = [
    "MAX_ATTEMPTS",
    "Change",
    "as_built",
    "merged_attributes",
    "replaced_attributes",
    "replaced_in_snapshots",
    "replaced_member",
    "snapshots_above",
    "until_current",
    "update_node",
    "with_consolidated",
    "without_attributes",
    "write_consolidated",
]

N = TypeVar("N", bound=Node)

#: Tries of one change (the first included) before `VersionConflictError`.
MAX_ATTEMPTS = 50

#: The document a v2 `.zattrs` holds when there are no attributes: written in place of a
#: delete where the store cannot delete on a condition.
_EMPTY_ATTRIBUTES = b"{}"


@dataclass(frozen=True, slots=True)
class Change(Generic[N]):
    """A committed change: the metadata it was applied to, and the metadata stored."""

    before: N
    after: N


#: The change: the metadata as stored -> the metadata wanted (pure; may raise).
Apply = Callable[[N], N]
#: Run after the change is applied and before it is written, with (before, after).
Prepare = Callable[[N, N], Awaitable[None]]


async def update_node(
    store: Store,
    path: str,
    like: N,
    apply: Apply[N],
    prepare: Prepare[N] | None = None,
    *,
    claim: bool = False,
) -> Change[N]:
    """Apply `apply` to the stored metadata of the node at `path` (of `like`'s format and
    kind) and store the result; on another writer's change, apply it again to theirs.

    `prepare(before, after)` runs before each try's write (a resize deletes the chunks it
    leaves outside). `claim`: the change must be known to be this call's, not only its
    result (an append's growth claims the rows it adds; two appends growing one shape
    by as much write the same document), unless `single_writer`. Returns the change as
    committed.
    """
    fmt = formats.format_of(like)
    # A read-only format refuses here, before any I/O, and so does a change that does
    # not fit the metadata the handle holds.
    shown = ", ".join(repr(k) for k in fmt.documents(path, like))
    apply(like)
    keys = fmt.node_keys(path)  # the same for an array and a group: one lock per node
    settings = WriteSettings.of()
    claim = claim and not config.get().single_writer
    started = time.monotonic()
    async with store.runtime.locks.hold(keys):
        for attempt in range(MAX_ATTEMPTS):
            before, read = await hierarchy.read_versioned(store, path, like)
            if before is None:
                before = _missing(store, path, like, read)
            if isinstance(like, ArrayMetadata):
                _check_same_array(like, before, shown, store)  # type: ignore[arg-type]
            after = _reapplied(apply, before, shown, store)
            if prepare is not None:
                await prepare(before, after)  # type: ignore[arg-type]
            try:
                await _write_changed(store, path, before, after, read, claim)
            except WriteOutcomeUnknownError as exc:  # applied again, it could apply twice
                raise WriteOutcomeUnknownError(
                    f"the change of the metadata {shown} in {store!r} may or may not have "
                    f"been made: {exc}; read the node to see what it holds"
                ) from None
            except VersionConflictError:
                pass
            else:
                return Change(before, after)  # type: ignore[arg-type]
            if time.monotonic() - started > settings.retry_deadline_s:
                break
            await settings.back_off(attempt)
    raise VersionConflictError(
        f"could not change the metadata {shown} in {store!r} "
        f"after {attempt + 1} tries in {time.monotonic() - started:.1f} s: other writers "
        "kept changing it"
    )


def _missing(store: Store, path: str, like: N, read: Mapping[str, Versioned | None]) -> N:
    """What a change applies to where the node has no document: a group's is created (a v3
    group can be implicit); an array is gone (`NodeNotFoundError`). A node of the other
    kind there (another writer replaced the group by an array) is a `NodeNotFoundError`
    too: a group document written on its version would replace the array's."""
    if isinstance(like, ArrayMetadata):
        raise NodeNotFoundError(f"the array at {path or '/'!r} is no longer in {store!r}")
    if any(read.get(key) is not None for key in formats.format_of(like).node_keys(path)):
        raise NodeNotFoundError(
            f"the group at {path or '/'!r} is no longer in {store!r}: another writer put "
            "an array there; open it again"
        )
    return GroupMetadata(zarr_format=like.zarr_format)  # type: ignore[return-value]


def _check_same_array(like: ArrayMetadata, stored: ArrayMetadata, shown: str, store: Store) -> None:
    """`VersionConflictError` where the array stored is no longer the handle's: another
    writer created it again with another data type, fill value, grid or codecs. A
    change applied to it would mix the two (an append encoded for the old dtype, a
    handle reporting the new one), so nothing is written; shape and attributes may
    differ (another writer's resize, append or attributes)."""
    if _layout(like) != _layout(stored) or not _same_edges(like, stored):
        raise VersionConflictError(
            f"cannot change the metadata {shown} in {store!r}: another writer created "
            "the array again with another data type, fill value, chunk grid or codecs; "
            "open it again to change it"
        )


def _layout(meta: ArrayMetadata) -> dict[str, object]:
    """What of the array's document decides how its chunks are stored and read."""
    doc = as_built(meta, leave_out=("shape", "attributes", "dimension_names"))
    if meta.chunk_grid is not None:
        doc.pop("chunk_grid", None)  # edges past the end change as it grows (compared above)
    return doc


def as_built(meta: ArrayMetadata, leave_out: Iterable[str] = ()) -> dict[str, object]:
    """The array's document but `leave_out`, its codecs as built, each in its one
    spelling: another writer's document (TensorStore's) leaves out members at their
    defaults (`index_location`), which must not read as another layout."""
    doc = meta.to_dict()
    for key in leave_out:
        doc.pop(key, None)
    if meta.zarr_format == 3:
        try:
            chain = CodecChain.from_metadata(meta)
        except AiozarrError:  # codecs this process cannot build: compared as written
            return doc
        doc["codecs"] = chain.to_metadata()
    return doc


def _same_edges(like: ArrayMetadata, stored: ArrayMetadata) -> bool:
    """Whether two rectilinear grids (or two regular ones) agree where both arrays are."""
    if like.chunk_grid is None or stored.chunk_grid is None:
        return like.chunk_grid is stored.chunk_grid
    common = tuple(min(a, b) for a, b in zip(like.shape, stored.shape, strict=True))
    return like.chunk_grid.sizes_within(common) == stored.chunk_grid.sizes_within(common)


def _reapplied(apply: Apply[N], before: N, shown: str, store: Store) -> N:
    """`apply(before)`; a change that fitted the handle's metadata but does not fit what
    is stored now (another writer changed it) is a `VersionConflictError`."""
    try:
        return apply(before)
    except AiozarrError as error:
        raise VersionConflictError(
            f"cannot change the metadata {shown} in {store!r}: "
            f"another writer changed it, and the change no longer applies: {error}"
        ) from error


async def _write_changed(
    store: Store,
    path: str,
    before: Node,
    after: Node,
    read: Mapping[str, Versioned | None],
    claim: bool,
) -> None:
    """Write the documents of `after` that differ from those of `before`, each on the
    condition that it is still the version `read` gave; delete (on that condition) the
    ones `after` no longer has. `VersionConflictError` at the first that changed."""
    fmt = formats.format_of(after)
    old, new = _documents(fmt, path, before), _documents(fmt, path, after)
    changed = {k: doc for k, doc in new.items() if old.get(k) != doc or read.get(k) is None}
    changed.update(_behind(fmt.documents(path, after), new, read))
    gone = [k for k in old if k not in new]  # v2's `.zmetadata` of a snapshot dropped
    stale = [k for k in [*fmt.stale_keys(path, after), *gone] if read.get(k) is not None]
    if not changed and not stale:
        return
    conditional = store.supports_conditional_writes
    if conditional:
        await write_conditions.ensure_trusted(store, f"{path}/" if path else "", [*changed, *stale])
        write_conditions.check_versions(store, {k: read.get(k) for k in [*changed, *stale]})
    for key, doc in changed.items():
        await _put(store, key, doc, read.get(key), conditional, claim)
    for key in stale:
        if not conditional:
            await store.delete(key)
        elif store.supports_conditional_deletes:
            await store.delete_if(key, read[key][1])  # type: ignore[index]
        elif key in gone:  # a snapshot has no empty form; whoever keeps one rewrites it
            await store.delete(key)
        else:  # an empty document, written on its condition, says what a delete would
            await _put(store, key, _EMPTY_ATTRIBUTES, read[key], conditional, claim)


def _behind(
    own: Mapping[str, bytes], new: Mapping[str, bytes], read: Mapping[str, Versioned | None]
) -> dict[str, bytes]:
    """The documents of `new` outside the node's `own` (v2's `.zmetadata`) whose stored
    form says other than `new`: a change whose write of one failed after the node's own
    documents were written left it behind them, and the same change run again, comparing
    only what it read, found nothing to write (readers kept seeing the old attributes)."""
    behind = {}
    for key, doc in new.items():
        answer = read.get(key)
        if key in own or answer is None:
            continue
        if _canonical(bytes(answer[0])) != _canonical(doc):
            behind[key] = doc
    return behind


def _canonical(doc: bytes) -> str | None:
    """`doc` as JSON written one way (keys sorted; a NaN equal to a NaN); None where it
    is not JSON."""
    try:
        return json.dumps(json.loads(doc), sort_keys=True)
    except ValueError:
        return None


def _documents(fmt: Format, path: str, node: Node) -> dict[str, bytes]:
    """The documents that store `node`: its own and, for a group holding consolidated
    metadata, the one that holds it. A v2 group's is `.zmetadata`, from which readers take
    the group's own attributes and its list of members: left as it was, an attribute
    update would not be seen and a deleted member would come back (zarr-python rewrites
    it too). A v3 group's is its `zarr.json`, already among its own."""
    docs = fmt.documents(path, node)
    if isinstance(node, GroupMetadata) and node.consolidated is not None:
        docs.update(fmt.consolidated_documents(path, node, node.consolidated))
    return docs


async def _put(
    store: Store, key: str, doc: bytes, before: Versioned | None, conditional: bool, claim: bool
) -> None:
    if not conditional or (before is not None and before[1] is None):
        # No condition to write on: the store has none, or (single_writer) no version.
        await store.set(key, doc)
    else:
        await store.set_if(key, doc, None if before is None else before[1], claim=claim)


def merged_attributes(attributes: Mapping[str, object]) -> Apply[N]:
    """The change that merges `attributes` into the attributes as stored."""
    update = dict(attributes)
    return lambda meta: dataclasses.replace(meta, attributes={**meta.attributes, **update})


def replaced_attributes(attributes: Mapping[str, object]) -> Apply[N]:
    """The change that replaces the attributes as stored with `attributes`."""
    new = dict(attributes)
    return lambda meta: dataclasses.replace(meta, attributes=dict(new))


def without_attributes(names: Iterable[str]) -> Apply[N]:
    """The change that removes the attributes `names` from those as stored."""
    gone = set(names)
    return lambda meta: dataclasses.replace(
        meta, attributes={k: v for k, v in meta.attributes.items() if k not in gone}
    )


def with_consolidated(members: Mapping[str, Node] | None) -> Apply[GroupMetadata]:
    """The change that makes `members` the group's consolidated metadata (None: none)."""
    return lambda meta: dataclasses.replace(meta, consolidated=members)


async def snapshots_above(
    store: Store,
    path: str,
    *,
    including: bool = False,
    zarr_format: int | None = None,
    readable: bool = False,
) -> dict[str, GroupMetadata]:
    """The groups above `path` (and at it, `including`) that hold consolidated metadata,
    nearest first, all read at once: the snapshots that list what is written there
    (groups of `zarr_format` only, when given: one request each for v3; with `readable`,
    a group whose document does not read is passed over, not an error)."""
    parts = path.split("/") if path else []
    depths = range(len(parts) + 1) if including else range(len(parts))
    groups = ["/".join(parts[:depth]) for depth in reversed(depths)]
    held: dict[str, GroupMetadata] = {}

    async def read(group: str) -> None:
        try:
            node = await hierarchy.read_node(store, group, zarr_format)  # type: ignore[arg-type]
        except (NodeNotFoundError, UnfinishedNodeError):  # none, implicit, an array's
            return
        except AiozarrError:
            if readable:  # no snapshot this process reads: none to keep current
                return
            raise
        if isinstance(node, GroupMetadata) and node.consolidated is not None:
            held[group] = node

    with unwrap_group():
        async with anyio.create_task_group() as tg:
            for group in groups:
                tg.start_soon(read, group)
    return {group: held[group] for group in groups if group in held}


def _at_or_below(path: str, member: str) -> bool:
    return path == member or path.startswith(member + "/")


def replaced_member(member: str, node: Node | None) -> Apply[GroupMetadata]:
    """The change that takes `member` (a path relative to the group) and everything below
    it out of the group's consolidated metadata and, where the snapshot listed `member`,
    puts `node` in its place (None: the member was deleted). A snapshot that lists none
    of them is left as it is: members created since it was taken stay out of it."""

    def apply(meta: GroupMetadata) -> GroupMetadata:
        members = meta.consolidated
        if members is None or not any(_at_or_below(p, member) for p in members):
            return meta
        kept = {p: m for p, m in members.items() if not _at_or_below(p, member)}
        if node is not None and member in members:
            kept[member] = node
        return dataclasses.replace(meta, consolidated=kept)

    return apply


async def replaced_in_snapshots(
    store: Store, path: str, node: Node | None, *, below: str | None = None
) -> bool:
    """Make every snapshot above `path` that lists the node there (or anything below it)
    list `node` in its place (None: the node was deleted), nearest first; with `below`,
    only the snapshots above that group. A node replaced (`overwrite=True`) or deleted
    has chunks of another layout, or none: a snapshot still listing the old metadata
    read the new chunks through it (wrong values) or the deleted ones as fill values.
    Returns whether any snapshot listed it."""
    above = path if below is None else below
    fmt = None if node is None else node.zarr_format  # a node's parents are of its format
    held = await snapshots_above(store, above, zarr_format=fmt, readable=True)
    listed = False
    for group, meta in held.items():
        member = path[len(group) + 1 :] if group else path
        if meta.consolidated and any(_at_or_below(p, member) for p in meta.consolidated):
            await update_node(store, group, meta, replaced_member(member, node))
            listed = True
    return listed


async def write_consolidated(
    store: Store, path: str, group: GroupMetadata, members: Mapping[str, Node]
) -> None:
    """Store `members` as the consolidated metadata of the group at `path` (of `group`'s
    format) through `update_node`, on the version of the documents they go in (v3 the
    group's `zarr.json`, v2 its `.zmetadata` beside `.zattrs`), keeping the attributes
    another writer stored meanwhile."""
    formats.format_of(group).consolidated_documents(path, group, members)  # or refused
    await update_node(store, path, group, with_consolidated(members))


async def until_current(store_once: Callable[[], Awaitable[bool]], where: str) -> None:
    """Run `store_once` (store a group's snapshot, then say whether the members read
    after it are those it holds) again until it says so: a member another writer added
    or deleted between the walk and the write is not left out of (or in) the snapshot.
    `VersionConflictError` naming `where` when other writers kept changing the group."""
    settings = WriteSettings.of()
    started = time.monotonic()
    for attempt in range(MAX_ATTEMPTS):
        if await store_once():
            return
        if time.monotonic() - started > settings.retry_deadline_s:
            break
        await settings.back_off(attempt)
    raise VersionConflictError(
        f"the consolidated metadata of {where} may miss changes: other writers kept "
        f"changing the group after {attempt + 1} tries"
    )
