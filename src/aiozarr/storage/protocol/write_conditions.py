"""Whether a store's write conditions can be trusted: asked of its server once.

A read-modify-write between processes is safe only if the server honours the condition
it is written on (`If-Match` with the version read; `If-None-Match: *` where nothing was
there) and every read carries the version to put in it. Some servers and proxies drop
conditions (or ETags) silently: the PUT then succeeds as if unconditional and another
writer's update is lost. So before the first read-modify-write on a store whose
conditions a server checks (`Capabilities.conditions_from_server`), the write path probes it,
on a key of its own that no one else names, so no user data is ever written over:

1. PUT `<array prefix>.aiozarr-probe-<random>`;
2. GET it: its version (none: the server's reads give nothing to condition on);
3. PUT it `If-Match` that version: must succeed (a server that refuses its own ETag
   would make every write conflict until `retry_deadline_s`);
4. PUT it `If-Match` that version again, now stale: must fail (412);
5. PUT it `If-None-Match: *`: must fail (412), it exists;
6. DELETE it (a failure here is logged, not raised: the verdict stands).

Six requests, once per store runtime (equal stores share it) for the life of the
process; concurrent first writers wait for one probe. A failure of the probe's own
requests (after their retries) fails the write and leaves the verdict open.

The probe's object lives under the array's prefix (the one place the write is known
to be allowed to write), so another writer deleting that prefix (`del group[name]`,
`create_array(overwrite=True)`, in any process) can remove it mid-probe. An outcome
that such a delete explains is inconclusive, never a verdict: the GET finding nothing,
a refused `If-Match` with the object gone, and a successful `If-None-Match: *` (the
object may have been deleted just before it; that one is recorded only when a second
probe, on a fresh key, sees it again). Inconclusive probes are repeated on fresh keys
up to `_PROBE_TRIES` times; if none concludes, the write fails and the verdict stays
open for the next write.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import anyio

from aiozarr import config
from aiozarr.errors import ConditionalWriteUnsupportedError, StoreError, VersionConflictError

if TYPE_CHECKING:
    from aiozarr.storage.protocol import Store, Versioned

__all__ = ["PROBE_NAME", "check_versions", "ensure_trusted"]

log = logging.getLogger("aiozarr.store")

#: The name (under the array's prefix) of a probe's object, followed by random hex.
PROBE_NAME = ".aiozarr-probe-"
# The write lock the probe holds (a NUL never starts a key): one probe at a time.
_PROBE_LOCK = "\x00conditional-write-probe"
# Probes (on fresh keys) while another writer's delete may have spoiled them: one
# spoiled probe is rare, three in a row mean a prefix being deleted over and over,
# where failing this write (and probing again on the next) is the honest answer.
_PROBE_TRIES = 3
_ADVICE = (
    ". Written without one, another process's update could be lost, so nothing was "
    "written; if no other process or machine writes here, set "
    "aiozarr.config.set(single_writer=True) (AIOZARR_SINGLE_WRITER=1)"
)


def _names(keys: Iterable[str]) -> str:
    names = sorted(keys)
    shown = ", ".join(repr(k) for k in names[:5])
    return shown + (f" and {len(names) - 5} more" if len(names) > 5 else "")


async def ensure_trusted(store: Store, prefix: str, keys: Iterable[str]) -> None:
    """Return once `store` is known to honour write conditions (probing it the first
    time); raise `ConditionalWriteUnsupportedError` naming `keys` (the values about to
    be read and merged into) if it does not. Nothing to do for stores that check their
    own conditions, or where `single_writer` is set."""
    caps = store.capabilities
    if not caps.conditional_writes or not caps.conditions_from_server or config.get().single_writer:
        return
    runtime = store.runtime
    verdict = runtime.conditions
    if not verdict.probed:
        async with runtime.locks.hold([_PROBE_LOCK]):
            if not verdict.probed:  # another writer's probe may have finished meanwhile
                verdict.record(await _verdict(store, prefix))
    if verdict.problem is not None:
        raise ConditionalWriteUnsupportedError(
            f"cannot write {_names(keys)} in {store!r} on a condition: {verdict.problem}" + _ADVICE
        )


def check_versions(store: Store, read: Mapping[str, Versioned | None]) -> None:
    """Raise `ConditionalWriteUnsupportedError` if a value in `read` (key -> (bytes,
    version), None: missing) came without the version a conditional write needs, on a
    store whose versions come from a server (unless `single_writer`)."""
    if not store.capabilities.conditions_from_server or config.get().single_writer:
        return
    unversioned = [key for key, answer in read.items() if answer is not None and answer[1] is None]
    if unversioned:
        raise ConditionalWriteUnsupportedError(
            f"cannot write {_names(unversioned)} in {store!r} on a condition: the read "
            "answered without a version (no ETag) to write on" + _ADVICE
        )


class _Inconclusive:
    """A probe another writer may have spoiled (deleting its object): `problem` is what
    the server seemed to do, to be recorded only if a fresh probe sees it again (None:
    the object vanished; nothing seen)."""

    def __init__(self, problem: str | None = None) -> None:
        self.problem = problem


_VANISHED = "the probe's object vanished mid-probe (another writer deleted it)"


async def _verdict(store: Store, prefix: str) -> str | None:
    """What to record of `store`'s server (None: it honours conditions), from probes
    repeated while inconclusive; raise `ConditionalWriteUnsupportedError`, recording
    nothing, if none of `_PROBE_TRIES` concludes."""
    seen: str | None = None
    for _ in range(_PROBE_TRIES):
        outcome = await _probe(store, prefix)
        if not isinstance(outcome, _Inconclusive):
            return outcome
        if outcome.problem is not None and outcome.problem == seen:
            return outcome.problem  # two fresh keys agree: not a delete's doing
        seen = outcome.problem
    raise ConditionalWriteUnsupportedError(
        f"cannot tell whether {store!r} honours write conditions: {_PROBE_TRIES} probes "
        f"under {prefix!r} were inconclusive ({seen or _VANISHED}), as when another writer "
        "is deleting that prefix; nothing was written and nothing recorded, so the next "
        "write probes again"
    )


async def _probe(store: Store, prefix: str) -> str | _Inconclusive | None:
    """Ask the server what it does with conditions, on a fresh key; None: it honours
    them; `_Inconclusive`: another writer may have deleted the probe's object."""
    key = f"{prefix}{PROBE_NAME}{secrets.token_hex(8)}"
    try:
        await store.set(key, b"aiozarr: a probe of conditional writes")
        answer = await store.get_versioned(key)
        if answer is None:  # just written, so deleted since
            return _Inconclusive()
        version = answer[1]
        if version is None:
            return "its reads carry no version (no ETag) to write on"
        if not await _written(store, key, b"aiozarr: written on its version", version):
            if await _vanished(store, key, version):  # 412 (or 404) for a missing object
                return _Inconclusive()
            return "it refused a PUT with If-Match of the version it had just given (412)"
        if await _written(store, key, b"aiozarr: written on a stale version", version):
            # A missing object fails If-Match as well: a delete cannot explain this.
            return "it ignores If-Match (a PUT on a replaced version succeeded)"
        if await _written(store, key, b"aiozarr: written where one exists", None):
            return _Inconclusive(
                "it ignores If-None-Match (a PUT with If-None-Match: * over an object "
                "succeeded, on two probes)"
            )
        return None
    finally:
        # Shielded: a write cancelled meanwhile (an anyio scope cancels again at every
        # wait) still removes the object it may have written.
        with anyio.CancelScope(shield=True):
            try:
                await store.delete(key)
            except Exception as exc:  # the verdict stands; a stray probe is harmless
                log.warning("could not remove the probe object %r in %r: %s", key, store, exc)


async def _vanished(store: Store, key: str, version: object) -> bool:
    """Whether the probe's object at `key` is gone or no longer `version`: a refused
    `If-Match` then says nothing about the server."""
    answer = await store.get_versioned(key)
    return answer is None or answer[1] != version


async def _written(store: Store, key: str, value: bytes, expected: object) -> bool:
    """Whether a PUT of `key` on condition `expected` went through (False: 412)."""
    try:
        await store.set_if(key, value, expected)
    except VersionConflictError:
        return False
    except StoreError as exc:  # refused outright (400, 501 ...): no verdict, try again later
        raise ConditionalWriteUnsupportedError(
            f"cannot tell whether {store!r} honours write conditions: a conditional PUT of "
            f"{key!r} failed: {exc}"
        ) from exc
    return True
