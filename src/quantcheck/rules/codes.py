"""Every rule bound to a constant named by its code: checks emit these, never code strings.

`Diagnostic(QC301, ...)` stores the rule's code; an unknown name fails at import, not at run
time. Kept in step with the registry by tests/rules/test_rule_constants.py.
"""

from __future__ import annotations

from quantcheck.rules.registry import Rule, all_rules

_RULES = all_rules()

QC101: Rule = _RULES["QC101"]  # file-too-small
QC102: Rule = _RULES["QC102"]  # header-too-large
QC103: Rule = _RULES["QC103"]  # header-past-eof
QC104: Rule = _RULES["QC104"]  # header-not-utf8
QC105: Rule = _RULES["QC105"]  # header-not-json
QC106: Rule = _RULES["QC106"]  # header-not-object
QC107: Rule = _RULES["QC107"]  # duplicate-key
QC108: Rule = _RULES["QC108"]  # metadata-not-string-map
QC109: Rule = _RULES["QC109"]  # unknown-dtype
QC110: Rule = _RULES["QC110"]  # bad-shape
QC111: Rule = _RULES["QC111"]  # bad-offsets
QC112: Rule = _RULES["QC112"]  # size-overflow
QC113: Rule = _RULES["QC113"]  # size-not-whole-bytes
QC114: Rule = _RULES["QC114"]  # size-mismatch
QC115: Rule = _RULES["QC115"]  # offsets-gap
QC116: Rule = _RULES["QC116"]  # offsets-overlap
QC117: Rule = _RULES["QC117"]  # data-truncated
QC118: Rule = _RULES["QC118"]  # data-trailing
QC119: Rule = _RULES["QC119"]  # packed-rows-misaligned
QC120: Rule = _RULES["QC120"]  # json-too-deep
QC121: Rule = _RULES["QC121"]  # tensor-entry-malformed
QC122: Rule = _RULES["QC122"]  # header-unaligned
QC201: Rule = _RULES["QC201"]  # marker-invalid-json
QC202: Rule = _RULES["QC202"]  # marker-not-object
QC203: Rule = _RULES["QC203"]  # marker-all-zero
QC204: Rule = _RULES["QC204"]  # marker-dtype-unreadable
QC205: Rule = _RULES["QC205"]  # marker-dtype-not-u8
QC206: Rule = _RULES["QC206"]  # marker-too-large
QC207: Rule = _RULES["QC207"]  # marker-encoding-nonstandard
QC208: Rule = _RULES["QC208"]  # quantization-metadata-invalid
QC209: Rule = _RULES["QC209"]  # header-marker-not-object
QC210: Rule = _RULES["QC210"]  # marker-conflict
QC211: Rule = _RULES["QC211"]  # marker-loose-equality
QC212: Rule = _RULES["QC212"]  # marker-format-missing
QC213: Rule = _RULES["QC213"]  # marker-format-unknown
QC214: Rule = _RULES["QC214"]  # format-third-party
QC215: Rule = _RULES["QC215"]  # marker-underscore-keys
QC216: Rule = _RULES["QC216"]  # marker-unknown-key
QC218: Rule = _RULES["QC218"]  # convrot-not-boolean
QC219: Rule = _RULES["QC219"]  # convrot-groupsize-invalid
QC220: Rule = _RULES["QC220"]  # group-size-invalid
QC221: Rule = _RULES["QC221"]  # marker-key-invalid
QC222: Rule = _RULES["QC222"]  # header-layer-unmatched
QC223: Rule = _RULES["QC223"]  # marker-orphan
QC225: Rule = _RULES["QC225"]  # w4a8-convrot-missing
QC301: Rule = _RULES["QC301"]  # companion-missing
QC302: Rule = _RULES["QC302"]  # companion-unexpected
QC303: Rule = _RULES["QC303"]  # weight-dtype
QC304: Rule = _RULES["QC304"]  # marker-on-unquantized-layer
QC305: Rule = _RULES["QC305"]  # companion-dtype
QC306: Rule = _RULES["QC306"]  # weight-not-2d
QC307: Rule = _RULES["QC307"]  # companion-shape
QC308: Rule = _RULES["QC308"]  # padded-layout-for-sglang
QC311: Rule = _RULES["QC311"]  # format-constraint
QC312: Rule = _RULES["QC312"]  # w4a8-6bit
QC313: Rule = _RULES["QC313"]  # correction-ignored-by-comfyui
QC314: Rule = _RULES["QC314"]  # quantized-weight-unmarked
QC315: Rule = _RULES["QC315"]  # legacy-scaled-fp8
QC316: Rule = _RULES["QC316"]  # int8-linear-without-convrot
QC318: Rule = _RULES["QC318"]  # nvfp4-rotated
QC401: Rule = _RULES["QC401"]  # scale-not-finite
QC402: Rule = _RULES["QC402"]  # scale-negative
QC403: Rule = _RULES["QC403"]  # scale-zero
QC404: Rule = _RULES["QC404"]  # e8m0-nan-byte
QC405: Rule = _RULES["QC405"]  # swizzle-padding-nonzero
QC406: Rule = _RULES["QC406"]  # block-scales-not-swizzled
QC407: Rule = _RULES["QC407"]  # codes-out-of-range
QC408: Rule = _RULES["QC408"]  # layer-all-zero
QC409: Rule = _RULES["QC409"]  # codebook-invalid
QC501: Rule = _RULES["QC501"]  # duplicate-tensor-across-shards
QC502: Rule = _RULES["QC502"]  # index-path-escapes
QC503: Rule = _RULES["QC503"]  # index-invalid
QC504: Rule = _RULES["QC504"]  # index-shard-missing
QC505: Rule = _RULES["QC505"]  # index-weight-map-mismatch
QC506: Rule = _RULES["QC506"]  # shard-set-incomplete
QC601: Rule = _RULES["QC601"]  # format-unsupported-by-sglang
QC602: Rule = _RULES["QC602"]  # format-mix-unsupported
QC603: Rule = _RULES["QC603"]  # sglang-constructor-refuses
QC604: Rule = _RULES["QC604"]  # quant-format-mxfp8-conflict
QC611: Rule = _RULES["QC611"]  # sglang-0518-markers-not-read
QC612: Rule = _RULES["QC612"]  # sglang-0519-markers-not-identical
QC613: Rule = _RULES["QC613"]  # sglang-0519-int8-marker-refused
QC614: Rule = _RULES["QC614"]  # sglang-0519-nvfp4-needs-fpmm
QC615: Rule = _RULES["QC615"]  # sglang-mxfp8-scales-swizzled-twice

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
    "QC611",
    "QC612",
    "QC613",
    "QC614",
    "QC615",
]
