"""Where keys live: local disk, memory, obstore's object stores (with the credentials
they resolve and the errors they raise), plain HTTP with checked redirects, zip
archives, any zarr-python store, and the counting wrapper tests use."""
