"""Colours: one per format (stable across reports), severities, verdicts, the heat scale."""

from __future__ import annotations

import math

#: Known formats keep their colour in every report (qualitative, colour-blind aware).
FORMAT_COLORS: dict[str, str] = {
    "nvfp4": "#4e79a7",
    "mxfp8": "#59a14f",
    "float8_e4m3fn": "#f28e2b",
    "float8_e4m3fn_rowwise": "#ffbe7d",
    "float8_e4m3fn_blockwise": "#d37295",
    "float8_e5m2": "#edc948",
    "int8_tensorwise": "#76b7b2",
    "int8_blockwise": "#3f8f8a",
    "asym_w4a8_int8": "#b07aa1",
    "convrot_w4a4": "#9c755f",
    "awq_w4a16": "#ff9da7",
}
#: Unquantized weights are greys: darker = more bits.
UNQUANTIZED_COLORS = {"F64": "#6b6b6b", "F32": "#8a8a8a", "BF16": "#c7c2bf", "F16": "#dcd7d3"}
_SPARE = ("#a0cbe8", "#8cd17d", "#86bcb6", "#f1ce63", "#d4a6c8", "#fabfd2", "#b6992d", "#79706e")

SEVERITY_COLORS = {"error": "#d1242f", "warning": "#e08600", "info": "#1f6feb"}
STATUS_COLORS = {"ok": "#1a7f37", "degraded": "#bf8700", "fails": "#d1242f"}
MISSING = "#f3f3f3"
#: Layers kept unquantized: white with a dashed grey outline, outside the heat colours (their
#: error is a dtype round trip, not a quantization error).
NOT_QUANTIZED = "#ffffff"
NOT_QUANTIZED_STROKE = "#8c8c8c"

#: Light to dark: small relative error is pale, large is dark red.
_HEAT = ("#fff7bc", "#fee391", "#fec44f", "#fe9929", "#ec7014", "#cc4c02", "#993404", "#662506")


def format_color(key: str) -> str:
    """Fill for a format key (`nvfp4`, `unquantized BF16`, or an unknown format name)."""
    if key in FORMAT_COLORS:
        return FORMAT_COLORS[key]
    if key.startswith("unquantized "):
        return UNQUANTIZED_COLORS.get(key.split(" ", 1)[1], "#b4b4b4")
    return _SPARE[sum(key.encode()) % len(_SPARE)]


def heat_color(t: float) -> str:
    """Colour at position `t` in [0, 1] of the heat scale (interpolated)."""
    t = min(1.0, max(0.0, t)) * (len(_HEAT) - 1)
    i = min(int(t), len(_HEAT) - 2)
    a, b = _rgb(_HEAT[i]), _rgb(_HEAT[i + 1])
    f = t - i
    return "#" + "".join(f"{round(x + (y - x) * f):02x}" for x, y in zip(a, b, strict=True))


def heat_stops() -> tuple[str, ...]:
    return _HEAT


def _rgb(color: str) -> tuple[int, int, int]:
    c = color.lstrip("#")
    return int(c[0:2], 16), int(c[2:4], 16), int(c[4:6], 16)


class LogScale:
    """Maps relative errors to [0, 1] on a fixed log10 scale, the same in every report:
    `LO` (1e-4, a near-lossless round trip) is 0 and `HI` (1, an error as large as the
    weights) is 1; values outside clamp. `lo` and `hi` are the real range of `values` (the
    finite positive ones), which the legend marks on the scale."""

    LO = 1e-4
    HI = 1.0
    #: Labelled ticks of the legend.
    TICKS = ((1e-4, "10⁻⁴"), (1e-3, "10⁻³"), (1e-2, "0.01"), (1e-1, "0.1"), (1.0, "1"))

    def __init__(self, values: list[float]) -> None:
        finite = [v for v in values if math.isfinite(v) and v >= 0]
        self.lo = min(finite, default=None)
        self.hi = max(finite, default=None)

    def __call__(self, v: float) -> float:
        if not math.isfinite(v):
            return 1.0
        if v <= self.LO:
            return 0.0
        t = (math.log10(v) - math.log10(self.LO)) / (math.log10(self.HI) - math.log10(self.LO))
        return min(t, 1.0)
