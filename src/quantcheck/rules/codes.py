"""Every rule bound to a constant named by its code: checks emit these, never code strings.

`Diagnostic(QC301, ...)` stores the rule's code. The names are declared here (so a type checker
rejects an unknown one) and bound on first use: a catalog is imported only when a check
uses one of its codes, not by every module that can (a clean file's check loads few). Kept in
step with the registry by tests/rules/test_rule_constants.py.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from quantcheck.rules.registry import Rule


def __getattr__(name: str) -> Rule:
    """`QCnnn`: the registry's rule, bound into the module on first use."""
    try:
        rule = rule_of(name)
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = rule
    return rule


def rule_of(code: str) -> Rule:
    """The registered rule of `code`, importing only the catalog that holds it (`_HOMES`);
    a code no catalog here names (a runtime registered at run time) is looked up in the
    whole registry. KeyError for an unknown code."""
    from importlib import import_module

    for module, codes in _HOMES.items():
        if code in codes.split() and _in_registry(module):
            rules: tuple[Rule, ...] = tuple(import_module(module).RULES)
            found = next((r for r in rules if r.code == code), None)
            if found is not None:
                return found
    if not code.startswith("QC"):
        raise KeyError(code)
    from quantcheck.rules.registry import all_rules

    return all_rules()[code]


def _in_registry(catalog: str) -> bool:
    """Whether the registry reads `catalog`: a generic one, or a registered runtime's."""
    from quantcheck.rules.registry import CATALOGS
    from quantcheck.runtimes import runtimes

    folder = catalog.removesuffix(".catalog")
    if folder.removeprefix("quantcheck.rules.") in CATALOGS:
        return True
    return any(rt.folder == folder for rt in runtimes())


