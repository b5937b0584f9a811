"""Subcommands loaded on demand by `quantcheck.cli_extra`."""
