"""Between the command line and the work: a command's flags, config files and environment
turned into what its work needs (a `PreparedRun` for `run`), checked once."""
