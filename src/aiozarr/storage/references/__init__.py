"""Virtual Zarr: stores whose keys map to bytes elsewhere — kerchunk references (JSON and
Parquet) and icechunk repositories — and where their targets may point."""
