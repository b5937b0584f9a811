"""Test helpers for sglang's per-loader verdicts (rules/sglang/loaders.py): most tests are about
the marker path (sglang's text-encoder loader order), not about the loaders that never read the
markers (--transformer-weights-path, --comfyui-mode), whose findings name their loader."""

from __future__ import annotations

from typing import Any

#: the loaders' own codes: a loader that cannot read any such file says so with one of them
LOADER_CODES = frozenset(f"QC63{i}" for i in range(1, 9))


def marker_path(report: Any, key: str = "sglang") -> str:
    """sglang's verdict through its marker path: the text-encoder loader's order (header path,
    then the markers; 0.5.18: its one transformer loader)."""
    loaders = report.target_status(key)["loaders"]
    v = loaders.get("text-encoder") or loaders["transformer-weights-path"]
    return str(v["status"])


def core(diags: list[Any]) -> list[Any]:
    """The findings that do not name a loader (the marker path's and every other runtime's)."""
    return [d for d in diags if not d.data.get("loaders")]


def core_codes(diags: list[Any]) -> set[str]:
    return {d.code for d in core(diags)}


#: `--ignore` of the loaders' codes, for tests about something else (transport, discovery,
#: rendering) that run `check` on marked files: every marked file fails a loader of sglang
#: that never reads markers (tests/rules/sglang/test_loader_findings.py covers those)
IGNORE_LOADERS = ("--ignore", ",".join(sorted(LOADER_CODES)))


def without_loaders(argv: list[str] | tuple[str, ...]) -> list[str]:
    """`argv` of a `check` command with `IGNORE_LOADERS` added (other commands as given)."""
    argv = list(argv)
    return ["check", *IGNORE_LOADERS, *argv[1:]] if argv[:1] == ["check"] else argv
