"""The I/O engine: plans a selection into batched store requests, runs them, decodes."""
