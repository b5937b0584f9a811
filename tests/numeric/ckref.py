"""comfy-kitchen (CPU eager) oracle helpers: torch <-> numpy and per-format entry points."""

from __future__ import annotations

import comfy_kitchen as ck
import ml_dtypes
import numpy as np
import torch
from comfy_kitchen.tensor import QuantizedTensor

_T2N = {
    torch.bfloat16: (torch.int16, ml_dtypes.bfloat16),
    torch.float8_e4m3fn: (torch.uint8, ml_dtypes.float8_e4m3fn),
    torch.float8_e5m2: (torch.uint8, ml_dtypes.float8_e5m2),
    torch.float8_e8m0fnu: (torch.uint8, np.uint8),
}
_N2T = {
    np.dtype(ml_dtypes.bfloat16): (np.int16, torch.bfloat16),
    np.dtype(ml_dtypes.float8_e4m3fn): (np.uint8, torch.float8_e4m3fn),
    np.dtype(ml_dtypes.float8_e5m2): (np.uint8, torch.float8_e5m2),
}
TORCH_DTYPE = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
LAYOUTS = {
    "float8_e4m3fn": "TensorCoreFP8Layout",
    "float8_e5m2": "TensorCoreFP8Layout",
    "int8_tensorwise": "TensorWiseINT8Layout",
    "nvfp4": "TensorCoreNVFP4Layout",
    "mxfp8": "TensorCoreMXFP8Layout",
    "asym_w4a8_int8": "AsymW4A8Int8Layout",
    "w6a8_int8": "AsymW4A8Int8Layout",  # the same layout class at bits=6
    "convrot_w4a4": "TensorCoreConvRotW4A4Layout",
}


def t2n(t: torch.Tensor) -> np.ndarray:
    """A numpy copy with the matching numpy/ml_dtypes dtype."""
    t = t.detach().contiguous().cpu()
    if t.dtype in _T2N:
        view, npdt = _T2N[t.dtype]
        return t.view(view).numpy().view(npdt).copy()
    return t.numpy().copy()


def n2t(a: np.ndarray) -> torch.Tensor:
    """A torch tensor with the matching dtype."""
    a = np.ascontiguousarray(a)
    if a.dtype in _N2T:
        view, tdt = _N2T[a.dtype]
        return torch.from_numpy(a.view(view).copy()).view(tdt)
    return torch.from_numpy(a.copy())


def ck_kwargs(fmt: str, options: dict) -> dict:
    """Our quantize options -> QuantizedTensor.from_float kwargs."""
    o = dict(options)
    if fmt == "float8_e4m3fn":
        return {"dtype": torch.float8_e4m3fn}
    if fmt == "float8_e5m2":
        return {"dtype": torch.float8_e5m2}
    if fmt == "int8_tensorwise":
        kw = {"per_channel": bool(o.get("per_row") or o.get("convrot"))}
        if o.get("convrot"):
            kw.update(convrot=True, convrot_groupsize=o.get("convrot_groupsize", 256))
        return kw
    if fmt == "w6a8_int8":
        o["bits"] = 6
    if fmt in ("asym_w4a8_int8", "w6a8_int8"):
        if o.get("scale_dtype") == "float32":
            o["scale_dtype"] = torch.float32
        return o
    return o


def ck_quantize(w: np.ndarray, fmt: str, **options) -> dict[str, np.ndarray]:
    """comfy-kitchen's checkpoint tensors (suffix -> numpy) for a weight."""
    with ck.use_backend("eager"):
        qt = QuantizedTensor.from_float(n2t(w), LAYOUTS[fmt], **ck_kwargs(fmt, options))
        return {k: t2n(v) for k, v in qt.state_dict("weight").items()}


def ck_dequantize(fmt: str, tensors: dict, marker: dict, shape, out_dtype="float32") -> np.ndarray:
    """comfy-kitchen's dequantize of checkpoint tensors (numpy in, numpy out)."""
    t = {k: n2t(v) for k, v in tensors.items()}
    od = TORCH_DTYPE[out_dtype]
    n, k = shape
    with ck.use_backend("eager"):
        if fmt in ("float8_e4m3fn", "float8_e5m2"):
            out = ck.dequantize_per_tensor_fp8(t["weight"], t["weight_scale"], od)
        elif fmt == "int8_tensorwise":
            s = t["weight_scale"]
            if marker.get("convrot"):
                out = torch.ops.comfy_kitchen.dequantize_int8_convrot_weight(
                    t["weight"], s, marker.get("convrot_groupsize", 256)
                ).to(od)
            else:
                out = ck.dequantize_int8_simple(t["weight"], s).to(od)
        elif fmt == "nvfp4":
            bs = t["weight_scale"]
            if bs.dtype == torch.uint8:
                bs = bs.view(torch.float8_e4m3fn)
            out = ck.dequantize_nvfp4(t["weight"], t["weight_scale_2"], bs, od)[:n, :k]
        elif fmt == "mxfp8":
            out = ck.dequantize_mxfp8(
                t["weight"], t["weight_scale"].view(torch.float8_e8m0fnu), od
            )[:n, :k]
        elif fmt in ("asym_w4a8_int8", "w6a8_int8"):
            out = ck.dequantize_w4a8_int8_weight(
                t["weight"],
                t["weight_s_rel"],
                t["weight_s_channel"],
                t.get("weight_codebook"),
                t.get("weight_correction"),
                marker.get("group_size", 16),
                marker.get("convrot_groupsize", 256),
                od,
            )
        elif fmt == "convrot_w4a4":
            out = ck.dequantize_convrot_w4a4_weight(
                t["weight"], t["weight_scale"], marker.get("convrot_groupsize", 256), 64, od
            )
        elif fmt == "awq_w4a16":
            from comfy_kitchen.tensor.awq_w4a16 import TensorCoreAWQW4A16Layout as L

            params = L.Params(
                scale=t["weight_scale"],
                orig_dtype=od,
                orig_shape=(n, k),
                zeros=t["weight_zeros"],
                group_size=marker.get("group_size", 64),
            )
            out = L.dequantize(t["weight"], params).to(od)
        else:
            raise KeyError(fmt)
    return t2n(out.contiguous())
