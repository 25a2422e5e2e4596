"""aiozarr's benchmark suite: aiozarr against zarr-python and TensorStore through the
object-store emulator. Run `python -m benchmarks`; see `benchmarks/README.md`."""
