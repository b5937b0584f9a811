"""sglang 0.5.23's `inspect_comfy_quant_markers`, phase by phase (sglang-messages.md §1).

A: read each file in list order (header markers, then tensors in sorted order);
B: MXFP8 synthesis when every `quant_format` seen is "mxfp8";
C: every noted F8_E4M3/I8/U8 weight needs a marker;
D: per-marker checks (`inspector_layers`);
E: apply the name mapper, rejecting collisions.

The one deliberate difference: sglang walks the Phase B prefixes in `set` order, so which bad
layer it names (and the order of synthesized markers) depends on the hash seed. Here they are
walked in sorted code-point order, which is one of sglang's possible outcomes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from typing import Any

from quantcheck.io.safe_open import SafetensorsFile
from quantcheck.rules.sglang.inspector_layers import CheckpointMeta, validate_markers
from quantcheck.rules.sglang.marker_bytes import read_marker_bytes

Markers = dict[str, dict[str, Any]]
PathArg = str | os.PathLike[str]
_NOTED_WEIGHT_DTYPES = ("F8_E4M3", "I8", "U8")


def merge_marker(markers: Markers, prefix: str, incoming: dict[str, Any]) -> None:
    """`_merge_comfy_quant_marker`: union of fields; an unequal shared field is a conflict."""
    stored = markers.setdefault(prefix, {})
    for field, value in incoming.items():
        if field in stored and stored[field] != value:
            raise ValueError(f"Conflicting Comfy quantization markers for {prefix!r}")
    stored.update(incoming)


def _header_markers(markers: Markers, path: PathArg, raw: str) -> None:
    try:
        document = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"Invalid _quantization_metadata in {path}") from exc
    if not isinstance(document, dict):
        raise ValueError(f"_quantization_metadata in {path} must contain an object")
    layers = document.get("layers")
    if not isinstance(layers, dict):
        raise ValueError(f"_quantization_metadata in {path} must contain a layers object")
    for prefix, layer in layers.items():
        if not isinstance(layer, dict):
            raise ValueError(f"Comfy quantization metadata for {prefix!r} must be an object")
        merge_marker(markers, prefix, layer)


def _tensor_marker(handle: SafetensorsFile, key: str, path: PathArg) -> dict[str, Any]:
    data = read_marker_bytes(handle, key)
    try:
        marker = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"Invalid Comfy quantization marker {key!r} in {path}") from exc
    if not isinstance(marker, dict):
        raise ValueError(f"Comfy quantization marker {key!r} must contain a JSON object")
    return marker


class _Scan:
    """State accumulated over Phase A."""

    def __init__(self) -> None:
        self.markers: Markers = {}
        self.meta: CheckpointMeta = {}
        self.noted: set[str] = set()
        self.quant_formats: set[str] = set()

    def read_file(self, path: PathArg) -> None:
        with SafetensorsFile(path) as handle:
            metadata = handle.header.metadata or {}
            quant_format = metadata.get("quant_format")
            if quant_format:
                self.quant_formats.add(quant_format.lower())
            if "_quantization_metadata" in metadata:
                _header_markers(self.markers, path, metadata["_quantization_metadata"])
            for key in handle.tensor_names():
                entry = handle.header.tensors[key]
                self.meta[key] = (entry.dtype, entry.shape)
                if key.endswith(".weight") and entry.dtype in _NOTED_WEIGHT_DTYPES:
                    self.noted.add(key[: -len(".weight")])
                if key.endswith(".comfy_quant"):
                    prefix = key[: -len(".comfy_quant")]
                    merge_marker(self.markers, prefix, _tensor_marker(handle, key, path))

    def synthesize_mxfp8(self) -> None:
        if self.quant_formats != {"mxfp8"}:
            return
        for prefix in sorted(self.noted):  # sglang: set order (hash-seed dependent)
            weight_meta = self.meta[f"{prefix}.weight"]
            scale_meta = self.meta.get(f"{prefix}.weight_scale")
            dtype, shape = weight_meta
            if (
                dtype != "F8_E4M3"
                or len(shape) != 2
                or shape[1] % 32 != 0
                or scale_meta != ("U8", (shape[0], shape[1] // 32))
            ):
                raise ValueError(
                    f"MXFP8 layer {prefix!r} has incompatible weight/scale metadata: "
                    f"{weight_meta} and {scale_meta}"
                )
            if prefix not in self.markers:
                self.markers[prefix] = {"format": "mxfp8"}

    def require_markers(self) -> None:
        missing = [prefix for prefix in self.noted if prefix not in self.markers]
        if missing:
            raise ValueError(
                f"Quantized weights are missing comfy_quant metadata: {sorted(missing)[:5]}"
            )


def _map_names(markers: Markers, mapper: Callable[[str], Any] | None) -> dict[Any, Any]:
    mapped_markers: dict[Any, Any] = {}
    for prefix, marker in markers.items():
        mapped = mapper(prefix) if mapper else prefix
        if mapped in mapped_markers:
            raise ValueError(f"Comfy markers collide after parameter mapping at {mapped!r}")
        mapped_markers[mapped] = marker
    return mapped_markers


def inspect_comfy_quant_markers(
    safetensors_list: Iterable[PathArg],
    param_name_mapper: Callable[[str], Any] | None = None,
) -> dict[Any, dict[str, Any]]:
    """Return `{mapped prefix: marker}` exactly as sglang 0.5.23 does, or raise as it raises."""
    scan = _Scan()
    for path in safetensors_list:
        scan.read_file(path)
    scan.synthesize_mxfp8()
    scan.require_markers()
    validate_markers(scan.markers, scan.meta)
    return _map_names(scan.markers, param_name_mapper)
