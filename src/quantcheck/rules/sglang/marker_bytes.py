"""The bytes sglang gets from `safe_open(framework="pt").get_tensor(key).numpy().tobytes()`.

Dtypes numpy can hold give the tensor's exact byte range, whatever the shape. The others fail
where torch/safetensors fail (sglang-messages.md §2.2):

- F6_E2M3/F6_E3M2: safetensors has no torch dtype for them -> `SafetensorError`;
- F4 whose last dimension is odd: safetensors cannot view it as `float4_e2m1fn_x2`
  -> `SafetensorError` (observed with safetensors 0.8.0; not in the spec table);
- BF16, the FP8 family and F4: `.numpy()` -> `TypeError("Got unsupported ScalarType …")`.
"""

from __future__ import annotations

from quantcheck.io.safe_open import SafetensorError, SafetensorsFile

_TORCH_SCALAR_TYPES = {
    "BF16": "BFloat16",
    "F8_E4M3": "Float8_e4m3fn",
    "F8_E5M2": "Float8_e5m2",
    "F8_E8M0": "Float8_e8m0fnu",
    "F8_E4M3FNUZ": "Float8_e4m3fnuz",
    "F8_E5M2FNUZ": "Float8_e5m2fnuz",
    "F4": "Float4_e2m1fn_x2",
}
_NO_TORCH_DTYPE = ("F6_E2M3", "F6_E3M2")


def read_marker_bytes(handle: SafetensorsFile, key: str) -> bytes:
    """Return the bytes of tensor `key` as sglang reads a `.comfy_quant` tensor, or raise."""
    entry = handle.header.tensors[key]
    if entry.dtype in _NO_TORCH_DTYPE:
        raise SafetensorError(f"Dtype not understood: {entry.dtype}")
    if entry.dtype == "F4" and entry.shape and entry.shape[-1] % 2:
        raise SafetensorError(
            "f4_x2 dtype requires that the last dim be divisible by 2 in torch: "
            f"got {list(entry.shape)}"
        )
    scalar_type = _TORCH_SCALAR_TYPES.get(entry.dtype)
    if scalar_type is not None:
        raise TypeError(f"Got unsupported ScalarType {scalar_type}")
    return handle.read_bytes(key)
