"""Which layers `quantize --family` keeps in their dtype: the family's high-precision layers.

`family_keeps` answers prefix -> why for a checkpoint: the layers the family's producers keep
in high precision (`families.table` `keep`), and, for a packed format, the layers whose stored
shape ComfyUI's detection reads (QC860). `--keep PATTERN` adds layers, `--quantize PATTERN`
takes layers out of the family's list. A PATTERN is a glob over the layer prefix or its weight
name (as `--include`), or a plain part of the name (matched as a substring, as
convert_to_quant matches its filters).
"""

from __future__ import annotations

from quantcheck.convert.eligible import FLOAT_WEIGHTS, matches
from quantcheck.families.detection import keep_list
from quantcheck.families.table import BY_NAME, Family
from quantcheck.formats.table import FORMATS
from quantcheck.model.checkpoint import Checkpoint
from quantcheck.model.family_view import checkpoint_family

AUTO = "auto"
NONE = "none"
#: `--family` choices: auto (detect), none (no family list), or a family's name.
CHOICES = (AUTO, NONE, *BY_NAME)
GLOB = frozenset("*?[")


def pattern_hits(prefix: str, patterns: list[str]) -> bool:
    """Whether a `--keep` / `--quantize` pattern names the layer."""
    globs = [p for p in patterns if GLOB & set(p)]
    return matches(prefix, globs) or any(p in prefix for p in patterns if p not in globs)


def chosen_family(ck: Checkpoint, choice: str) -> tuple[Family | None, str]:
    """The family `--family` means for `ck` (None: none), and the prefix its names carry."""
    if choice == NONE:
        return None, ""
    found = checkpoint_family(ck)
    if choice == AUTO:
        return (found.family, found.prefix) if found.name else (None, "")
    fam = BY_NAME[choice]
    return fam, found.prefix if found.family is fam else ""


def family_keeps(
    ck: Checkpoint, choice: str, fmt: str, keep: list[str], quantize: list[str]
) -> tuple[Family | None, dict[str, str]]:
    """(the family used, layer prefix -> why it stays in its dtype): only 2-D float weights
    `quantize` could convert are named."""
    fam, prefix = chosen_family(ck, choice)
    keeps = keep_list(fam, checkpoint_family(ck)) if fam is not None else ()
    packed = FORMATS[fmt].packing != "none"
    read = {prefix + r.key.rpartition(".")[0] for r in fam.reads} if fam else set()
    out: dict[str, str] = {}
    for p, layer in ck.layers.items():
        w = layer.weight
        if w is None or layer.marker is not None or len(w.shape) != 2:
            continue
        if w.dtype not in FLOAT_WEIGHTS:
            continue
        if keep and pattern_hits(p, keep):
            out[p] = "kept: --keep"
            continue
        if fam is None or (quantize and pattern_hits(p, quantize)):
            continue
        if packed and p in read:
            out[p] = (
                f"kept: ComfyUI's {fam.title} detection reads its stored shape, which {fmt} "
                "packs (QC860)"
            )
            continue
        module = p[len(prefix) :] if p.startswith(prefix) else p
        hits = [k for k in keeps if k.pattern in module]
        if hits:
            who = ", ".join(dict.fromkeys(x for k in hits for x in k.producers))
            why = "; ".join(dict.fromkeys(k.reason for k in hits))
            out[p] = f"kept: {fam.title}'s producers keep it ({who}: {why})"
    return fam, out
