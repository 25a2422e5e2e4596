"""`aiozarr cp SRC DST`: copy an array or hierarchy between stores, optionally converting.

    aiozarr cp s3://old/data.zarr s3://new/data.zarr --zarr-format 3 --shards 512,512
    aiozarr cp ./v2.zarr ./v3.zarr --zarr-format 3 --chunks 64,64 --shards 1024,1024 \\
        --codec zstd:5 --resume

Streams one destination shard (or chunk) at a time, with a bounded amount of data in
memory; `--resume` skips what an interrupted copy already wrote and verified.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Literal

from aiozarr.cli.errors import run_command
from aiozarr.cli.options import Parser, add_transfer_options, parse_shape, positive
from aiozarr.cli.progress import ProgressDisplay, human_bytes, plural
from aiozarr.cli.storage_options import transfer_storage_options

__all__ = ["build_parser", "main"]

# The starts of the library's messages for a node at DST: there when looked for
# (placement.prepare_node), or created by another writer meanwhile (hierarchy.write_node).
# Hinted at only without --resume: resuming, the library says why a node cannot be kept.
_EXISTS = ("an array or group already exists", "an array or group was created at")


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The `cp` arguments, added to `parser` or a new parser."""
    parser = parser or Parser(
        prog="aiozarr cp",
        description="Copy an array or group between stores, optionally converting it.",
    )
    parser.add_argument("src", help="source path or URL")
    parser.add_argument("dst", type=_destination, help="destination path or URL")
    parser.add_argument("--src-path", default="", help="node inside the source store")
    parser.add_argument("--dst-path", default="", help="node inside the destination store")
    parser.add_argument(
        "--zarr-format",
        type=int,
        choices=(2, 3),
        default=None,
        help="write this format (default: the source's)",
    )
    parser.add_argument(
        "--chunks",
        type=parse_shape,
        default=None,
        metavar="N,N,...",
        help="chunk shape (the inner chunk when sharded)",
    )
    parser.add_argument(
        "--shards",
        type=_parse_shards,
        default=None,
        metavar="N,N,...",
        help="shard shape, a multiple of the chunk shape (Zarr v3); none: unsharded "
        "(default: the source's, kept with new --chunks that divide it)",
    )
    parser.add_argument(
        "--codec",
        default=None,
        metavar="NAME[:LEVEL]",
        help="compressor: zstd:5, gzip:6, blosc:lz4:5 or none",
    )
    existing = parser.add_mutually_exclusive_group()
    existing.add_argument(
        "--resume",
        action="store_true",
        help="keep what is at DST; skip units already copied and verified",
    )
    existing.add_argument("--overwrite", action="store_true", help="replace what is at DST")
    parser.add_argument(
        "--max-inflight-bytes",
        type=positive,
        default=None,
        metavar="BYTES",
        help="about this many decoded bytes in memory (default: config)",
    )
    add_transfer_options(parser)
    return parser


def _destination(text: str) -> str:
    """DST: anything but `memory://`, a process's memory, gone when the command ends."""
    if text.startswith("memory://"):
        raise argparse.ArgumentTypeError(f"{text!r} is memory: the copy would end with the command")
    return text


def _parse_shards(text: str) -> tuple[int, ...] | Literal[False] | None:
    """`--shards`: a shape, or `none` (False: write unsharded)."""
    return False if text.strip().lower() == "none" else parse_shape(text)


def main(argv: list[str] | None = None) -> int:
    """Entry point of `aiozarr cp`; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)

    async def body() -> int:
        from aiozarr.errors import NodeExistsError
        from aiozarr.tools.copying import copy_async

        options, dst_options = transfer_storage_options(args)
        with ProgressDisplay("copy", mode=args.progress, pieces="objects") as display:
            try:
                report = await copy_async(
                    args.src,
                    args.dst,
                    src_path=args.src_path,
                    dst_path=args.dst_path,
                    zarr_format=args.zarr_format,
                    chunks=args.chunks,
                    shards=args.shards,
                    codec=args.codec,
                    resume=args.resume,
                    overwrite=args.overwrite,
                    storage_options=options,
                    dst_storage_options=dst_options or {},
                    progress=display.copy_progress,
                    max_inflight_bytes=args.max_inflight_bytes,
                )
            except NodeExistsError as error:
                if args.resume or not str(error).startswith(_EXISTS):
                    raise
                raise NodeExistsError(
                    f"{error}: --overwrite replaces it, --resume keeps it and copies "
                    "what is not there yet"
                ) from error
        summary = {
            "arrays": report.arrays,
            "groups": report.groups,
            "chunks_written": report.chunks_written,
            "chunks_empty": report.chunks_empty,
            "chunks_skipped": report.chunks_skipped,
            "bytes_copied": report.bytes_copied,
            "seconds": round(report.seconds, 3),
        }
        if args.json:
            print(json.dumps(summary))
        else:
            rate = report.bytes_copied / max(report.seconds, 1e-9)
            print(
                f"copied {plural(report.arrays, 'array')}, {plural(report.groups, 'group')}: "
                f"{plural(report.chunks_written, 'object')} written (shards or chunks), "
                f"{report.chunks_empty} left out (all fill value), "
                f"{report.chunks_skipped} skipped (already there, verified), "
                f"{human_bytes(report.bytes_copied)} of values (decoded) in "
                f"{report.seconds:.2f} s ({human_bytes(rate)}/s)",
                file=sys.stdout,
            )
        return 0

    return run_command(parser.prog, args, body)
