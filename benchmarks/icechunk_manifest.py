"""`python -m benchmarks.icechunk_manifest`: what a large icechunk manifest costs to use.

Writes (with icechunk) a repository holding one array of `--rows` x 100 virtual chunks,
then times, for its manifest: opening it (decompressing and reading its tables), single
lookups (each a binary search), and reading every chunk's coordinates (a listing, or a
read of many chunks at once).

    python -m benchmarks.icechunk_manifest --rows 1000
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def main() -> None:
    import icechunk
    import zarr

    from aiozarr.storage.references.icechunk.format import parse_manifest, parse_snapshot

    parser = argparse.ArgumentParser(prog="python -m benchmarks.icechunk_manifest")
    parser.add_argument("--rows", type=int, default=1000, help="rows of 100 chunks")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        repo = icechunk.Repository.create(icechunk.local_filesystem_storage(folder))
        session = repo.writable_session("main")
        shape = (args.rows, 100)
        arr = zarr.create_array(session.store, name="v", shape=shape, chunks=(1, 1), dtype="f4")
        specs = [
            icechunk.VirtualChunkSpec(
                index=[i, j],
                location=f"s3://bucket/data/file{i // 10:04d}.nc",
                offset=4 * (i * 100 + j),
                length=4,
            )
            for i in range(args.rows)
            for j in range(100)
        ]
        session.store.set_virtual_refs(arr.path, specs, validate_containers=False)
        snapshot_id = session.commit("virtual")
        snapshot = parse_snapshot((Path(folder) / "snapshots" / snapshot_id).read_bytes(), "s")
        node = snapshot.nodes["/v"]
        (ref,) = node.manifests
        data = (Path(folder) / "manifests" / ref.manifest_id).read_bytes()
        start = time.perf_counter()
        manifest = parse_manifest(data, ref.manifest_id)
        opened = time.perf_counter() - start
        wanted = [(i, j) for i in range(0, args.rows, 7) for j in range(0, 100, 3)]
        start = time.perf_counter()
        for coords in wanted:
            manifest.get(node.node_id, coords)
        single = (time.perf_counter() - start) / len(wanted)
        start = time.perf_counter()
        every = manifest.coords(node.node_id)
        listed = time.perf_counter() - start
    print(
        f"{len(every)} references, {len(data)} bytes: opened in {opened * 1e3:.1f} ms, "
        f"{single * 1e6:.0f} us a lookup, every coordinate in {listed * 1e3:.0f} ms"
    )


if __name__ == "__main__":
    main()
