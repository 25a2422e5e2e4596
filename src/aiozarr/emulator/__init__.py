"""The object-store emulator behind `aiozarr serve`: a local directory served as an S3
bucket and over plain HTTP, with a cloud store's latency, bandwidth, slow tail and
faults on request.

    async with Emulator(root, latency_ms=20) as emu:
        store = obstore.store.S3Store(emu.bucket, **emu.storage_options())

server.py (the Emulator: settings, running, the path of a request), serving_conditions.py (its
counters, network shaping and fault rules), answers.py (held-back, paced, faulty and
streamed answers), bucket.py (the S3 operations on the folder), control.py (the
/_emulator/ endpoints), s3.py (the S3 wire format: errors, XML, ranges), files.py
(objects on disk: one version per read, atomic and conditional writes), listing.py
(ListObjectsV2), multipart.py (multipart uploads).
"""

from aiozarr.emulator.server import FAULT_KINDS, Emulator, Fault

__all__ = ["FAULT_KINDS", "Emulator", "Fault"]
