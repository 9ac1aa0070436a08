"""Files in and out: the local side of `-v`/`--mount` with a local path (reading SRC, the
ignore file, the tar stream). Reads local files; starts no process and knows no cluster."""
