"""The exit codes of every command (docs/cli.md, "Exit codes"); imported by the entry point before anything else."""

EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 70  # EX_SOFTWARE (sysexits.h): neither a finding (1) nor bad input (2)
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a process SIGINT ended