QC101: Rule  # file-too-small
QC102: Rule  # header-too-large
QC103: Rule  # header-past-eof
QC104: Rule  # header-not-utf8
QC105: Rule  # header-not-json
QC106: Rule  # header-not-object
QC107: Rule  # duplicate-key
QC108: Rule  # metadata-not-string-map
QC109: Rule  # unknown-dtype
QC110: Rule  # bad-shape
QC111: Rule  # bad-offsets
QC112: Rule  # size-overflow
QC113: Rule  # size-not-whole-bytes
QC114: Rule  # size-mismatch
QC115: Rule  # offsets-gap
QC116: Rule  # offsets-overlap
QC117: Rule  # data-truncated
QC118: Rule  # data-trailing
QC119: Rule  # packed-rows-misaligned
QC120: Rule  # json-too-deep
QC121: Rule  # tensor-entry-malformed
QC122: Rule  # header-unaligned
QC201: Rule  # marker-invalid-json
QC202: Rule  # marker-not-object
QC203: Rule  # marker-all-zero
QC204: Rule  # marker-dtype-unreadable
QC205: Rule  # marker-dtype-not-u8
QC206: Rule  # marker-too-large
QC207: Rule  # marker-encoding-nonstandard
QC208: Rule  # quantization-metadata-invalid
QC209: Rule  # header-marker-not-object
QC210: Rule  # marker-conflict
QC211: Rule  # marker-loose-equality
QC212: Rule  # marker-format-missing
QC213: Rule  # marker-format-unknown
QC214: Rule  # format-third-party
QC215: Rule  # marker-underscore-keys
QC216: Rule  # marker-unknown-key
QC218: Rule  # convrot-not-boolean
QC219: Rule  # convrot-groupsize-invalid
QC220: Rule  # group-size-invalid
QC221: Rule  # marker-key-invalid
QC222: Rule  # header-layer-unmatched
QC223: Rule  # marker-orphan
QC225: Rule  # w4a8-convrot-missing
QC301: Rule  # companion-missing
QC302: Rule  # companion-unexpected
QC303: Rule  # weight-dtype
QC304: Rule  # marker-on-unquantized-layer
QC305: Rule  # companion-dtype
QC306: Rule  # weight-not-2d
QC307: Rule  # companion-shape
QC308: Rule  # padded-layout-for-sglang
QC311: Rule  # format-constraint
QC312: Rule  # w4a8-6bit
QC313: Rule  # correction-ignored-by-comfyui
QC314: Rule  # quantized-weight-unmarked
QC315: Rule  # legacy-scaled-fp8
QC316: Rule  # int8-linear-without-convrot
QC318: Rule  # nvfp4-rotated
QC319: Rule  # comfyui-dequantize-fails
QC320: Rule  # convrot-groupsize-defaulted-by-comfyui
QC321: Rule  # packed-width
QC401: Rule  # scale-not-finite
QC402: Rule  # scale-negative
QC403: Rule  # scale-zero
QC404: Rule  # e8m0-nan-byte
QC405: Rule  # swizzle-padding-nonzero
QC406: Rule  # block-scales-not-swizzled
QC407: Rule  # codes-out-of-range
QC408: Rule  # layer-all-zero
QC409: Rule  # codebook-invalid
QC501: Rule  # duplicate-tensor-across-shards
QC502: Rule  # index-path-escapes
QC503: Rule  # index-invalid
QC504: Rule  # index-shard-missing
QC505: Rule  # index-weight-map-mismatch
QC506: Rule  # shard-set-incomplete
QC601: Rule  # format-unsupported-by-sglang
QC602: Rule  # format-mix-unsupported
QC603: Rule  # sglang-constructor-refuses
QC604: Rule  # quant-format-mxfp8-conflict
QC605: Rule  # dtype-stops-comfyui-default-loader
QC606: Rule  # format-needs-comfyui-v0.27
QC607: Rule  # format-needs-comfyui-v0.31
QC608: Rule  # format-needs-comfyui-0271a469
QC609: Rule  # format-needs-comfyui-2026-09-29
QC610: Rule  # format-unsupported-by-comfyui
QC611: Rule  # sglang-0518-markers-not-read
QC612: Rule  # sglang-0519-markers-not-identical
QC613: Rule  # sglang-0519-int8-marker-refused
QC614: Rule  # sglang-0519-nvfp4-needs-fpmm
QC615: Rule  # sglang-mxfp8-weight-load
QC616: Rule  # sglang-header-path
QC617: Rule  # sglang-header-fp8-sweeps-layers
QC618: Rule  # sglang-header-ignored-silently
QC619: Rule  # sglang-0518-nvfp4-group-size
QC620: Rule  # header-format-rowwise-fp8
QC621: Rule  # rowwise-fp8-format-version
QC622: Rule  # rowwise-fp8-header-contract
QC623: Rule  # rowwise-fp8-layer-tensors
QC624: Rule  # sglang-header-path-raises
QC630: Rule  # sglang-header-fp8-weight-load
QC631: Rule  # sglang-override-undeclared
QC632: Rule  # sglang-override-declaration-invalid
QC633: Rule  # sglang-override-nvfp4-degraded
QC634: Rule  # sglang-override-nvfp4-fails
QC635: Rule  # sglang-comfyui-mode-unquantized
QC636: Rule  # sglang-comfyui-mode-packed
QC637: Rule  # sglang-comfyui-mode-spec-refuses
QC638: Rule  # sglang-marker-readers-refuse-header-formats
QC650: Rule  # format-needs-comfyui-v0.18
QC651: Rule  # format-needs-comfyui-v0.28
QC701: Rule  # format-unsupported-by-forge-neo
QC702: Rule  # format-needs-forge-neo-939c56d
QC703: Rule  # header-replaces-marker-in-forge-neo
QC710: Rule  # format-unsupported-by-sdnext
QC711: Rule  # format-mix-refused-by-sdnext
QC712: Rule  # nvfp4-marker-refused-by-sdnext
QC713: Rule  # convrot-group-refused-by-sdnext
QC714: Rule  # weight-dtype-refused-by-sdnext
QC715: Rule  # nvfp4-scales-unpadded-for-sdnext
QC716: Rule  # header-replaces-marker-in-sdnext
QC717: Rule  # marker-params-ignored-by-sdnext
QC720: Rule  # invokeai-dequantized-at-load
QC721: Rule  # invokeai-convrot-weights-rotated
QC722: Rule  # invokeai-scales-misread
QC723: Rule  # invokeai-weight-shape-after-dequantize
QC724: Rule  # invokeai-companions-kept
QC725: Rule  # invokeai-scale-weight-dropped
QC730: Rule  # diffsynth-format-not-loaded
QC731: Rule  # diffsynth-marker-without-weight-or-scale
QC732: Rule  # diffsynth-convrot-group-refused
QC733: Rule  # diffsynth-header-markers-ignored
QC734: Rule  # diffsynth-unexpected-companions
QC735: Rule  # diffsynth-marker-dtype-cast
QC736: Rule  # diffsynth-marker-not-plain-utf8
QC740: Rule  # sdcpp-format-not-loaded
QC741: Rule  # sdcpp-fp8-scale-ignored
QC742: Rule  # sdcpp-mxfp8-scales-dropped
QC743: Rule  # sdcpp-int8-unclaimed
QC744: Rule  # sdcpp-int8-scale-shape
QC745: Rule  # sdcpp-int8-scale-missing
QC746: Rule  # sdcpp-convrot-group
QC747: Rule  # sdcpp-dtype-unsupported
QC748: Rule  # sdcpp-int8-weight-not-i8
QC749: Rule  # sdcpp-convrot-in-params
QC750: Rule  # musubi-missing-siblings
QC751: Rule  # musubi-format-unsupported
QC752: Rule  # musubi-convrot-required
QC753: Rule  # musubi-convrot-group
QC754: Rule  # musubi-weight-layout
QC755: Rule  # musubi-scale-layout
QC756: Rule  # musubi-marker-not-1d
QC757: Rule  # musubi-duplicate-scale
QC758: Rule  # musubi-convrot-truthy
QC759: Rule  # musubi-scale-weight-dtype
QC760: Rule  # musubi-byte-weight-unmarked
QC761: Rule  # musubi-dtype-unreadable
QC762: Rule  # musubi-text-encoder-formats
QC763: Rule  # musubi-text-encoder-nvfp4
QC764: Rule  # musubi-nvfp4-layout
QC765: Rule  # musubi-text-encoder-module-kind
QC766: Rule  # musubi-h3-header
QC800: Rule  # gpu-known-crash
QC801: Rule  # gpu-known-wrong-output
QC802: Rule  # gpu-known-slow
QC803: Rule  # gpu-size-limit
QC830: Rule  # lora-key-not-loaded
QC831: Rule  # lora-text-encoder-keys
QC832: Rule  # lora-shape-mismatch
QC833: Rule  # lora-patch-raises
QC834: Rule  # lora-drowned-by-requant
QC835: Rule  # lora-runs-dequantized
QC836: Rule  # lora-keys-not-predicted
QC837: Rule  # lora-nothing-loaded
QC838: Rule  # lora-lost-on-runtime
QC839: Rule  # lora-side-branch
QC840: Rule  # lora-slice-of-fused-layer
QC860: Rule  # family-detect-packed
QC861: Rule  # family-keep-high-precision
QC862: Rule  # family-layers-missing
QC863: Rule  # family-layers-extra
QC864: Rule  # family-topology

