"""Exceptions for what stops a command before any finding: bad inputs and usage (exit 2)."""


class InputError(Exception):
    """The inputs cannot be opened at all (missing path, no safetensors files): exit code 2."""
