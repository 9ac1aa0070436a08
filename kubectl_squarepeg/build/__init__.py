"""Building what is sent, pure: flags and values, docker's table, claims, options, the
manifest and YAML out. No I/O, no processes, no terminal.
"""
