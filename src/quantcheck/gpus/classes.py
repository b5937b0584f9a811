"""The GPU class table: one entry per class (what a runtime's device gate can tell apart), with
the card names users type. Adding a class or a card is one entry here.

A class is an NVIDIA compute capability (`sm_89`), an AMD architecture (`gfx1100`) or a
backend without either (`xpu`, `directml`, `mps`, `cpu`). `--gpu all` judges every class in
this order (oldest NVIDIA first, then AMD, then the other backends). Memory is the card's
usual VRAM in GiB (for "fits" lines; a class's cards differ, so classes have none).
"""

from __future__ import annotations

from quantcheck._record import record


@record
class GpuClass:
    """One GPU class: `key` (`sm_89`, `gfx1100`, `xpu`), `title`, `vendor` (nvidia, amd,
    intel, apple, microsoft, cpu), `backend` (the torch device: cuda, rocm, xpu, directml, mps,
    cpu), NVIDIA compute capability `cc`, AMD `arch`, the card names (name -> VRAM GiB) and the
    CUDA version torch's newest build for it uses (NVIDIA; 13.0 unless it dropped the class)."""

    key: str
    title: str
    vendor: str
    backend: str
    cc: tuple[int, int] | None = None
    arch: str | None = None
    cards: tuple[tuple[str, int], ...] = ()
    default_cuda: tuple[int, int] | None = None
    #: why the default CUDA differs from 13.0 (shown in the entry's notes)
    cuda_note: str = ""


#: CUDA 13 dropped Maxwell, Pascal and Volta (its release notes); torch's cu126 build is the
#: newest that still ships their kernels [GUESS: torch 2.15's cu126 wheel].
_OLD_CUDA = "CUDA 13 no longer supports this class: torch's CUDA 12.6 build assumed"


def _nv(cc: tuple[int, int], title: str, *cards: tuple[str, int], old: bool = False) -> GpuClass:
    return GpuClass(
        f"sm_{cc[0]}{cc[1]}",
        f"NVIDIA {title}",
        "nvidia",
        "cuda",
        cc=cc,
        cards=cards,
        default_cuda=(12, 6) if old else (13, 0),
        cuda_note=_OLD_CUDA if old else "",
    )


def _amd(arch: str, title: str, *cards: tuple[str, int]) -> GpuClass:
    return GpuClass(arch, f"AMD {title}", "amd", "rocm", arch=arch, cards=cards)


