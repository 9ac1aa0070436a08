"""The command line: click commands and completion; the one place where an error becomes
a message on stderr and an exit code. Nothing imports this package.
"""
