"""Block structure from layer prefixes: families of numbered blocks as rows, layer kinds as
columns (in a stable, readable order), and the layers that belong to no block."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_BLOCK = re.compile(r"^(?P<family>(?:.*?\.)??[A-Za-z_][\w-]*?)\.(?P<block>\d+)\.(?P<kind>.+)$")
_DIGITS = re.compile(r"(\d+)")

#: Category ranks: attention, MLP, anything else, modulation, norms.
_ATTN, _MLP, _OTHER, _MOD, _NORM = range(5)
_ROLE = {
    "q": 0,
    "k": 1,
    "v": 2,
    "qkv": 3,
    "kv": 3,
    "out": 4,
    "o": 4,
    "proj": 4,
    "gate": 0,
    "up": 1,
    "fc1": 1,
    "w1": 0,
    "w3": 1,
    "down": 2,
    "fc2": 2,
    "w2": 2,
}


@dataclass
class Grid:
    """One block family: `cells[(block, kind)]` is a layer's index in the report's layer list."""

    family: str
    blocks: list[int] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    cells: dict[tuple[int, str], int] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.family.rsplit(".", 1)[-1]


@dataclass
class Layout:
    """Grids for block-structured layers and a sorted list of every other layer's index."""

    grids: list[Grid]
    others: list[int]

    @property
    def block_structured(self) -> bool:
        return bool(self.grids)


def split_prefix(prefix: str) -> tuple[str, int, str] | None:
    """`a.transformer_blocks.12.attn.to_q` -> ("a.transformer_blocks", 12, "attn.to_q")."""
    m = _BLOCK.match(prefix)
    if m is None:
        return None
    return m["family"], int(m["block"]), m["kind"]


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that orders `blocks.2` before `blocks.10`."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in _DIGITS.split(text) if p)


def kind_key(kind: str) -> tuple[int, int, int, tuple[tuple[int, int | str], ...]]:
    """Attention (q, k, v, qkv, out) before MLP before modulation and norms; the image stream
    before the text/context stream; ties in natural order."""
    tokens = [t for t in kind.lower().split(".") if not t.isdigit()]
    if any("mod" in t for t in tokens):
        cat = _MOD
    elif any("norm" in t for t in tokens):
        cat = _NORM
    elif any("attn" in t or "attention" in t for t in tokens) or _role(tokens) in (0, 1, 2, 3):
        cat = _ATTN
    elif any(t.startswith(("mlp", "ff", "linear", "fc", "feed_forward")) for t in tokens):
        cat = _MLP
    else:
        cat = _OTHER
    stream = int(
        any(
            t.startswith(("txt", "add_", "to_add")) or "context" in t or "added" in t
            for t in tokens
        )
    )
    return cat, stream, _role(tokens), natural_key(kind)


def _role(tokens: list[str]) -> int:
    if not tokens:
        return 9
    name = tokens[-1]
    for pre in ("norm_", "to_add_", "to_", "add_", "added_"):
        name = name.removeprefix(pre)
    name = name.removesuffix("_proj")
    return _ROLE.get(name, 9)


def build_layout(prefixes: list[str], min_blocks: int = 2) -> Layout:
    """Group `prefixes` (index = position) into block grids; families with fewer than
    `min_blocks` blocks and unnumbered layers go to `others`, naturally sorted."""
    parsed: dict[str, list[tuple[int, str, int]]] = {}
    loose: list[int] = []
    for i, p in enumerate(prefixes):
        split = split_prefix(p)
        if split is None:
            loose.append(i)
        else:
            parsed.setdefault(split[0], []).append((split[1], split[2], i))
    grids: list[Grid] = []
    for family in sorted(parsed, key=natural_key):
        members = parsed[family]
        blocks = sorted({b for b, _, _ in members})
        if len(blocks) < min_blocks:
            loose.extend(i for _, _, i in members)
            continue
        kinds = sorted({k for _, k, _ in members}, key=kind_key)
        grids.append(Grid(family, blocks, kinds, {(b, k): i for b, k, i in members}))
    loose.sort(key=lambda i: natural_key(prefixes[i]))
    return Layout(grids, loose)
