"""The engines compared: aiozarr (async and sync), zarr-python (obstore, fsspec, and with
aiozarr's store and pipeline), TensorStore and zarrista, each behind the same small interface
the runner times.

Every engine module is imported lazily, so this file loads in an interpreter that lacks
some of them (the Python 3.12 venv has no TensorStore; the zarrista venv has only
zarrista, obstore and numpy).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

import numpy as np

from benchmarks import spec


class Engine:
    """One library reading and writing through the emulator at `endpoint`."""

    name = ""

    def __init__(self, endpoint: str, options: dict[str, Any]) -> None:
        self.endpoint = endpoint
        self.options = options

    def versions(self) -> dict[str, str]:
        raise NotImplementedError

    def open(self, path: str, zarr_format: int) -> Any:
        raise NotImplementedError

    def read(self, handle: Any, sel: Any) -> np.ndarray:
        raise NotImplementedError

    def cold_read(self, path: str, zarr_format: int, sel: Any) -> np.ndarray:
        """Open and read: what a fresh process pays."""
        return self.read(self.open(path, zarr_format), sel)

    def read_points(
        self, handle: Any, points: list[tuple[int, ...]]
    ) -> tuple[list[Any], list[float]]:
        """Each point read alone, in turn: the values and the seconds each took."""
        values, times = [], []
        for p in points:
            t0 = time.perf_counter()
            values.append(self.read(handle, p))
            times.append(time.perf_counter() - t0)
        return values, times

    def group_listing(self, path: str) -> list[tuple[str, tuple[int, ...], str]]:
        """Open the group and every array in it: `(name, shape, dtype)` per array."""
        raise NotImplementedError

    def write(self, path: str, data: np.ndarray, mode: spec.Mode) -> None:
        """Create a sharded array like the sharded dataset at `path` and write `data`."""
        raise NotImplementedError

    def close(self) -> None:
        """Stop what the engine runs in the background."""

    def obstore_options(self) -> dict[str, Any]:
        return spec.storage_options(self.endpoint)


# -- aiozarr -----------------------------------------------------------------------------------


class AiozarrAsync(Engine):
    """aiozarr's AsyncArray on one event loop (what an async service does)."""

    name = "aiozarr-async"

    def __init__(self, endpoint: str, options: dict[str, Any]) -> None:
        super().__init__(endpoint, options)
        import aiozarr

        self.aiozarr = aiozarr
        self.loop = asyncio.new_event_loop()
        # `aiozarr.config` settings every call runs under: `max_inflight_bytes`, and any
        # named in the option `config`
        self.settings = {k: v for k, v in options.items() if k == "max_inflight_bytes"}
        self.settings.update(options.get("config", {}))
        # A service's loop has one long-lived task; `run_until_complete` per call would
        # make each call the loop's root task, and anyio stops its worker threads (the
        # codec pool) when the root task ends, so every repeat would start them anew.
        self._jobs: asyncio.Queue[tuple[Any, asyncio.Future[Any]]] = asyncio.Queue()
        self._server = self.loop.create_task(self._serve())

    async def _serve(self) -> None:
        while True:
            coro, done = await self._jobs.get()
            try:
                with self.aiozarr.config.set(**self.settings):
                    done.set_result(await coro)
            except Exception as error:
                done.set_exception(error)

    def versions(self) -> dict[str, str]:
        return {"aiozarr": self.aiozarr.__version__}

    def close(self) -> None:
        self._server.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            self.loop.run_until_complete(self._server)
        self.loop.close()

    def _run(self, coro: Any) -> Any:
        done = self.loop.create_future()
        self._jobs.put_nowait((coro, done))
        return self.loop.run_until_complete(done)

    def _url(self, path: str) -> str:
        return f"s3://{spec.BUCKET}/{path}"

    async def _open(self, path: str, zarr_format: int) -> Any:
        # The format is named, as zarr-python and TensorStore (its driver) are told it.
        return await self.aiozarr.open_array_async(
            self._url(path),
            mode="r",
            zarr_format=zarr_format,
            storage_options=self.obstore_options(),
        )

    def open(self, path: str, zarr_format: int) -> Any:
        return self._run(self._open(path, zarr_format))

    def read(self, handle: Any, sel: Any) -> np.ndarray:
        return self._run(handle.getitem(sel))  # type: ignore[no-any-return]

    def cold_read(self, path: str, zarr_format: int, sel: Any) -> np.ndarray:
        async def go() -> Any:
            return await (await self._open(path, zarr_format)).getitem(sel)

        return self._run(go())  # type: ignore[no-any-return]

    def read_points(
        self, handle: Any, points: list[tuple[int, ...]]
    ) -> tuple[list[Any], list[float]]:
        async def go() -> tuple[list[Any], list[float]]:
            values, times = [], []
            for p in points:
                t0 = time.perf_counter()
                values.append(await handle.getitem(p))
                times.append(time.perf_counter() - t0)
            return values, times

        return self._run(go())  # type: ignore[no-any-return]

    def group_listing(self, path: str) -> list[tuple[str, tuple[int, ...], str]]:
        async def go() -> list[tuple[str, tuple[int, ...], str]]:
            group = await self.aiozarr.open_group_async(
                self._url(path), mode="r", storage_options=self.obstore_options()
            )
            return [(n, a.shape, str(a.dtype)) for n, a in await group.arrays()]

        return self._run(go())  # type: ignore[no-any-return]

    def write(self, path: str, data: np.ndarray, mode: spec.Mode) -> None:
        async def go() -> None:
            arr = await self.aiozarr.create_array_async(
                self._url(path),
                shape=mode.shape,
                dtype=spec.DTYPE,
                chunks=mode.inner_chunks,
                shards=mode.shards,
                fill_value=0.0,
                overwrite=True,
                storage_options=self.obstore_options(),
            )
            await arr.setitem(..., data)

        self._run(go())