__all__ = [
    "QC101",
    "QC102",
    "QC103",
    "QC104",
    "QC105",
    "QC106",
    "QC107",
    "QC108",
    "QC109",
    "QC110",
    "QC111",
    "QC112",
    "QC113",
    "QC114",
    "QC115",
    "QC116",
    "QC117",
    "QC118",
    "QC119",
    "QC120",
    "QC121",
    "QC122",
    "QC201",
    "QC202",
    "QC203",
    "QC204",
    "QC205",
    "QC206",
    "QC207",
    "QC208",
    "QC209",
    "QC210",
    "QC211",
    "QC212",
    "QC213",
    "QC214",
    "QC215",
    "QC216",
    "QC218",
    "QC219",
    "QC220",
    "QC221",
    "QC222",
    "QC223",
    "QC225",
    "QC301",
    "QC302",
    "QC303",
    "QC304",
    "QC305",
    "QC306",
    "QC307",
    "QC308",
    "QC311",
    "QC312",
    "QC313",
    "QC314",
    "QC315",
    "QC316",
    "QC318",
    "QC319",
    "QC320",
    "QC321",
    "QC401",
    "QC402",
    "QC403",
    "QC404",
    "QC405",
    "QC406",
    "QC407",
    "QC408",
    "QC409",
    "QC501",
    "QC502",
    "QC503",
    "QC504",
    "QC505",
    "QC506",
    "QC601",
    "QC602",
    "QC603",
    "QC604",
    "QC605",
    "QC606",
    "QC607",
    "QC608",
    "QC609",
    "QC610",
    "QC611",
    "QC612",
    "QC613",
    "QC614",
    "QC615",
    "QC616",
    "QC617",
    "QC618",
    "QC619",
    "QC620",
    "QC621",
    "QC622",
    "QC623",
    "QC624",
    "QC630",
    "QC631",
    "QC632",
    "QC633",
    "QC634",
    "QC635",
    "QC636",
    "QC637",
    "QC638",
    "QC650",
    "QC651",
    "QC701",
    "QC702",
    "QC703",
    "QC710",
    "QC711",
    "QC712",
    "QC713",
    "QC714",
    "QC715",
    "QC716",
    "QC717",
    "QC720",
    "QC721",
    "QC722",
    "QC723",
    "QC724",
    "QC725",
    "QC730",
    "QC731",
    "QC732",
    "QC733",
    "QC734",
    "QC735",
    "QC736",
    "QC740",
    "QC741",
    "QC742",
    "QC743",
    "QC744",
    "QC745",
    "QC746",
    "QC747",
    "QC748",
    "QC749",
    "QC750",
    "QC751",
    "QC752",
    "QC753",
    "QC754",
    "QC755",
    "QC756",
    "QC757",
    "QC758",
    "QC759",
    "QC760",
    "QC761",
    "QC762",
    "QC763",
    "QC764",
    "QC765",
    "QC766",
    "QC800",
    "QC801",
    "QC802",
    "QC803",
    "QC830",
    "QC831",
    "QC832",
    "QC833",
    "QC834",
    "QC835",
    "QC836",
    "QC837",
    "QC838",
    "QC839",
    "QC840",
    "QC860",
    "QC861",
    "QC862",
    "QC863",
    "QC864",
]

#: the catalog module that holds each code (a code binds by importing only its catalog)
_HOMES = {
    "quantcheck.rules.container.catalog": (
        "QC101 QC102 QC103 QC104 QC105 QC106 QC107 QC108 QC109 QC110 QC111 QC112 "
        "QC113 QC114 QC115 QC116 QC117 QC118 QC119 QC120 QC121 QC122"
    ),
    "quantcheck.rules.markers.catalog": (
        "QC201 QC202 QC203 QC204 QC205 QC206 QC207 QC208 QC209 QC210 QC211 QC212 "
        "QC213 QC214 QC215 QC216 QC218 QC219 QC220 QC221 QC222 QC223 QC225"
    ),
    "quantcheck.rules.layers.catalog": (
        "QC301 QC302 QC303 QC304 QC305 QC306 QC307 QC308 QC311 QC312 QC313 QC314 "
        "QC315 QC316 QC318 QC319 QC320 QC321"
    ),
    "quantcheck.rules.numeric.catalog": ("QC401 QC402 QC403 QC404 QC405 QC406 QC407 QC408 QC409"),
    "quantcheck.rules.shards.catalog": ("QC501 QC502 QC503 QC504 QC505 QC506"),
    "quantcheck.rules.sglang.catalog": (
        "QC601 QC602 QC603 QC604 QC611 QC612 QC613 QC614 QC615 QC616 QC617 QC618 "
        "QC619 QC620 QC621 QC622 QC623 QC624 QC630 QC631 QC632 QC633 QC634 QC635 "
        "QC636 QC637 QC638"
    ),
    "quantcheck.rules.comfyui.catalog": ("QC605 QC606 QC607 QC608 QC609 QC610 QC650 QC651"),
    "quantcheck.rules.forge_neo.catalog": ("QC701 QC702 QC703"),
    "quantcheck.rules.sdnext.catalog": ("QC710 QC711 QC712 QC713 QC714 QC715 QC716 QC717"),
    "quantcheck.rules.invokeai.catalog": ("QC720 QC721 QC722 QC723 QC724 QC725"),
    "quantcheck.rules.diffsynth.catalog": ("QC730 QC731 QC732 QC733 QC734 QC735 QC736"),
    "quantcheck.rules.sdcpp.catalog": (
        "QC740 QC741 QC742 QC743 QC744 QC745 QC746 QC747 QC748 QC749"
    ),
    "quantcheck.rules.musubi.catalog": (
        "QC750 QC751 QC752 QC753 QC754 QC755 QC756 QC757 QC758 QC759 QC760 QC761 "
        "QC762 QC763 QC764 QC765 QC766"
    ),
    "quantcheck.rules.gpu.catalog": ("QC800 QC801 QC802 QC803"),
    "quantcheck.rules.lora.catalog": (
        "QC830 QC831 QC832 QC833 QC834 QC835 QC836 QC837 QC838 QC839 QC840"
    ),
    "quantcheck.rules.family.catalog": ("QC860 QC861 QC862 QC863 QC864"),
}
