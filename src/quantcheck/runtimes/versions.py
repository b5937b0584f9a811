"""Which modelled release stands for a runtime's installed version number.

A plug-in inside a runtime knows the version it runs in (ComfyUI's `comfyui_version.py`, the
`sglang` distribution's metadata) and asks here which `--target` key describes it. Releases
named by a version number (`v0.31`, `0.5.23`) are ordered by it; a version up to the newest one
quantcheck has read (`READ_UP_TO`) takes the newest numbered release at or below it; a newer
version takes the runtime's newest modelled release (formats are only ever added); an older
one its oldest. The answer says which of the three it was.

Standard library only (the check path may import it).
"""

from __future__ import annotations

from quantcheck.runtimes.registry import get_runtime

#: the newest version of each runtime whose code quantcheck's releases were read against:
#: ComfyUI 0.33.0 is upstream 783545f6 (the mirror's head, 2026-08-22; it has no awq_w4a16,
#: so it is the v0.31 step); sglang 0.5.23 is the newest pinned wheel
READ_UP_TO = {"comfyui": "0.33.0", "comfyui-cpu": "0.33.0", "sglang": "0.5.23"}


def version_tuple(text: str) -> tuple[int, ...] | None:
    """(0, 5, 23) of `0.5.23` / `v0.31` / `0.33.0+cu130`; None if it does not start with a
    dotted number."""
    head = text.strip().removeprefix("v").split("+")[0]
    out: list[int] = []
    for part in head.split("."):
        digits = ""
        for ch in part:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        out.append(int(digits))
        if digits != part:
            break
    return tuple(out) or None


def _padded(v: tuple[int, ...], n: int = 4) -> tuple[int, ...]:
    return v + (0,) * (n - len(v))


def release_for_version(runtime: str, version: str) -> tuple[str, str]:
    """(target key, how it was chosen) for `runtime` at installed `version`; KeyError for a
    runtime quantcheck does not model."""
    rt = get_runtime(runtime)
    got = version_tuple(version)
    numbered = [(version_tuple(r.name), r.name) for r in rt.releases]
    known = [(_padded(v), name) for v, name in numbered if v is not None]
    newest = rt.releases[-1].name
    if got is None:
        return runtime, (
            f"{rt.title} version {version!r} unreadable: checked against its newest "
            f"release {newest}"
        )
    read = version_tuple(READ_UP_TO.get(runtime, ""))
    if read is not None and _padded(got) > _padded(read):
        return runtime, (
            f"{rt.title} {version} is newer than the newest release quantcheck has read "
            f"({READ_UP_TO[runtime]}): checked against its newest modelled release {newest}"
        )
    below = [name for v, name in known if v <= _padded(got)]
    if not below:
        oldest = rt.releases[0].name
        return f"{runtime}@{oldest}", (
            f"{rt.title} {version} is older than every modelled release: checked against the "
            f"oldest, {oldest}"
        )
    name = below[-1]
    key = runtime if name == newest else f"{runtime}@{name}"
    return key, f"{rt.title} {version}: release {name}"
