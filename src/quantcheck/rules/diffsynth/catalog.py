"""QC73x: DiffSynth-Studio's own rules (what it refuses or silently changes)."""

from __future__ import annotations

from quantcheck.rules.levels import Safety, Severity
from quantcheck.rules.rule import Rule, effects, rule_in_doc_order

E = Severity.ERROR
#: DiffSynth-Studio 2.1.12 on PyPI = upstream modelscope/DiffSynth-Studio @5881b2a.
DS = (
    "DiffSynth-Studio 2.1.12 (PyPI wheel; upstream @5881b2a) "
    "diffsynth/core/quant/backends/comfy_kitchen.py"
)
DS_RUN = (
    "verified by running DiffSynth-Studio 2.1.12's own _parse_marker and "
    "ComfyKitchenQuantBackend.unflatten_state_dict (with comfy-kitchen 0.2.40) on generated "
    "checkpoints, then a strict load_state_dict(assign=True) into its ComfyKitchenLinear shell "
    "as diffsynth/core/loader/model.py load_model does (tests/rules/diffsynth/diff, "
    "make diff-consumers)"
)
_D = "diffsynth"
_FAILS = effects(**{_D: "fails"})

RULES: list[Rule] = [
    rule_in_doc_order(
        "QC730",
        "diffsynth-format-not-loaded",
        E,
        "marker tensor format DiffSynth-Studio does not load",
        "Each comfy_quant marker TENSOR names format float8_e4m3fn or int8_tensorwise.",
        "DiffSynth-Studio's comfy-kitchen backend knows only those two formats; _parse_marker "
        "raises ValueError for any other (\"`X` uses format `F`, not in ['float8_e4m3fn', "
        "'int8_tensorwise'].\") or a marker without format (\"`X.comfy_quant` has no `format` "
        'field."). Only the tensor marker counts: a format given in the header alone does not '
        "help.",
        '{"format": "nvfp4"}',
        "Requantize the layers to int8_tensorwise or float8_e4m3fn for DiffSynth-Studio.",
        _FAILS,
        Safety.UNSAFE,
        f"{DS} _parse_marker, FORMATS; {DS_RUN}.",
    ),
    rule_in_doc_order(
        "QC731",
        "diffsynth-marker-without-weight-or-scale",
        E,
        "marked layer without weight or weight_scale",
        "A layer with a comfy_quant marker tensor has both weight and weight_scale.",
        'unflatten_state_dict raises ValueError ("`X` has a comfy_quant marker but no '
        '`weight`." / "... no `weight_scale`.") before anything is built.',
        "blocks.0.attn.qkv.comfy_quant and .weight, no .weight_scale",
        "Add the missing scale (or remove the marker of a layer that is not quantized).",
        _FAILS,
        None,
        f"{DS} ComfyKitchenQuantBackend.unflatten_state_dict; {DS_RUN}.",
    ),
    rule_in_doc_order(
        "QC732",
        "diffsynth-convrot-group-refused",
        E,
        "rotated INT8 group size DiffSynth-Studio refuses",
        "A rotated int8_tensorwise marker's convrot_groupsize (default 256) is an integer that "
        "divides K (the weight's columns).",
        "TensorWiseInt8Format.params_from_marker reads the group with int() and raises "
        'ValueError ("The marker of `X` asks for convrot with groupsize G, which does not '
        'divide in_features=K.") when it does not divide K.',
        '{"format": "int8_tensorwise", "convrot": true} on a layer with K = 3072 (256 does not '
        "divide it)",
        "Write the group size the weights were rotated with (16, 64 or 256, dividing K).",
        _FAILS,
        Safety.DISPLAY,
        f"{DS} TensorWiseInt8Format.params_from_marker; {DS_RUN}.",
    ),
    rule_in_doc_order(
        "QC733",
        "diffsynth-header-markers-ignored",
        E,
        "layer quantized only per the header: DiffSynth-Studio does not see it",
        "Every quantized layer has a comfy_quant marker TENSOR, not only a "
        "_quantization_metadata header entry.",
        "load_model passes the header to unflatten_state_dict, which ignores it: a header-only "
        "layer stays a raw INT8/FP8 weight plus weight_scale, and the strict "
        "load_state_dict(assign=True) raises RuntimeError (Unexpected key(s) in state_dict: "
        "'X.weight_scale').",
        '__metadata__._quantization_metadata {"layers": {"blocks.0.attn.qkv": {"format": '
        '"int8_tensorwise"}}} and no blocks.0.attn.qkv.comfy_quant tensor',
        "Write the header markers as comfy_quant tensors too.",
        _FAILS,
        Safety.DISPLAY,
        f"{DS} unflatten_state_dict (metadata unused); diffsynth/core/loader/model.py "
        f"load_model (strict load_state_dict); {DS_RUN}.",
    ),
    rule_in_doc_order(
        "QC734",
        "diffsynth-unexpected-companions",
        E,
        "marked layer stores tensors DiffSynth-Studio does not consume",
        "A layer with an int8_tensorwise or float8_e4m3fn marker tensor holds only weight, "
        "weight_scale, the marker, bias (and input_scale for FP8).",
        "unflatten_state_dict pops only the marker and weight_scale (the FP8 shell pops "
        "input_scale); any other sibling reaches the strict load_state_dict as an unexpected "
        "key. Likely fails: a model's state_dict_converter could drop it first.",
        "blocks.0.attn.qkv.input_scale beside an int8_tensorwise layer",
        "Remove the tensors the format does not use.",
        _FAILS,
        None,
        f"{DS} unflatten_state_dict, ComfyKitchenFP8Linear._load_from_state_dict; "
        f"diffsynth/core/loader/model.py load_model; {DS_RUN} (without a model's "
        "state_dict_converter).",
    ),
    rule_in_doc_order(
        "QC735",
        "diffsynth-marker-dtype-cast",
        E,
        "marker tensor dtype whose values are not its bytes",
        "Each comfy_quant marker tensor is U8 (I8 also survives).",
        "_parse_marker decodes bytes(marker.to(torch.uint8).tolist()): the tensor's VALUES are "
        "converted, so a marker stored as I16, F32, ... no longer spells its JSON and "
        '_parse_marker raises "`X.comfy_quant` is not valid JSON".',
        "blocks.0.attn.qkv.comfy_quant I32 [12]",
        "Rewrite the marker as U8 bytes of its JSON text.",
        _FAILS,
        Safety.DISPLAY,
        f"{DS} _parse_marker; {DS_RUN}.",
    ),
    rule_in_doc_order(
        "QC736",
        "diffsynth-marker-not-plain-utf8",
        E,
        "marker text with a BOM or in UTF-16/32: DiffSynth-Studio refuses it",
        "Each comfy_quant marker tensor is plain UTF-8 JSON (no byte-order mark).",
        "ComfyUI decodes markers with json.loads on the bytes, which accepts a BOM and "
        "UTF-16/32 (QC207); DiffSynth-Studio decodes with bytes.decode() (strict UTF-8, the BOM "
        'kept) and json.loads on the text, which raises ("`X.comfy_quant` is not valid JSON: '
        'Unexpected UTF-8 BOM").',
        'blocks.0.attn.qkv.comfy_quant = EF BB BF + \'{"format": "int8_tensorwise"}\'',
        "Rewrite the marker as plain UTF-8 JSON bytes.",
        _FAILS,
        Safety.DISPLAY,
        f"{DS} _parse_marker; {DS_RUN}.",
    ),
]
