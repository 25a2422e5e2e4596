"""The zstd decoder that keeps a context per thread: numcodecs' bytes, refused frames."""

from __future__ import annotations

import threading
from pathlib import Path

import numcodecs
import numpy as np
import pytest

import aiozarr
from aiozarr.codecs.zstd import ZstdCodec, decompress_into
from aiozarr.errors import CodecError

RAW = np.round(np.random.default_rng(3).normal(15, 3, 65536), 2).astype("<f4").tobytes()


@pytest.mark.parametrize("level", [0, 3, -5])
@pytest.mark.parametrize("checksum", [False, True])
def test_decodes_what_numcodecs_writes(level: int, checksum: bool) -> None:
    codec = ZstdCodec(level=level, checksum=checksum)
    frame = numcodecs.Zstd(level=level, checksum=checksum).encode(RAW)
    assert codec.encode(RAW, None) == frame  # the bytes zarr-python writes
    out = bytearray(len(RAW))
    codec.decode_into_buffer(frame, out)
    assert out == RAW
    assert bytes(codec.decode(frame, None)) == RAW


def test_frames_one_after_another_fill_the_output() -> None:
    half = len(RAW) // 2
    z = numcodecs.Zstd()
    out = bytearray(len(RAW))
    decompress_into(memoryview(z.encode(RAW[:half]) + z.encode(RAW[half:])), memoryview(out))
    assert out == RAW


def test_a_frame_of_unrecorded_size_that_overflows_is_refused() -> None:
    import zstandard

    frame = zstandard.ZstdCompressor(write_content_size=False).compress(RAW)
    with pytest.raises(CodecError, match="more than"):
        decompress_into(memoryview(frame), memoryview(bytearray(len(RAW) - 4)))
    with pytest.raises(CodecError, match="expected"):
        decompress_into(memoryview(frame), memoryview(bytearray(len(RAW) + 4)))


def test_corrupt_and_truncated_frames_are_codec_errors() -> None:
    frame = numcodecs.Zstd().encode(RAW)
    out = bytearray(len(RAW))
    with pytest.raises(CodecError):
        ZstdCodec().decode_into_buffer(frame[: len(frame) // 2], out)
    with pytest.raises(CodecError):
        ZstdCodec().decode_into_buffer(frame[:8] + bytes(64), out)


@pytest.mark.parametrize("cut", [1, 2, 4])
def test_a_frame_cut_inside_its_checksum_is_refused(cut: int, tmp_path: Path) -> None:
    """Every content byte is there, the checksum is not: zstandard's stream reader
    filled the output and said nothing, so a truncated chunk read as whole."""
    frame = numcodecs.Zstd(checksum=True).encode(RAW)
    with pytest.raises(CodecError, match="truncated"):
        ZstdCodec(checksum=True).decode_into_buffer(frame[:-cut], bytearray(len(RAW)))
    values = np.frombuffer(RAW, "<f4")
    arr = aiozarr.create_array(
        tmp_path,
        shape=values.shape,
        dtype="<f4",
        chunks=values.shape,
        compressors=[{"name": "zstd", "configuration": {"checksum": True}}],
    )
    arr[:] = values
    chunk = tmp_path / "c" / "0"
    chunk.write_bytes(chunk.read_bytes()[:-cut])
    with pytest.raises(CodecError, match=r"'c/0'.*truncated"):
        arr[:]


def test_skippable_frames_and_frames_back_to_back_still_decode() -> None:
    half = len(RAW) // 2
    z = numcodecs.Zstd(checksum=True)
    skippable = (0x184D2A53).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"abc"
    data = skippable + z.encode(RAW[:half]) + skippable + z.encode(RAW[half:])
    out = bytearray(len(RAW))
    decompress_into(memoryview(data), memoryview(out))
    assert out == RAW


def test_threads_decode_at_once_each_with_its_own_context() -> None:
    chunks = [RAW[i:] + RAW[:i] for i in range(0, 4096, 512)]
    frames = [numcodecs.Zstd().encode(c) for c in chunks]
    codec = ZstdCodec()
    wrong: list[int] = []

    def work(n: int) -> None:
        out = bytearray(len(RAW))
        for _ in range(20):
            for i, frame in enumerate(frames):
                codec.decode_into_buffer(frame, out)
                if out != chunks[i]:
                    wrong.append(n)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong
