"""What is in a checkpoint: per-layer formats, shapes, sizes and bits per weight (JSON-ready)."""

from __future__ import annotations

from quantcheck._version import document_head
from quantcheck.formats.dims import derive_dims
from quantcheck.formats.table import FORMATS
from quantcheck.io.dtypes import HIGH_PRECISION
from quantcheck.model.checkpoint import Checkpoint
from quantcheck.model.family_view import checkpoint_family
from quantcheck.textsafe import redact_url

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

SCHEMA_VERSION = 1
NOT_COUNTED = frozenset({"bias", "comfy_quant"})


def layer_record(ck: Checkpoint, prefix: str) -> dict[str, Any] | None:
    """One layer's record, or None for layers without a weight."""
    layer = ck.layers[prefix]
    w = layer.weight
    if w is None:
        return None
    fmt = layer.format
    spec = FORMATS.get(fmt) if isinstance(fmt, str) else None
    dims = derive_dims(spec, layer) if spec else None
    if dims is not None:
        n, k, exact = dims.N, dims.K, dims.k_exact and dims.n_exact
    elif len(w.shape) >= 2:
        n, k, exact = w.shape[0], _prod(w.shape[1:]), True
    else:
        n, k, exact = (w.shape[0] if w.shape else 1), 1, True
    quant_bytes = sum(t.nbytes for s, t in layer.tensors.items() if s not in NOT_COUNTED)
    params = n * k
    rec: dict[str, Any] = {
        "prefix": prefix,
        "format": fmt if isinstance(fmt, str) else None if fmt is None else str(fmt),
        "marker": layer.marker.fields if layer.marker else None,
        "weight": {"dtype": w.dtype, "shape": list(w.shape)},
        "logical_shape": [n, k],
        "logical_shape_exact": exact,
        "tensors": {
            s: {"dtype": t.dtype, "shape": list(t.shape), "bytes": t.nbytes, "file": t.file}
            for s, t in layer.tensors.items()
        },
        "bytes": quant_bytes,
        "params": params,
        "bits_per_weight": round(8 * quant_bytes / params, 3) if params else None,
    }
    if dims is not None and spec is not None and spec.code_bits != (4,):
        rec["code_bits"] = dims.bits
    return rec


def _prod(xs: tuple[int, ...]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


def summarize(ck: Checkpoint) -> dict[str, Any]:
    """The `inspect --format json` document (schema_version 1, documented in docs/)."""
    layers = [r for p in ck.layers if (r := layer_record(ck, p)) is not None]
    totals: dict[str, dict[str, Any]] = {}
    for r in layers:
        dtype = r["weight"]["dtype"]
        # a marked layer whose weight is still 16/32-bit stores no quantized data (QC304)
        key = r["format"] if r["format"] and dtype not in HIGH_PRECISION else f"unquantized {dtype}"
        t = totals.setdefault(key, {"layers": 0, "bytes": 0, "params": 0})
        t["layers"] += 1
        t["bytes"] += r["bytes"]
        t["params"] += r["params"]
    for t in totals.values():
        t["bits_per_weight"] = round(8 * t["bytes"] / t["params"], 3) if t["params"] else None
    files = [
        {
            "path": s.header.file,
            "size": s.header.file_size,
            "header_bytes": s.header.header_len,
            "tensors": len(s.header.tensors),
            "metadata": s.header.metadata,
        }
        for s in ck.shards
    ]
    return {
        **document_head("inspect", SCHEMA_VERSION),
        "inputs": [redact_url(p) for p in ck.inputs],
        "files": files,
        "index": ck.index,
        "layers": layers,
        "other_tensors": [
            {"name": n, "dtype": ck.tensors[n].dtype, "shape": list(ck.tensors[n].shape)}
            for n in ck.loose
        ],
        "totals": dict(sorted(totals.items())),
        "family": checkpoint_family(ck).to_json(),
        "diagnostics": len(ck.diagnostics),
    }