class AiozarrSync(Engine):
    """aiozarr's sync facade (`aiozarr.open_array`), as a script or notebook uses it."""

    name = "aiozarr-sync"

    def __init__(self, endpoint: str, options: dict[str, Any]) -> None:
        super().__init__(endpoint, options)
        import aiozarr

        self.aiozarr = aiozarr

    def versions(self) -> dict[str, str]:
        return {"aiozarr": self.aiozarr.__version__}

    def open(self, path: str, zarr_format: int) -> Any:
        return self.aiozarr.open_array(
            f"s3://{spec.BUCKET}/{path}",
            mode="r",
            zarr_format=zarr_format,
            storage_options=self.obstore_options(),
        )

    def read(self, handle: Any, sel: Any) -> np.ndarray:
        return handle[sel]  # type: ignore[no-any-return]

    def group_listing(self, path: str) -> list[tuple[str, tuple[int, ...], str]]:
        group = self.aiozarr.open_group(
            f"s3://{spec.BUCKET}/{path}", mode="r", storage_options=self.obstore_options()
        )
        return [(n, a.shape, str(a.dtype)) for n, a in group.arrays()]

    def write(self, path: str, data: np.ndarray, mode: spec.Mode) -> None:
        arr = self.aiozarr.create_array(
            f"s3://{spec.BUCKET}/{path}",
            shape=mode.shape,
            dtype=spec.DTYPE,
            chunks=mode.inner_chunks,
            shards=mode.shards,
            fill_value=0.0,
            overwrite=True,
            storage_options=self.obstore_options(),
        )
        arr[...] = data


# -- zarr-python ------------------------------------------------------------------------------


