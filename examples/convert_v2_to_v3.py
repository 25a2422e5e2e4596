"""Convert a Zarr v2 dataset to sharded Zarr v3 with `aiozarr cp`.

Needs the base install only: `pip install -e .` in a checkout of aiozarr (it is not
on the package index yet; `pip wheel --no-deps .` builds a wheel to install elsewhere).

    python examples/convert_v2_to_v3.py

Writes a v2 group (two arrays of 100 x 100-element chunks) to the bundled emulator, then
runs the one command that converts it, streaming shard by shard:

    aiozarr cp s3://bucket/era.zarr s3://bucket/era-v3.zarr \\
        --zarr-format 3 --shards 1000,1000 --codec zstd:5 -o endpoint=... (emulator)

and shows the result with `aiozarr info` / `aiozarr tree`. Run the `cp` again with
`--resume` after an interruption: units already written and verified are skipped.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import tempfile

import numpy as np

import aiozarr
from aiozarr.emulator import Emulator


def cli(*args: str, options: list[str]) -> None:
    command = [sys.executable, "-m", "aiozarr", *args, *options]
    print("$ aiozarr " + " ".join(shlex.quote(a) for a in args) + " -o ... (emulator)")
    subprocess.run(command, check=True)


def main() -> None:
    with (
        tempfile.TemporaryDirectory(prefix="aiozarr-") as root,
        Emulator(root).running_in_thread() as emulator,
    ):
        options = emulator.storage_options()
        cli_options = [f"-o{k}={v}" for k, v in options.items() if not isinstance(v, dict)]
        cli_options += ["-oclient_options.allow_http=true"]
        src, dst = emulator.s3_url("era.zarr"), emulator.s3_url("era-v3.zarr")

        group = aiozarr.open_group(src, mode="w", zarr_format=2, storage_options=options)
        rng = np.random.default_rng(0)
        data = {
            "t2m": (280 + 10 * rng.standard_normal((2000, 2000))).astype("f4"),
            "precip": rng.gamma(0.5, size=(2000, 2000)).astype("f4"),
        }
        for name, values in data.items():
            arr = group.create_array(
                name, shape=values.shape, dtype=values.dtype, chunks=(100, 100), zarr_format=2
            )
            arr[...] = values

        cli(
            "cp",
            src,
            dst,
            "--zarr-format",
            "3",
            "--shards",
            "1000,1000",
            "--codec",
            "zstd:5",
            "--progress",
            "plain",
            options=cli_options,
        )
        cli("tree", dst, options=cli_options)
        cli("info", dst, "--path", "t2m", options=cli_options)

        converted = aiozarr.open_group(dst, mode="r", storage_options=options)
        for name, values in data.items():
            assert np.array_equal(converted[name][...], values), name
        print("values equal: v2 -> sharded v3 conversion is exact")


if __name__ == "__main__":
    main()
