"""Why a generic rule leaves sglang or ComfyUI unaffected where its catalog entry's prose does
not say (one line each): the built-in runtimes' effects are declared in the catalogs, and these
are the nones the evidence there is about the other runtime or about other tools.

Standard library only (the check path imports it).
"""

from __future__ import annotations

_NO_SUB_BYTE = (
    "none of its formats stores a sub-byte dtype, and it reads whole tensors (the rule warns "
    "about tools that slice rows) (inferred)"
)
_ALIGN = "safetensors accepts any header length; unaligned data only costs a copy (inferred)"
_PADDING = "the padding is never read (comfy-kitchen slices it off): a hint about the writer"

#: sglang's reasons, by code.
SGLANG: dict[str, str] = {
    "QC119": _NO_SUB_BYTE,
    "QC122": _ALIGN,
    "QC206": "its inspector reads markers of any size",
    "QC313": "its W4A8 config reads weight_correction (_has_correction): the asymmetric layer "
    "keeps its zero point",
    "QC319": "ComfyUI's dequantize path; sglang's scale-shape rule is QC307",
    "QC320": "ComfyUI's default of 256 only; the marker rules (QC219) judge sglang's "
    "handling of a missing convrot_groupsize",
    "QC321": "a w6a8_int8 finding: sglang does not load the format (QC601)",
    "QC405": _PADDING,
    "QC505": "sglang loads the shard files, not the index's weight_map (inferred)",
}

#: ComfyUI's reasons, by code.
COMFYUI: dict[str, str] = {
    "QC119": _NO_SUB_BYTE,
    "QC122": _ALIGN,
    "QC205": "_load_quantized_module decodes the marker from its raw bytes "
    "(numpy().tobytes()): any dtype reads the same JSON",
    "QC206": "json.loads reads markers of any size",
    "QC211": "convert_old_quants writes the header entry over the tensor marker, and "
    "convrot is only tested for truthiness",
    "QC215": "_load_quantized_module reads only the keys it knows: producer _ keys are ignored",
    "QC218": "convrot is tested for truthiness (layer_conf.get('convrot'), ops.py ~L1231)",
    "QC308": "the padded, swizzled layout is comfy-kitchen's own: ComfyUI loads it as written",
    "QC312": "comfy-kitchen reads the W4A8 code width from the group scales: 6-bit layers load",
    "QC316": "ComfyUI builds INT8 linears quantized with or without convrot",
    "QC318": "the nvfp4 branch of _load_quantized_module never reads convrot",
    "QC405": _PADDING,
    "QC505": "ComfyUI loads the files it is given, not the index's weight_map",
}
