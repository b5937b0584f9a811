"""sglang 0.5.23's resolver dispatch (§6) and the config constructors' marker checks (§7).

Constructor checks run marker by marker in insertion order, each marker through all of its
class's checks before the next marker (the natural single loop; the spec's "listed order, over
markers in insertion order" does not say more, and no reference case tells them apart).
"""

from __future__ import annotations

from collections.abc import Mapping

from quantcheck._record import record

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any, Literal

    MarkerMap = Mapping[Any, Mapping[str, Any]]  # prefix -> marker fields

CONFIG_CLASSES = (
    "ConvRotInt8Config",
    "KitchenW4A8Config",
    "KitchenW4A4Config",
    "ComfyFp8Config",
    "ComfyNvfp4Config",
    "MXFP8Config",
)
_DISPATCH: dict[tuple[str, ...], str] = {
    ("int8_tensorwise",): "ConvRotInt8Config",
    ("asym_w4a8_int8",): "KitchenW4A8Config",
    ("asym_w4a8_int8", "int8_tensorwise"): "KitchenW4A8Config",
    ("convrot_w4a4",): "KitchenW4A4Config",
    ("convrot_w4a4", "int8_tensorwise"): "KitchenW4A4Config",
    ("float8_e4m3fn",): "ComfyFp8Config",
    ("nvfp4",): "ComfyNvfp4Config",
    ("int8_tensorwise", "nvfp4"): "ComfyNvfp4Config",
    ("mxfp8",): "MXFP8Config",
}
CONVROT_INT8_BACKENDS = ("auto", "comfy_kitchen", "jit")
_GROUP_SIZES = (16, 64, 256)


@record
class Host:
    """The platform the constructors see: "cpu" (neither CUDA nor MPS), "cuda" or "mps".

    `capability` is the CUDA compute capability as major*10+minor (e.g. 75), or None when not
    reported (then no capability check fires).
    """

    kind: Literal["cpu", "cuda", "mps"] = "cpu"
    capability: int | None = None


def resolve_comfy_checkpoint_quantization(markers: MarkerMap | None) -> str | None:
    """Name of the config class sglang 0.5.23 builds for `markers`; None when there are none.

    Raises NotImplementedError with sglang's text for unsupported format combinations.
    """
    if not markers:
        return None
    formats = sorted({str(marker.get("format")) for marker in markers.values()})
    config_class = _DISPATCH.get(tuple(formats))
    if config_class is None:
        raise NotImplementedError(f"Unsupported Comfy quantization format(s): {', '.join(formats)}")
    return config_class


def is_comfy_int8_embedding(marker: Mapping[str, Any]) -> bool:
    """An INT8 marker without a truthy `convrot` that carries a derived INT8 layout flag."""
    return (
        marker.get("format") == "int8_tensorwise"
        and not marker.get("convrot")
        and bool(marker.get("_is_rowwise") or marker.get("_is_tensorwise_scalar"))
    )


def _cuda_floor(host: Host, minimum: int, label: str) -> None:
    if host.kind == "mps":
        raise ValueError(f"Serialized {label} checkpoints are not supported on MPS")
    if host.kind == "cuda" and host.capability is not None and host.capability < minimum:
        raise ValueError(
            f"Serialized {label} checkpoints require CUDA compute capability >= "
            f"{minimum / 10:.1f}; got {host.capability / 10:.1f}"
        )


def _convrot_int8(markers: MarkerMap, backend: str) -> None:
    if backend not in CONVROT_INT8_BACKENDS:
        raise ValueError(
            f"convrot_int8 backend must be one of {CONVROT_INT8_BACKENDS}, got {backend!r}"
        )
    for prefix, marker in markers.items():
        if is_comfy_int8_embedding(marker):
            continue
        marker_format = marker.get("format")
        if marker_format != "int8_tensorwise":
            raise ValueError(f"Unsupported Comfy INT8 format for {prefix!r}: {marker_format!r}")
        if marker.get("convrot") is not True:
            raise ValueError(f"Serialized convrot_int8 layer {prefix!r} must set convrot=true")
        groupsize = marker.get("convrot_groupsize")
        if groupsize not in _GROUP_SIZES:
            raise ValueError(
                f"Serialized convrot_int8 layer {prefix!r} must declare convrot_groupsize in "
                f"{_GROUP_SIZES}, got {groupsize!r}"
            )


