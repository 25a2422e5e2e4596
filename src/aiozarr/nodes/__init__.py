"""Arrays and groups: the async objects, their descriptions, reading and writing
the hierarchy's metadata, creating nodes."""
