"""Which checkpoints (and which shards of each) every command reads for the same arguments.

`seen(argv)` runs one CLI command in-process and records the shard files of every checkpoint
it assembles (`quantcheck.model.checkpoint.assemble`); files under the command's own output
folder (a written file re-read to verify it) are left out. Shared by
`tests/test_one_resolution.py` (local arguments) and `tests/remote/test_one_resolution.py`.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest

#: command -> argv before the inputs (`{out}`: a path in the command's output folder); the
#: commands that read one checkpoint, and those that read each checkpoint named.
ONE = {
    "fix": ["fix", "--dry-run"],
    "quantize": ["quantize", "--dry-run", "--to", "float8_e4m3fn", "-o", "{out}/q.safetensors"],
    "dequantize": ["dequantize", "-o", "{out}/d.safetensors"],
}
MANY = {
    "check": ["check"],
    "inspect": ["inspect"],
    "report": ["report", "-o", "{out}/r"],
}
#: commands without --as-one (a shard list is not theirs to read)
NO_AS_ONE = {"compare"}


def _input(name: str) -> bool:
    """A file the arguments name (not `quantize --dry-run`'s in-memory probe)."""
    return "/" in name


def seen(
    argv: list[str], out: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[int, list[tuple[str, ...]], str]:
    """(exit code, the shard names of each checkpoint assembled, stderr)."""
    from quantcheck.cli.main import main
    from quantcheck.model import checkpoint

    got: list[tuple[str, ...]] = []
    real = checkpoint.assemble

    def spy(ck: Any, shards: list[Any], **kw: Any) -> Any:
        names = tuple(s.name for s in shards)
        if not any(n.startswith(str(out)) for n in names) and all(_input(n) for n in names):
            got.append(names)
        return real(ck, shards, **kw)

    monkeypatch.setattr(checkpoint, "assemble", spy)
    argv = [a.replace("{out}", str(out)) for a in argv]
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            rc = main(argv)
        except SystemExit as exc:
            rc = int(exc.code or 0)
    return rc, got, stderr.getvalue()


def commands_see(
    args: list[str], tmp: Path, monkeypatch: pytest.MonkeyPatch, *, as_one: bool = False
) -> dict[str, Any]:
    """command -> the checkpoints it read (sorted), or the refusal it gave."""
    found: dict[str, Any] = {}
    extra = ["--as-one"] if as_one else []
    for name, argv in {**MANY, **ONE}.items():
        out = tmp / f"out-{name}"
        out.mkdir()
        rc, got, err = seen([*argv, *extra, *args], out, monkeypatch)
        found[name] = sorted(set(got)) if rc in (0, 1) else ("refused", err.strip())
    if not as_one and len(args) == 1:
        out = tmp / "out-compare"
        out.mkdir()
        rc, got, err = seen(["compare", args[0], args[0]], out, monkeypatch)
        found["compare"] = sorted(set(got)) if rc in (0, 1) else ("refused", err.strip())
        found.update(api_sees(args[0], tmp, monkeypatch))
    return found


#: the public entry points that take one path
API = ("quantcheck.load", "quantcheck.check", "many.check_one")


def api_sees(arg: str, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What `quantcheck.load(arg)`, `quantcheck.check(arg)` and `many.check_one(arg)` read:
    the checkpoint `check` reads, or a refusal naming how many there are."""
    import quantcheck
    from quantcheck.errors import InputError
    from quantcheck.many import check_one
    from quantcheck.model import checkpoint

    calls = {
        "quantcheck.load": lambda: quantcheck.load(arg).close(),
        "quantcheck.check": lambda: quantcheck.check(arg),
        "many.check_one": lambda: _raise_error(check_one(arg)),
    }
    out: dict[str, Any] = {}
    real = checkpoint.assemble
    for name, call in calls.items():
        got: list[tuple[str, ...]] = []

        def spy(ck: Any, shards: list[Any], _got: list[Any] = got, **kw: Any) -> Any:
            _got.append(tuple(s.name for s in shards))
            return real(ck, shards, **kw)

        monkeypatch.setattr(checkpoint, "assemble", spy)
        try:
            call()
            out[name] = sorted(set(got))
        except (InputError, OSError) as exc:
            out[name] = ("refused", f"quantcheck: error: {exc}")
        finally:
            monkeypatch.setattr(checkpoint, "assemble", real)
    return out


def _raise_error(entry: dict[str, Any]) -> None:
    from quantcheck.errors import InputError

    if entry["error"]:
        raise InputError(entry["error"])


def assert_all_see_what_check_sees(found: dict[str, Any]) -> None:
    """Every command reads exactly the checkpoints `check` reads; one that takes one
    checkpoint refuses (naming how many) when `check` finds several."""
    want = found["check"]
    assert isinstance(want, list) and want, found
    for name, got in found.items():
        if name in MANY or len(want) == 1:
            assert got == want, f"{name} read {got}, check read {want}"
        else:
            assert got[0] == "refused" and f"name {len(want)} checkpoints" in got[1], (name, got)
