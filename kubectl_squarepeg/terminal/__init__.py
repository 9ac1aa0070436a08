"""The user's terminal: the console's status and messages, the raw-mode session of `-it`,
and the splice of the attach's output after the log's.
"""
