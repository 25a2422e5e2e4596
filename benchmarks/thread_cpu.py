"""The CPU time of this process's threads, by kind, from `/proc/self/task/*/schedstat`
(nanoseconds; `stat`'s ticks are 10 ms). Linux only: elsewhere there are no threads
to read and every kind spent nothing.

Kinds: the main thread (named by the caller: the event loop's in an async benchmark,
the caller's under the sync API), "loop" (the sync API's background loop),
"obstore" (obstore's runtime: tokio's workers and blocking pool) and "codec" (the rest:
aiozarr's codec pool).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

Snapshot = dict[int, tuple[str, int]]


def snapshot(main: str) -> Snapshot:
    """Nanoseconds on the CPU so far of each thread of this process, with its kind
    (`main` for the main thread's)."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    found: Snapshot = {}
    try:
        tids = [int(entry) for entry in os.listdir("/proc/self/task")]
    except OSError:  # no /proc
        return found
    for tid in tids:
        try:
            ran = int(Path(f"/proc/self/task/{tid}/schedstat").read_text().split()[0])
            comm = Path(f"/proc/self/task/{tid}/comm").read_text().strip()
        except OSError:
            continue  # ended meanwhile
        if tid == os.getpid():
            kind = main
        elif names.get(tid) == "aiozarr-loop":
            kind = "loop"
        else:
            kind = "obstore" if "tokio" in comm else "codec"
        found[tid] = (kind, ran)
    return found


def spent_ms(before: Snapshot, after: Snapshot) -> dict[str, float]:
    """Milliseconds on the CPU of each kind of thread between two snapshots."""
    spent: dict[str, float] = {}
    for tid, (kind, ran) in after.items():
        spent[kind] = spent.get(kind, 0.0) + (ran - before.get(tid, (kind, 0))[1]) / 1e6
    return spent
