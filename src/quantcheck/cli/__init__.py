"""Subcommands loaded on demand by `quantcheck.cli.commands`."""
