"""Configuration files: where they are looked for, reading, interpolation, validation,
merge, trust. File I/O only; the merged `Config` is read by plan/ through its Protocol.
"""
