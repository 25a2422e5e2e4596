"""A range GET of an object store, from the options that ask for it to the bytes and
version of its answer; and `RangeSend`, such a GET awaited by callbacks rather than a
task (`ObjectStore.send_range`, for `storage/policy/pump.py`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from aiozarr.byte_range import ByteRange
from aiozarr.errors import StoreError
from aiozarr.storage.policy.backend import (
    Buffer,
    ObjectVersion,
    RangeListener,
    UnprovenVersion,
    Version,
    Versioned,
)
from aiozarr.storage.policy.retry import ShortReadError

__all__ = [
    "RECENT_S",
    "RangeSend",
    "answer_of",
    "check_encoding",
    "checked_body",
    "http_version",
    "is_weak",
    "range_options",
]

#: An HTTP answer whose Last-Modified is this close to the clock it is compared with
#: (the answer's Date, else this machine's, either way round) does not tell versions
#: apart: a rewrite within the same second may keep its validators (nginx's ETag is
#: "<mtime seconds>-<size>"). Wide enough to cover clocks a minute apart
#: (docs/decisions/storage.md, "Versions of plain HTTP answers").
RECENT_S = 60.0


def is_weak(e_tag: Any) -> bool:
    """Whether `e_tag` is a weak validator (`W/"..."`, RFC 9110 §8.8.3)."""
    return str(e_tag).lstrip()[:2] in ("W/", "w/")


def http_version(meta: Any) -> Version | None:
    """The version of a plain HTTP server's answer (obstore's `HTTPStore`), its ETag only
    where it is a strong validator, the value's size beside either way (`stored_size`:
    obstore takes it from the Content-Range total or the Content-Length). A weak ETag,
    no ETag, or no Last-Modified to judge it by (obstore's placeholder is the Epoch): an
    `UnprovenVersion` without one (unversioned: a shard index is read again by every
    read). An object last modified within `RECENT_S` of now (obstore gives no Date
    header: this machine's clock) has an `UnprovenVersion` with its ETag: a rewrite may
    keep it, so no later read relies on it, but one that changed it shows within a read."""
    e_tag, modified = meta.get("e_tag"), meta.get("last_modified")
    if e_tag is None or is_weak(e_tag) or modified is None or modified.timestamp() <= 0:
        return UnprovenVersion(None, None, None, meta.get("size"))
    kind = UnprovenVersion if abs(time.time() - modified.timestamp()) < RECENT_S else ObjectVersion
    return kind(e_tag, meta.get("version"), modified, meta.get("size"))


def range_options(byte_range: ByteRange | None) -> dict[str, Any]:
    """obstore's options for `byte_range`: bounded, a suffix, or from an offset to the
    end (None: the whole value, no options)."""
    if byte_range is None:
        return {}
    if byte_range.suffix is not None:
        return {"range": {"suffix": byte_range.suffix}}
    if byte_range.length is None:
        return {"range": {"offset": byte_range.offset}}
    return {"range": (byte_range.offset, byte_range.offset + byte_range.length)}


def check_encoding(key: str, result: Any) -> None:
    """Refuse (`StoreError`, final) a plain HTTP server's answer whose body is encoded
    (`Content-Encoding` other than identity, e.g. gzip): obstore hands such bytes on as
    they came, and they are not the value's. (An object store's Content-Encoding is
    metadata its uploader set, its bytes the object's: not checked.)"""
    attributes = getattr(result, "attributes", None) or {}
    encoding = str(attributes.get("Content-Encoding") or "identity").strip()
    if encoding.lower() != "identity":
        raise StoreError(
            f"cannot read {key!r}: the server answered with Content-Encoding: {encoding}, "
            "although asked for the stored bytes (Accept-Encoding: identity); aiozarr does "
            "not decode transfer encodings: serve the value unencoded"
        )


def checked_body(key: str, byte_range: ByteRange, result: Any, data: Buffer) -> Buffer:
    """`data`, unless it is shorter than the range its answer says it holds (its
    `Content-Range`): a body cut short, which obstore hands on as it is; then
    `ShortReadError`, which is retried."""
    start, stop = result.range
    got = memoryview(data).nbytes
    if got < stop - start:
        raise ShortReadError(
            f"cannot read {key!r}: {byte_range} answered bytes {start}-{stop - 1} with "
            f"{got} bytes of them"
        )
    return data


def answer_of(
    key: str,
    byte_range: ByteRange,
    result: Any,
    data: Buffer,
    version_of: Callable[[Any], Version | None],
) -> Versioned:
    """The bytes and version (`version_of` its meta) of a bounded or suffix range's
    answer, unless the body was cut short (`ShortReadError`, retried)."""
    data = checked_body(key, byte_range, result, data)
    meta = result.meta  # made anew on each ask
    if byte_range.length is not None:
        # The answer says where the value ends: a short answer is a clipped range
        # (fine) or a cut body, told apart without asking for the size again.
        stop = byte_range.offset + byte_range.length
        got_stop = byte_range.offset + len(data)
        size = meta["size"]
        if got_stop < stop and got_stop < size:
            raise ShortReadError(
                f"cannot read {key!r}: {byte_range} answered with {len(data)} bytes, "
                f"expected {min(stop, size) - byte_range.offset} (the value has {size})"
            )
    return data, version_of(meta)


class RangeSend:
    """One range GET sent: obstore's future of its headers, then of its body, each heard
    by a callback; `listener` is told what came (`answer` makes the bytes and version
    of the headers and body). Once cancelled it hears nothing more and reads no body,
    even where its headers had come and their callback was still to run."""

    __slots__ = ("_answer", "_byte_range", "_cancelled", "_future", "_key", "_listener", "_result")

    def __init__(
        self,
        key: str,
        byte_range: ByteRange,
        listener: RangeListener,
        future: Any,
        answer: Callable[[str, ByteRange, Any, Buffer], Versioned],
    ) -> None:
        self._key, self._byte_range, self._listener = key, byte_range, listener
        self._future, self._answer = future, answer
        self._result: Any = None
        self._cancelled = False
        future.add_done_callback(self._headers)

    def cancel(self) -> None:
        # A future already done takes no cancel: its callback, still to run, must not
        # begin the body of a read that is over (a hedge's loser would move it all).
        self._cancelled = True
        self._result = None
        self._future.cancel()

    def _headers(self, future: Any) -> None:
        if future.cancelled():
            return
        error = future.exception()  # retrieved even when cancelled: never logged as lost
        if self._cancelled:
            return
        if error is not None:
            self._listener.done(error)
            return
        self._result = future.result()
        self._listener.began()
        self._future = self._result.bytes_async()
        self._future.add_done_callback(self._body)

    def _body(self, future: Any) -> None:
        if future.cancelled():
            return
        error = future.exception()
        if self._cancelled:
            return
        answer: Versioned | BaseException
        if error is not None:
            answer = error
        else:
            try:
                answer = self._answer(self._key, self._byte_range, self._result, future.result())
            except Exception as failed:  # a body cut short; the listener hears it
                answer = failed
        self._result = None
        self._listener.done(answer)
