"""sglang on a GPU: how each quantized layer runs (issue 24), from the rows of
`runtimes/sglang_gpu.py` (first match wins). Standard library only."""

from __future__ import annotations

from quantcheck.formats.table import FORMATS
from quantcheck.rules.gpu.plan import GpuRules
from quantcheck.runtimes import sglang_gpu as data

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from quantcheck.gpus.spec import GpuSpec
    from quantcheck.model.layers import Layer
    from quantcheck.rules.gpu.plan import Decision

FPMM = "full_precision_matrix_mult"


def matches(row: data.Row, fmt: str, spec: GpuSpec) -> bool:
    """Whether `row` applies to format `fmt` on `spec`."""
    if row.fmt not in ("*", fmt):
        return False
    if row.backends is not None and spec.backend not in row.backends:
        return False
    if row.cc_min is not None or row.cc_below is not None:
        if spec.cc is None:
            return False
        if row.cc_min is not None and spec.cc < row.cc_min:
            return False
        if row.cc_below is not None and spec.cc >= row.cc_below:
            return False
    if fmt == "float8_e4m3fn" and row.backends == frozenset({"rocm"}):
        return (spec.arch or "") in data.ROCM_FP8
    return True


class SglangGpu(GpuRules):
    name = "sglang"
    marker_keys = (FPMM,)
    blocking = data.LOAD_BLOCKING

    def format_decision(self, fmt: str, spec: GpuSpec) -> Decision:
        known = FORMATS.get(fmt)
        if known is None or known.sglang not in ("validated", "unchecked"):
            return "refused", data.UNLOADED
        for row in data.RULES:
            if matches(row, fmt, spec):
                return row.mode, row.reason
        return "refused", data.UNLOADED

    def layer_decision(
        self, layer: Layer, fmt: str, dims: tuple[int, int] | None, base: Decision, spec: GpuSpec
    ) -> Decision | None:
        marker = layer.marker
        if fmt == "nvfp4" and marker is not None and marker.get(FPMM) is True:
            return "emulated", data.FPMM_NVFP4
        return None


SGLANG_GPU = SglangGpu()
