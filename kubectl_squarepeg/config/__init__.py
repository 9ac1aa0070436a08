"""Configuration files: where they are looked for, reading, interpolation, validation,
merge, trust. File I/O only; the merged result is build's `Config`.
"""
