"""Write the benchmark datasets with zarr-python (so the bytes are not aiozarr's) and the
manifest of expected checksums; list the stored chunks a selection needs (for the probes).

    benchmarks/data/<mode>/sharded.zarr  unsharded.zarr  v2.zarr  big_shard.zarr
                           group.zarr  group_consolidated.zarr  source.npy  manifest.json
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import spec

MANIFEST = "manifest.json"
SOURCE = "source.npy"
_VERSION = 2  # bump when the datasets change, so cached copies are rewritten


def ensure(mode: spec.Mode, root: Path) -> dict[str, Any]:
    """The manifest of `root`, writing the datasets first when missing or stale."""
    manifest_path = root / MANIFEST
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("version") == _VERSION and manifest.get("mode") == mode.name:
            return manifest  # type: ignore[no-any-return]
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    data = spec.generate(mode)
    np.save(root / SOURCE, data)
    versions = _write_arrays(mode, root, data)
    _write_groups(mode, root)
    expected = {w: spec.checksum(data[spec.selection(w, mode)]) for w in ("full", "slab", "drill")}
    big = spec.generate(mode, mode.big_shape)
    _write_big_shard(mode, root, big)
    expected["large_shard"] = spec.checksum(big[spec.selection("large_shard", mode)])
    del big
    expected["random"] = spec.checksum([data[p] for p in spec.random_points(mode)])
    entries = [
        (f"a{i:03d}", spec.group_member_shape(i), spec.DTYPE) for i in range(mode.group_arrays)
    ]
    expected["group"] = spec.group_listing_checksum(entries)
    manifest = {
        "version": _VERSION,
        "mode": mode.name,
        "written_by": versions,
        "expected": expected,
        "nbytes": mode.nbytes,
    }
    manifest_path.write_text(json.dumps(manifest, indent=1))
    return manifest


def _write_arrays(mode: spec.Mode, root: Path, data: np.ndarray) -> dict[str, str]:
    import numcodecs
    import zarr
    from zarr.codecs import BloscCodec, ZstdCodec  # noqa: F401  (v3 codecs)

    common = {"shape": mode.shape, "dtype": spec.DTYPE, "fill_value": 0.0}
    sharded = zarr.create_array(
        str(root / spec.ARRAYS["sharded"]),
        chunks=mode.inner_chunks,
        shards=mode.shards,
        compressors=ZstdCodec(level=0),
        **common,
    )
    sharded[...] = data
    unsharded = zarr.create_array(
        str(root / spec.ARRAYS["unsharded"]),
        chunks=mode.chunks,
        compressors=ZstdCodec(level=0),
        **common,
    )
    unsharded[...] = data
    v2 = zarr.create_array(
        str(root / spec.ARRAYS["v2"]),
        chunks=mode.chunks,
        zarr_format=2,
        compressors=numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE),
        **common,
    )
    v2[...] = data
    return {"zarr": zarr.__version__, "numcodecs": numcodecs.__version__}


def _write_big_shard(mode: spec.Mode, root: Path, data: np.ndarray) -> None:
    """Two time steps, each one shard of `mode.big_shard`: reading a step reads a shard whole."""
    import zarr
    from zarr.codecs import ZstdCodec

    arr = zarr.create_array(
        str(root / spec.ARRAYS["big_shard"]),
        shape=mode.big_shape,
        dtype=spec.DTYPE,
        fill_value=0.0,
        chunks=mode.inner_chunks,
        shards=mode.big_shard,
        compressors=ZstdCodec(level=0),
    )
    arr[...] = data


def _write_groups(mode: spec.Mode, root: Path) -> None:
    import zarr

    for name, consolidate in (("group", False), ("group_consolidated", True)):
        path = str(root / spec.GROUPS[name])
        group = zarr.open_group(path, mode="w")
        for i in range(mode.group_arrays):
            shape = spec.group_member_shape(i)
            group.create_array(
                f"a{i:03d}", shape=shape, chunks=shape, dtype=spec.DTYPE, attributes={"index": i}
            )
        if consolidate:
            zarr.consolidate_metadata(path)


# -- what a selection reads, for the limit probes -------------------------------------------


def needed_chunks(mode: spec.Mode, root: Path, dataset: str, workload: str) -> list[dict[str, Any]]:
    """Every stored chunk a read workload touches: `{key, start, stop, out, chunk}` where
    key/start/stop locate its compressed bytes in the bucket, `out` is the slice of the
    array it fills (as [start, stop] pairs) and `chunk` its shape."""
    sel = spec.selection(workload, mode)
    shape, chunk, shards = mode.layout(dataset)
    box = [
        (0, n) if s == slice(None) else ((s.start, s.stop) if isinstance(s, slice) else (s, s + 1))
        for s, n in zip(sel, shape, strict=False)
    ]
    ranges = [range(lo // c, -(-hi // c)) for (lo, hi), c in zip(box, chunk, strict=False)]
    path = spec.ARRAYS[dataset]
    found = []
    for coords in np.ndindex(*(len(r) for r in ranges)):
        idx = tuple(r[i] for r, i in zip(ranges, coords, strict=False))
        out = [[i * c, min((i + 1) * c, n)] for i, c, n in zip(idx, chunk, shape, strict=False)]
        if shards != chunk:
            key, start, stop = _inner_chunk_location(chunk, shards, root / path, idx)
        else:
            sep = "/" if dataset == "unsharded" else "."
            name = ("c/" if dataset == "unsharded" else "") + sep.join(map(str, idx))
            key = f"{path}/{name}"
            start, stop = 0, (root / key).stat().st_size
        found.append({"key": key, "start": start, "stop": stop, "out": out, "chunk": chunk})
    return found


_index_cache: dict[Path, bytes] = {}


def _inner_chunk_location(
    chunks: tuple[int, ...], shards: tuple[int, ...], array_dir: Path, idx: tuple[int, ...]
) -> tuple[str, int, int]:
    per = [s // c for s, c in zip(shards, chunks, strict=False)]
    shard = [i // p for i, p in zip(idx, per, strict=False)]
    inner = [i % p for i, p in zip(idx, per, strict=False)]
    file = array_dir / "c" / "/".join(map(str, shard))
    if file not in _index_cache:
        n = int(np.prod(per))
        raw = file.read_bytes()
        _index_cache[file] = raw[len(raw) - (16 * n + 4) :]  # index at the end, crc32c last
    position = int(np.ravel_multi_index(inner, per))
    offset, nbytes = struct.unpack_from("<QQ", _index_cache[file], 16 * position)
    key = f"{array_dir.name}/c/" + "/".join(map(str, shard))
    return key, offset, offset + nbytes
