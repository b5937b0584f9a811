""" "Needs >= X" (issue 24 item 3): the lowest NVIDIA class from which every quantized layer runs
natively, and for a given GPU where some do not, a format that would run natively there.
Standard library only."""

from __future__ import annotations

from quantcheck.gpus.classes import CLASSES, cards_of
from quantcheck.gpus.spec import parse_spec
from quantcheck.rules.gpu.plan import counts, decide
from quantcheck.rules.gpu.refusals import refused_line

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from quantcheck.gpus.spec import GpuSpec
    from quantcheck.rules.gpu.plan import Decision, GpuRules, Plan

#: formats offered as "the same model in this format runs natively there", in this order
#: (8-bit first: the nearest in quality to what a 4-bit file was made from)
ALTERNATIVES = ("float8_e4m3fn", "int8_tensorwise", "mxfp8", "nvfp4", "asym_w4a8_int8")


#: the NVIDIA classes of the table with the default stack (parsed once)
_SPECS: list[GpuSpec] = []


def native_from(
    plan: Plan, rules: GpuRules, key: str = "", refused: dict[str, Decision] | None = None
) -> dict[str, Any]:
    """`{"compute_capability", "class", "cards", "line"}`: the lowest NVIDIA class such that it
    and every newer class of the table run all quantized layers natively (default stack);
    `compute_capability` None when even the newest does not, or when target `key` refuses
    some layers on every device (`refused`, `rules/gpu/refusals.py`)."""
    if refused:
        return {
            "compute_capability": None,
            "class": None,
            "cards": [],
            "line": refused_line(key or rules.name, refused),
        }
    nvidia = [c for c in CLASSES if c.cc is not None]
    if not _SPECS:
        _SPECS.extend(parse_spec(c.key) for c in nvidia)
    from_index = None
    for i in range(len(nvidia) - 1, -1, -1):
        tally = counts(plan, decide(plan, rules, _SPECS[i]))
        if tally["native"] != sum(tally.values()):
            break
        from_index = i
    if from_index is None:
        return {
            "compute_capability": None,
            "class": None,
            "cards": [],
            "line": f"{key or rules.name}: no NVIDIA class runs every quantized layer natively",
        }
    cls = nvidia[from_index]
    assert cls.cc is not None
    newer = nvidia[from_index:]
    cards = [n for c in newer[:3] for n in cards_of(c, 1)] + (["…"] if len(newer) > 3 else [])
    return {
        "compute_capability": f"{cls.cc[0]}.{cls.cc[1]}",
        "class": cls.key,
        "cards": [c for c in cards if c != "…"],
        "line": f"{key or rules.name} runs every quantized layer natively from {cls.key} "
        f"({', '.join(cards)})",
    }


def advice(rules: GpuRules, spec: GpuSpec, entry: dict[str, Any]) -> dict[str, Any] | None:
    """`{"gpu", "not_native", "alternative"}` for a GPU where some layers are not native: the
    formats that are not, and the first of `ALTERNATIVES` that runs natively there (None:
    none does). None when every layer is native."""
    slow = [f for f, mode in entry["formats"].items() if mode != "native"]
    if not slow:
        return None
    alt = next(
        (
            a
            for a in ALTERNATIVES
            if a not in slow and rules.format_decision(a, spec)[0] == "native"
        ),
        None,
    )
    return {"gpu": spec.given, "label": spec.label(), "not_native": slow, "alternative": alt}


def advice_lines(entries: list[dict[str, Any]], most: int = 3) -> list[str]:
    """`on rtx4090 (sm_89) the nvfp4 layers are not all native; a float8_e4m3fn file of the
    same model runs natively there`, one per GPU; for more than `most` GPUs, one line per
    alternative format naming the GPUs."""
    if len(entries) <= most:
        return [
            f"on {e['label']} the {', '.join(e['not_native'])} layers are not all native; "
            + (
                f"{_a(e['alternative'])} {e['alternative']} file of the same model runs natively "
                "there"
                if e["alternative"]
                else "no quantized format runs natively there"
            )
            for e in entries
        ]
    by_alt: dict[str | None, list[str]] = {}
    for e in entries:
        by_alt.setdefault(e["alternative"], []).append(e["gpu"])
    return [
        (f"{alt} would run natively on " if alt else "no quantized format runs natively on ")
        + ", ".join(gpus)
        for alt, gpus in by_alt.items()
    ]


def _a(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"
