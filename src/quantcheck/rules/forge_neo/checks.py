"""Forge Neo's own rules (the `checks` hook of its runtime record): its QUANT_ALGOS table by
release, and header entries that replace tensor markers. Everything else follows ComfyUI.

The upstream lines each rule follows are cited in catalog.py.
"""

from __future__ import annotations

from collections.abc import Iterator

from quantcheck.diagnostics import Diagnostic, Fix
from quantcheck.formats.table import FORMATS as KNOWN
from quantcheck.model.checkpoint import Checkpoint
from quantcheck.model.layers import Layer
from quantcheck.rules import codes as R
from quantcheck.rules.comfyui.checks import formats_by_step
from quantcheck.rules.levels import Safety, Severity
from quantcheck.rules.markers.checks import lost_keys, seen_fields, tensor_source_file
from quantcheck.runtimes import effects as _eff
from quantcheck.runtimes.forge_neo import FORMAT_SINCE, FORMATS, NAME, RELEASES, STEP_CODE

#: Marker keys whose loss changes what Forge Neo computes (not only a default).
MATH_KEYS = frozenset({"convrot", "convrot_groupsize", "group_size", "linear_dtype"})


class ForgeNeoChecks:
    """Forge Neo's own rules for one checkpoint."""

    def __init__(self, ck: Checkpoint) -> None:
        self.ck = ck

    def file_findings(self) -> Iterator[Diagnostic]:
        return _format_steps(self.ck)

    def layer_findings(self, layer: Layer) -> Iterator[Diagnostic]:
        m = layer.marker
        if m is None or layer.weight is None:
            return
        fmt = seen_fields(m).get("format")
        if (
            isinstance(fmt, str)
            and fmt in KNOWN
            and not KNOWN[fmt].third_party
            and fmt not in FORMATS
        ):
            yield Diagnostic(
                R.QC701,
                f"Forge Neo {RELEASES[-1].name}'s QUANT_ALGOS has no {fmt}: loading this "
                f"layer likely raises KeyError({fmt!r}) (the ported ops file handles it, "
                "its format table does not)",
                file=tensor_source_file(m),
                layer=layer.prefix,
                effects=_eff(**{NAME: "fails"}),
                fix=Fix(
                    "requantize the layer to a format Forge Neo loads (int8_tensorwise, "
                    "float8_e4m3fn, nvfp4, mxfp8)",
                    Safety.UNSAFE,
                    "requantize",
                ),
            )
        lost = lost_keys(m)
        if lost:
            yield Diagnostic(
                R.QC703,
                f"the header entry replaces this layer's marker tensor in Forge Neo: "
                f"{', '.join(repr(k) for k in lost)} (only in the tensor) "
                f"{'is' if len(lost) == 1 else 'are'} dropped without a message",
                file=tensor_source_file(m),
                layer=layer.prefix,
                effects=_eff(**{NAME: "degraded"}),
                severity=Severity.ERROR if MATH_KEYS & set(lost) else None,
                fix=Fix(
                    f"add {', '.join(lost)} to the header entry of {layer.prefix}",
                    Safety.DISPLAY,
                ),
            )


def _format_steps(ck: Checkpoint) -> Iterator[Diagnostic]:
    """One finding per Forge Neo release the file needs (formats added after the oldest)."""
    by_step, first = formats_by_step(
        ck,
        lambda la: seen_fields(la.marker).get("format") if la.marker else None,
        FORMAT_SINCE,
        STEP_CODE,
    )
    for release, counts in by_step.items():
        n = sum(counts.values())
        what = ", ".join(f"{f} ({c})" for f, c in sorted(counts.items()))
        yield Diagnostic(
            R.QC702,
            f"{n} layer{'s' if n != 1 else ''} use{'' if n != 1 else 's'} {what}: Forge Neo "
            f"loads {'them' if n != 1 else 'it'} from {release} on (older releases raise "
            "KeyError)",
            file=first[release],
            data={"release": release, "formats": sorted(counts)},
        )