def _w4a8(markers: MarkerMap, host: Host) -> None:
    _cuda_floor(host, 80, "W4A8")
    for prefix, marker in markers.items():
        if is_comfy_int8_embedding(marker):
            continue
        marker_format = marker.get("format")
        if marker_format != "asym_w4a8_int8":
            raise ValueError(f"Unsupported Comfy W4A8 format for {prefix!r}: {marker_format!r}")
        if marker.get("convrot") is not True:
            raise ValueError(f"Serialized W4A8 layer {prefix!r} must set convrot=true")


def _w4a4(markers: MarkerMap, host: Host, backend: str) -> None:
    _cuda_floor(host, 75, "W4A4")
    int8 = {p: m for p, m in markers.items() if m.get("format") == "int8_tensorwise"}
    if int8:
        _convrot_int8(int8, backend)
    for prefix, marker in markers.items():
        marker_format = marker.get("format")
        if marker_format == "int8_tensorwise":
            continue
        if marker_format != "convrot_w4a4":
            raise ValueError(f"Unsupported Comfy W4A4 format for {prefix!r}: {marker_format!r}")
        groupsize = int(marker.get("convrot_groupsize", 256))
        if groupsize not in _GROUP_SIZES:
            raise ValueError(
                f"Serialized W4A4 layer {prefix!r} has unsupported "
                f"convrot_groupsize={groupsize}; expected one of {_GROUP_SIZES}"
            )
        linear_dtype = str(marker.get("linear_dtype", "int4"))
        if linear_dtype not in ("int4", "int8"):
            raise ValueError(
                f"Serialized W4A4 layer {prefix!r} has unsupported "
                f"linear_dtype={linear_dtype!r}; expected one of ('int4', 'int8')"
            )


def _fp8(markers: MarkerMap) -> None:
    unsupported = {
        prefix: marker.get("format")
        for prefix, marker in markers.items()
        if marker.get("format") != "float8_e4m3fn"
    }
    if unsupported:
        raise ValueError(f"Unsupported Comfy FP8 layer formats: {unsupported}")


def _nvfp4(markers: MarkerMap) -> None:
    for prefix, marker in markers.items():
        if is_comfy_int8_embedding(marker):
            continue
        marker_format = marker.get("format")
        if marker_format != "nvfp4":
            raise ValueError(f"Unsupported Comfy NVFP4 companion for {prefix!r}: {marker_format!r}")
        if marker.get("convrot"):
            raise ValueError(f"Rotated NVFP4 weights are not supported: {prefix!r}")


def _mxfp8(host: Host) -> None:
    if host.kind == "mps":
        raise ValueError("MXFP8 is not supported on MPS")


def check_config_constructor(
    config_class: str,
    markers: MarkerMap,
    *,
    host: Host | None = None,
    convrot_int8_backend: str = "auto",
) -> None:
    """Run the marker checks of sglang 0.5.23's `config_class(...)` constructor.

    Returns None when the constructor would succeed and raises ValueError with sglang's text
    when it would not (KitchenW4A4Config's `int(convrot_groupsize)` can also raise Python's
    own TypeError/ValueError/OverflowError, as in sglang). `host` defaults to a machine with
    neither CUDA nor MPS, so only the marker checks can fire. `convrot_int8_backend` stands in
    for the environment variable `SGLANG_DIFFUSION_CONVROT_INT8_BACKEND` (sglang's default
    "auto"); it is not read here. KitchenW4A4Config builds its inner ConvRotInt8Config (and so
    checks the backend) only when there are INT8 markers.
    """
    host = host or Host()
    if config_class == "ConvRotInt8Config":
        _convrot_int8(markers, convrot_int8_backend)
    elif config_class == "KitchenW4A8Config":
        _w4a8(markers, host)
    elif config_class == "KitchenW4A4Config":
        _w4a4(markers, host, convrot_int8_backend)
    elif config_class == "ComfyFp8Config":
        _fp8(markers)
    elif config_class == "ComfyNvfp4Config":
        _nvfp4(markers)
    elif config_class == "MXFP8Config":
        _mxfp8(host)
    else:
        raise ValueError(f"unknown sglang config class {config_class!r}")