CLASSES: tuple[GpuClass, ...] = (
    _nv(
        (6, 1),
        "Pascal",
        ("gtx1080", 8),
        ("gtx1060", 6),
        ("gtx1070", 8),
        ("gtx1080ti", 11),
        ("p40", 24),
        ("titan-xp", 12),
        old=True,
    ),
    _nv((7, 0), "Volta", ("v100", 32), ("titan-v", 12), old=True),
    _nv(
        (7, 5),
        "Turing",
        ("rtx2080ti", 11),
        ("gtx1650", 4),
        ("gtx1660", 6),
        ("gtx1660super", 6),
        ("gtx1660ti", 6),
        ("rtx2060", 6),
        ("rtx2070", 8),
        ("rtx2080", 8),
        ("titan-rtx", 24),
        ("t4", 16),
    ),
    _nv((8, 0), "Ampere (data centre)", ("a100", 80), ("a30", 24)),
    _nv(
        (8, 6),
        "Ampere",
        ("rtx3090", 24),
        ("rtx3060", 12),
        ("rtx3070", 8),
        ("rtx3080", 10),
        ("rtx3080ti", 12),
        ("rtx3090ti", 24),
        ("a10", 24),
        ("a10g", 24),
        ("a40", 48),
        ("a6000", 48),
    ),
    _nv(
        (8, 9),
        "Ada Lovelace",
        ("rtx4090", 24),
        ("rtx4060", 8),
        ("rtx4060ti", 16),
        ("rtx4070", 12),
        ("rtx4070ti", 12),
        ("rtx4080", 16),
        ("l4", 24),
        ("l40", 48),
        ("l40s", 48),
        ("rtx6000-ada", 48),
    ),
    _nv((9, 0), "Hopper", ("h100", 80), ("h200", 141), ("gh200", 96), ("h20", 96)),
    _nv((10, 0), "Blackwell (data centre)", ("b200", 180), ("gb200", 186), ("b100", 180)),
    _nv((10, 3), "Blackwell Ultra", ("b300", 288), ("gb300", 288)),
    _nv(
        (12, 0),
        "Blackwell (GeForce / workstation)",
        ("rtx5090", 32),
        ("rtx5060", 8),
        ("rtx5060ti", 16),
        ("rtx5070", 12),
        ("rtx5070ti", 16),
        ("rtx5080", 16),
        ("rtx-pro-6000", 96),
    ),
    _nv((12, 1), "Blackwell (DGX Spark)", ("dgx-spark", 128), ("gb10", 128)),
    _amd("gfx1030", "RDNA2", ("rx6800", 16), ("rx6800xt", 16), ("rx6900xt", 16)),
    _amd(
        "gfx1100",
        "RDNA3",
        ("rx7900xtx", 24),
        ("rx7900xt", 20),
        ("rx7900gre", 16),
        ("w7900", 48),
    ),
    _amd("gfx1101", "RDNA3 (Navi 32)", ("rx7800xt", 16), ("rx7700xt", 12)),
    _amd("gfx1200", "RDNA4 (Navi 44)", ("rx9060xt", 16)),
    _amd("gfx1201", "RDNA4", ("rx9070", 16), ("rx9070xt", 16)),
    _amd("gfx90a", "CDNA2", ("mi210", 64), ("mi250x", 128)),
    _amd("gfx942", "CDNA3", ("mi300x", 192), ("mi300a", 128), ("mi325x", 256)),
    _amd("gfx950", "CDNA4", ("mi350x", 288), ("mi355x", 288)),
    GpuClass(
        "xpu",
        "Intel XPU (Arc, Data Center Max)",
        "intel",
        "xpu",
        cards=(("arc-a770", 16), ("arc-a750", 8), ("arc-b580", 12), ("max1550", 128)),
    ),
    GpuClass("directml", "DirectML (Windows, any vendor)", "microsoft", "directml"),
    GpuClass(
        "mps",
        "Apple Silicon (MPS)",
        "apple",
        "mps",
        cards=(("m1", 16), ("m2", 24), ("m3", 24), ("m4", 32)),
    ),
    GpuClass("cpu", "CPU (no GPU)", "cpu", "cpu"),
)


def _fold(name: str) -> str:
    """A name as looked up: lower case, without blanks, `-` and `_` (`RTX 4090` = `rtx4090`,
    `arc-a770` = `arca770`)."""
    return "".join(ch for ch in name.lower() if ch not in " -_")


_BY_KEY = {c.key: c for c in CLASSES}
_BY_CARD = {_fold(name): (c, name) for c in CLASSES for name, _ in c.cards}


def card_names() -> list[str]:
    """Every card name of the table, in table order."""
    return [name for c in CLASSES for name, _ in c.cards]


def class_by_key(key: str) -> GpuClass | None:
    """The class called `key` (`sm_89`, `gfx1100`, `xpu`), or None."""
    return _BY_KEY.get(key)


def card(name: str) -> tuple[GpuClass, str, int] | None:
    """(class, the card's table name, VRAM GiB) for a card name as typed, or None."""
    hit = _BY_CARD.get(_fold(name))
    if hit is None:
        return None
    cls, table_name = hit
    return cls, table_name, dict(cls.cards)[table_name]


def class_of(cc: tuple[int, int]) -> GpuClass:
    """The NVIDIA class of compute capability `cc`: its own entry, else the nearest one below
    (an `sm_87` Orin judges as the sm_86 class; a capability below the table as the oldest)."""
    nvidia = [c for c in CLASSES if c.cc is not None]
    exact = next((c for c in nvidia if c.cc == cc), None)
    if exact is not None:
        return exact
    below = [c for c in nvidia if c.cc is not None and c.cc <= cc]
    return below[-1] if below else nvidia[0]


def cards_of(cls: GpuClass, most: int = 3) -> list[str]:
    """Up to `most` card names of a class, its best-known first (for "runs natively from
    sm_100 (b200, …)")."""
    return [name for name, _ in cls.cards[:most]]
