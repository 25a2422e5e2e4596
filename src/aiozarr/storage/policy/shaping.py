"""Request shaping: how many requests a read sends, of what size. The one place a change
to request size goes.

A caller says what it needs (these ranges of these keys; a shard of this size whose
index is not known yet; a value to upload); `RequestShape`, resolved once per read or
batch from the store's capabilities and the settings in force, decides:

- `part_bytes`: the size of a part where an object is cut (a store's own
  `max_request_bytes`, else the config's, grown to what the link moves in one round
  trip); `gap_bytes`: ranges of one key closer than this are one request (the config's,
  grown to what the link moves in the time one more request costs);
- `counts`: how many requests read each object or coalesced run: parts only where
  they pay (fewer objects than `connection_target` with the requests in flight);
- `groups`: a batch's wanted ranges as backend requests (`batching.py` sends them);
- `parts_ahead`: the parts of a shard sent beside its index, before the index says
  where its chunks lie;
- `batch_bytes`: the compressed bytes one batch of a read takes from the store's byte
  budget at once;
- `upload_part_bytes`: the part size of a multipart upload.

Pure: it reads settings and what the caller says of the store (the `Link` its recent
reads measured, the requests in flight), never the store itself.

Where the link is fast (a fast network, a store in the same region, the emulator), a
request costs more than the bytes a wider gap or a larger part moves: fewer, larger
requests win. Where one answer's body is slow (~90 MB/s per connection to S3), parts in
parallel win. Before a large read has measured the link, the config's sizes stand.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from aiozarr import config
from aiozarr.storage.policy import ranges
from aiozarr.storage.policy.backend import Capabilities, RangeRequest
from aiozarr.storage.policy.statistics import Link

__all__ = ["RequestShape"]

# S3 takes no part of a multipart upload smaller than 5 MiB but the last.
_MIN_UPLOAD_PART = 5 << 20
# What one more request costs, both ends (CPU per request and answer, a turn of a
# connection): 0.5-3 ms measured on two cores. A gap the link moves in less time is
# cheaper read than asked for apart.
_REQUEST_COST_S = 0.002
# The most the link's speed grows a gap or a part to: a gap's bytes are read for
# nothing, and a hedge copies a whole request.
_MAX_GAP_BYTES = 1 << 20
_MAX_PART_BYTES = 16 << 20


@dataclass(frozen=True, slots=True)
class RequestShape:
    """The request sizes and counts in force for one read, batch or upload."""

    #: Requests larger than this are cut into parts.
    part_bytes: int
    #: Ranges of one key closer than this are fetched as one request.
    gap_bytes: int
    #: Concurrent requests a read aims for: below it, large objects are read in parts.
    connection_target: int
    #: Parts of one object in flight at once.
    parts_per_object: int
    #: The share of a shard's decoded size read ahead of its index.
    read_ahead_fraction: float

    @classmethod
    def of(
        cls,
        capabilities: Capabilities,
        settings: config.Config | None = None,
        link: Link | None = None,
    ) -> RequestShape:
        """The shape for a store of `capabilities` under `settings` (default: those in
        force here) over a `link` as its recent reads measured it (None: not known).

        A store's own sizes stand as they are; the config's grow with a fast link: the
        gap to what the link moves in the time a request costs, a part to what one
        answer moves in the time another takes to begin.
        """
        s = config.get() if settings is None else settings
        own_part, own_gap = capabilities.max_request_bytes, capabilities.coalesce_gap_bytes
        part, gap = s.max_request_bytes, s.coalesce_gap_bytes
        if link is not None:
            rate = link.body_bytes_per_s
            gap = max(gap, min(int(rate * _REQUEST_COST_S), _MAX_GAP_BYTES))
            part = max(part, min(int(rate * link.wait_s), _MAX_PART_BYTES))
        return cls(
            part_bytes=max(1, part if own_part is None else own_part),
            gap_bytes=gap if own_gap is None else own_gap,
            connection_target=s.connection_target,
            parts_per_object=max(1, s.parts_per_object),
            read_ahead_fraction=s.read_ahead_fraction,
        )

    def counts(self, sizes: Sequence[int], busy: int = 0) -> list[int]:
        """How many requests read each of some objects (or coalesced runs of one) of
        `sizes` bytes, with `busy` requests of the same read already in flight.

        While they are fewer than `connection_target`, each is cut into parts of
        `part_bytes` (more connections, each part decoded as it lands); at the target or
        more, the objects alone keep that many connections busy and parts would only
        add requests (and their CPU): one request each.
        """
        if len(sizes) + busy >= self.connection_target:
            return [1] * len(sizes)
        return [max(1, -(-size // self.part_bytes)) for size in sizes]

    def groups(
        self, requests: Sequence[RangeRequest], by_key: dict[str, list[int]]
    ) -> list[tuple[str, list[int], int]]:
        """The requests of a batch (`by_key`: their indices per key) in groups, one
        backend request each, with the largest request each is read with: the coalesced
        runs of each key, in parts of `part_bytes` where parts pay (`counts`), else whole.
        """
        runs: list[tuple[str, list[int]]] = []
        for key, indices in by_key.items():
            wanted = [requests[i].byte_range for i in indices]
            for members in ranges.group(
                wanted, gap_bytes=self.gap_bytes, max_request_bytes=sys.maxsize
            ):
                runs.append((key, [indices[m] for m in members]))
        # The batch's own runs only: the store's requests in flight include the read's
        # own (the parts of a large shard read ahead of its index), which must not keep
        # the rest of that shard from its parts.
        counts = self.counts([_span(requests, members) for _, members in runs])
        out: list[tuple[str, list[int], int]] = []
        for (key, members), count in zip(runs, counts, strict=True):
            if count == 1:
                out.append((key, members, sys.maxsize))
                continue
            wanted = [requests[i].byte_range for i in members]
            for part in ranges.group(
                wanted, gap_bytes=self.gap_bytes, max_request_bytes=self.part_bytes
            ):
                out.append((key, [members[m] for m in part], self.part_bytes))
        return out

    def parts_ahead(self, decoded_nbytes: int, budget_bytes: int) -> int:
        """Parts of a shard of `decoded_nbytes` asked for before its index lands: those
        within `read_ahead_fraction` of its decoded size, at least one, at most one wave
        of `parts_per_object` and half the byte budget."""
        guess = math.ceil(decoded_nbytes * self.read_ahead_fraction / self.part_bytes)
        return max(1, min(guess, self.parts_per_object, budget_bytes // 2 // self.part_bytes))

    def batch_bytes(self, budget_bytes: int) -> int:
        """The bytes one batch of a read takes from a byte budget of `budget_bytes`:
        half, so a second batch can be on its way while the first is decoded."""
        return max(budget_bytes // 2, 1)

    @property
    def upload_part_bytes(self) -> int:
        """The part size of a multipart upload: `part_bytes`, at least S3's minimum."""
        return max(self.part_bytes, _MIN_UPLOAD_PART)


def _span(requests: Sequence[RangeRequest], members: list[int]) -> int:
    """The bytes one request for `members` (a coalesced run) moves; 0 where unknown."""
    bounded = [requests[i].byte_range for i in members]
    if any(r is None or r.end is None for r in bounded):
        return 0
    return max(r.end for r in bounded) - min(r.offset for r in bounded)  # type: ignore[union-attr]
