"""One module a command: its flags in, an exit code out."""
