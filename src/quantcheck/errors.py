"""Exceptions for what stops a command before any finding: bad inputs and usage (exit 2)."""


class InputError(Exception):
    """The inputs cannot be opened at all (missing path, no safetensors files): exit code 2."""


#: What an OS error means for a file a user asked to read, by errno name.
_WHY = {
    "EACCES": "permission denied: this user may not use it (check its permissions and owner)",
    "EPERM": "the operation is not permitted (check its permissions, owner and any lock)",
    "ENOENT": "there is no such file or folder",
    "EISDIR": "it is a folder where a file was expected",
    "ENOTDIR": "a part of the path is a file, not a folder",
    "EIO": "the disk (or network mount) returned an input/output error while reading it",
    "ELOOP": "it is a loop of symbolic links",
    "ENAMETOOLONG": "the path is longer than the system allows",
    "EMFILE": "too many files are open at once (raise `ulimit -n` or lower --jobs)",
    "ENFILE": "the system has too many files open",
    "ETIMEDOUT": "the read timed out (a network mount?)",
}


def describe_os_error(exc: OSError, action: str | None = None) -> str:
    """An OSError as a sentence a person reads: the file and why, without the raw
    `[Errno 13] ...` form; with `action` ("read"), what could not be done to it. Errors
    without an errno (remote sources, short reads) keep their own message, which already
    says what happened."""
    import errno

    if exc.errno is None:
        return str(exc) or type(exc).__name__
    name = errno.errorcode.get(exc.errno, "")
    why = _WHY.get(name) or exc.strerror or name or "unknown error"
    what = exc.filename
    if action:
        return f"cannot {action} {what if what is not None else 'the input'}: {why}"
    return f"{what}: {why}" if what is not None else why