class ZarrObstore(Engine):
    """zarr-python with its obstore-backed `ObjectStore`. Options: `concurrency` sets
    `async.concurrency` (zarr-python's default is 10); `store: "aiozarr"` reads through
    `aiozarr.zarr.Store` instead; `pipeline` sets `codec_pipeline.path` to
    `aiozarr.zarr.CodecPipeline` (zarr-python's own pipeline otherwise)."""

    name = "zarr-obstore"

    def __init__(self, endpoint: str, options: dict[str, Any]) -> None:
        super().__init__(endpoint, options)
        import zarr

        self.zarr = zarr
        if options.get("concurrency"):
            zarr.config.set({"async.concurrency": int(options["concurrency"])})
        if options.get("pipeline"):
            zarr.config.set({"codec_pipeline.path": "aiozarr.zarr.CodecPipeline"})

    def versions(self) -> dict[str, str]:
        import obstore

        found = {"zarr": self.zarr.__version__, "obstore": obstore.__version__}
        if self.options.get("store") == "aiozarr" or self.options.get("pipeline"):
            import aiozarr

            found["aiozarr"] = aiozarr.__version__
        return found

    def _store(self, read_only: bool) -> Any:
        if self.options.get("store") == "aiozarr":
            from aiozarr.zarr import Store

            return Store(
                f"s3://{spec.BUCKET}", storage_options=self.obstore_options(), read_only=read_only
            )
        from obstore.store import S3Store
        from zarr.storage import ObjectStore

        return ObjectStore(S3Store(spec.BUCKET, **self.obstore_options()), read_only=read_only)

    def open(self, path: str, zarr_format: int) -> Any:
        return self.zarr.open_array(self._store(True), path=path, mode="r", zarr_format=zarr_format)

    def read(self, handle: Any, sel: Any) -> np.ndarray:
        return handle[sel]  # type: ignore[no-any-return]

    def group_listing(self, path: str) -> list[tuple[str, tuple[int, ...], str]]:
        group = self.zarr.open_group(self._store(True), path=path, mode="r")
        return [(n, a.shape, str(a.dtype)) for n, a in group.arrays()]

    def _create(self, store: Any, path: str, mode: spec.Mode) -> Any:
        from zarr.codecs import ZstdCodec

        return self.zarr.create_array(
            store,
            name=path,
            shape=mode.shape,
            dtype=spec.DTYPE,
            chunks=mode.inner_chunks,
            shards=mode.shards,
            compressors=ZstdCodec(level=0),
            fill_value=0.0,
            overwrite=True,
        )

    def write(self, path: str, data: np.ndarray, mode: spec.Mode) -> None:
        arr = self._create(self._store(False), path, mode)
        arr[...] = data


class ZarrFsspec(ZarrObstore):
    """zarr-python through fsspec/s3fs (`s3://` URL with storage_options)."""

    name = "zarr-fsspec"

    def versions(self) -> dict[str, str]:
        import s3fs

        return {"zarr": self.zarr.__version__, "s3fs": s3fs.__version__}

    def _fsspec_store(self, read_only: bool) -> Any:
        from zarr.storage import FsspecStore

        return FsspecStore.from_url(
            f"s3://{spec.BUCKET}",
            read_only=read_only,
            storage_options={"endpoint_url": self.endpoint, "anon": True},
        )

    def _store(self, read_only: bool) -> Any:
        return self._fsspec_store(read_only)


# -- TensorStore ------------------------------------------------------------------------------


class TensorStore(Engine):
    """TensorStore's zarr3 / zarr drivers over its s3 kvstore, default context."""

    name = "tensorstore"

    def __init__(self, endpoint: str, options: dict[str, Any]) -> None:
        super().__init__(endpoint, options)
        import tensorstore as ts

        self.ts = ts

    def versions(self) -> dict[str, str]:
        from importlib.metadata import version

        return {"tensorstore": version("tensorstore")}

    def _kvstore(self, path: str) -> dict[str, Any]:
        return {
            "driver": "s3",
            "bucket": spec.BUCKET,
            "path": path.rstrip("/") + "/",
            "endpoint": self.endpoint,
            "aws_region": "us-east-1",
            "aws_credentials": {"type": "anonymous"},
        }

    def open(self, path: str, zarr_format: int) -> Any:
        driver = "zarr3" if zarr_format == 3 else "zarr"
        return self.ts.open({"driver": driver, "kvstore": self._kvstore(path)}, read=True).result()

    def read(self, handle: Any, sel: Any) -> np.ndarray:
        return handle[sel].read().result()  # type: ignore[no-any-return]

    def group_listing(self, path: str) -> list[tuple[str, tuple[int, ...], str]]:
        # TensorStore has no groups: read the group's own document (opening a group is
        # the workload) while listing the keys, then open every array concurrently.
        kv = self.ts.KvStore.open(self._kvstore(path)).result()
        group_doc = kv.read("zarr.json")
        keys = [k.decode() for k in kv.list().result()]
        if json.loads(group_doc.result().value).get("node_type") != "group":
            raise ValueError(f"{path} is not a group")
        names = sorted(
            k[: -len("/zarr.json")] for k in keys if k.endswith("/zarr.json") and k.count("/") == 1
        )
        futures = [
            self.ts.open({"driver": "zarr3", "kvstore": self._kvstore(f"{path}/{n}")}, read=True)
            for n in names
        ]
        arrays = [f.result() for f in futures]
        return [
            (n, tuple(a.shape), str(a.dtype.numpy_dtype))
            for n, a in zip(names, arrays, strict=False)
        ]

    def write(self, path: str, data: np.ndarray, mode: spec.Mode) -> None:
        little = {"name": "bytes", "configuration": {"endian": "little"}}
        metadata = {
            "shape": list(mode.shape),
            "data_type": spec.DTYPE,
            "fill_value": 0.0,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(mode.shards)}},
            "codecs": [
                {
                    "name": "sharding_indexed",
                    "configuration": {
                        "chunk_shape": list(mode.inner_chunks),
                        "codecs": [little, {"name": "zstd", "configuration": {"level": 0}}],
                        "index_codecs": [little, {"name": "crc32c"}],
                    },
                }
            ],
        }
        arr = self.ts.open(
            {"driver": "zarr3", "kvstore": self._kvstore(path), "metadata": metadata},
            create=True,
            delete_existing=True,
        ).result()
        arr.write(data).result()


