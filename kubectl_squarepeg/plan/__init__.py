"""The plan of a run, pure: flag values and docker's flag table, claims, the options, the
manifest and the YAML printed. No I/O, no processes, no terminal; configuration reaches it
through a Protocol (configured.py), never by importing the config package.

(Not named `build/`: tools such as ruff skip a folder of that name as build output.)
"""
