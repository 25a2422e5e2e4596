"""`aiozarr migrate SRC DST`: rewrite a v1 array or a 2020-draft / v2 hierarchy as Zarr v3 or v2.

    aiozarr migrate old_draft.zarr new.zarr                  # whole hierarchy -> Zarr v3
    aiozarr migrate s3://bucket/v2.zarr ./v3.zarr --consolidate
    aiozarr migrate ./v1_array ./v2_array --zarr-format 2

Chunks keep their grid; their stored bytes are copied unchanged wherever the target
format can describe the same encoding, and re-encoded otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from aiozarr.cli.errors import run_command
from aiozarr.cli.options import Parser, add_transfer_options
from aiozarr.cli.progress import ProgressDisplay, human_bytes, plural
from aiozarr.cli.storage_options import transfer_storage_options

__all__ = ["build_parser", "main"]


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The `migrate` arguments, added to `parser` or a new parser."""
    parser = parser or Parser(
        prog="aiozarr migrate",
        description="Rewrite a Zarr v1 array, or a 2020-draft or v2 array or hierarchy, "
        "as Zarr v3 (or v2).",
    )
    parser.add_argument("src", help="source path or URL")
    parser.add_argument("dst", help="destination path or URL")
    parser.add_argument("--src-path", default="", help="node inside the source store")
    parser.add_argument("--dst-path", default="", help="node inside the destination store")
    parser.add_argument(
        "--zarr-format", type=int, choices=(2, 3), default=3, help="write this format (3)"
    )
    parser.add_argument("--overwrite", action="store_true", help="replace what is at DST")
    parser.add_argument(
        "--consolidate",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="write consolidated metadata for a group (default: when the source has it)",
    )
    add_transfer_options(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of `aiozarr migrate`; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)

    async def body() -> int:
        from aiozarr.tools.migration import MigrateProgress, migrate_async

        options, dst_options = transfer_storage_options(args)
        last: list[MigrateProgress] = []
        started = time.perf_counter()
        with ProgressDisplay("migrate", mode=args.progress) as display:

            def progress(state: MigrateProgress) -> None:
                last[:] = [state]
                display.copy_progress(state)

            node = await migrate_async(
                args.src,
                args.dst,
                src_path=args.src_path,
                dst_path=args.dst_path,
                zarr_format=args.zarr_format,
                overwrite=args.overwrite,
                consolidate=args.consolidate,
                storage_options=options,
                dst_storage_options=dst_options or {},
                progress=progress,
            )
        seconds = time.perf_counter() - started
        state = last[-1]
        summary = {
            "node": "array" if hasattr(node, "shape") else "group",
            "zarr_format": args.zarr_format,
            "arrays": state.arrays,
            "groups": state.groups,
            "chunks_copied": state.chunks_copied,
            "chunks_reencoded": state.chunks_reencoded,
            "bytes": state.bytes_done,
            "seconds": round(seconds, 3),
        }
        if args.json:
            print(json.dumps(summary))
        else:
            print(
                f"migrated {plural(state.arrays, 'array')}, {plural(state.groups, 'group')} "
                f"to Zarr v{args.zarr_format}: {state.chunks_copied} chunks copied as stored, "
                f"{state.chunks_reencoded} re-encoded, {human_bytes(state.bytes_done)} "
                f"in {seconds:.2f} s",
                file=sys.stdout,
            )
        return 0

    return run_command(parser.prog, args, body)