# -- zarrista ---------------------------------------------------------------------------------


class Zarrista(Engine):
    """zarrista (zarrs in Rust) through its async API over an obstore `S3Store`, on one
    event loop; reads only (v3 arrays)."""

    name = "zarrista"

    def __init__(self, endpoint: str, options: dict[str, Any]) -> None:
        super().__init__(endpoint, options)
        import zarrista

        self.zarrista = zarrista
        self.loop = asyncio.new_event_loop()

    def versions(self) -> dict[str, str]:
        import obstore

        return {"zarrista": self.zarrista.__version__, "obstore": obstore.__version__}

    def close(self) -> None:
        self.loop.close()

    async def _open(self, path: str) -> Any:
        from obstore.store import S3Store

        store = S3Store(spec.BUCKET, prefix=path, **self.obstore_options())
        return await self.zarrista.AsyncArray.open(store, "/")

    def open(self, path: str, zarr_format: int) -> Any:
        if zarr_format != 3:
            raise NotImplementedError("the zarrista engine reads v3 arrays only")
        return self.loop.run_until_complete(self._open(path))

    @staticmethod
    def _numpy(tensor: Any, sel: Any) -> np.ndarray:
        # zarrista keeps an axis an integer selects (a zarrs array subset); numpy drops it
        out = np.asarray(tensor.to_numpy())
        keep = [not isinstance(s, int) for s in (sel if isinstance(sel, tuple) else (sel,))]
        keep += [True] * (out.ndim - len(keep))
        return out.reshape([n for n, k in zip(out.shape, keep, strict=True) if k])

    def read(self, handle: Any, sel: Any) -> np.ndarray:
        async def go() -> Any:  # zarrista makes its future on the running loop
            return await handle.retrieve_array_subset(sel)

        return self._numpy(self.loop.run_until_complete(go()), sel)

    def cold_read(self, path: str, zarr_format: int, sel: Any) -> np.ndarray:
        async def go() -> Any:
            return await (await self._open(path)).retrieve_array_subset(sel)

        if zarr_format != 3:
            raise NotImplementedError("the zarrista engine reads v3 arrays only")
        return self._numpy(self.loop.run_until_complete(go()), sel)

    def read_points(
        self, handle: Any, points: list[tuple[int, ...]]
    ) -> tuple[list[Any], list[float]]:
        async def go() -> tuple[list[Any], list[float]]:
            values, times = [], []
            for p in points:
                t0 = time.perf_counter()
                values.append(self._numpy(await handle.retrieve_array_subset(p), p))
                times.append(time.perf_counter() - t0)
            return values, times

        return self.loop.run_until_complete(go())  # type: ignore[no-any-return]


ENGINES: dict[str, type[Engine]] = {
    e.name: e for e in (AiozarrAsync, AiozarrSync, ZarrObstore, ZarrFsspec, TensorStore, Zarrista)
}
