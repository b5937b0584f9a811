"""The rule table: one compact failing case (and its passing twin) per registered code.

Deeper hostile-file tests for the container (QC1xx), marker (QC2xx) and shard (QC5xx) readers
live in `tests/test_header.py` and `tests/test_markers.py`; here each code only needs one
realistic trigger. QC4xx cases go in `cases_numeric.py`.
"""

from __future__ import annotations

import json

from ._build import (
    INT8_CONVROT,
    W4A8,
    P,
    awq,
    bf16,
    entry,
    file,
    fp8,
    fp8_with,
    header_meta,
    index,
    int8,
    marker,
    mxfp8,
    nvfp4,
    raw_bytes,
    raw_file,
    rowwise,
    shards,
    t,
    w4a4,
    w4a8,
    w6a8,
    write_safetensors,
)
from ._case import RuleCase, eff

FAIL2 = eff("fails", "fails")


def shard_set(parts: tuple[int, ...], total: int):
    """Members `parts` of a `model-0000k-of-0000n.safetensors` set, without an index."""

    def build(tmp):
        out = []
        for i in parts:
            path = tmp / f"model-{i:05d}-of-{total:05d}.safetensors"
            write_safetensors(path, bf16(f"l{i}"))
            out.append(path)
        return out

    return build


NONE2 = eff("none", "none")


def _prefixed_int8(others: int):
    """An unmarked INT8 ConvRot layer under model.diffusion_model. and `others` BF16 layers
    beside it (2 + others keys carry the prefix)."""
    pre = "model.diffusion_model."
    return [*int8(pre + P)[:-1], *(x for i in range(others) for x in bf16(f"{pre}blocks.{i}.ff"))]


def _bad_correction():
    """A W4A8 layer whose weight_correction is [N, K/g] instead of [K/g, N]."""
    return [
        t(x.name, "F32", (32, 4)) if x.name.endswith("weight_correction") else x
        for x in w4a8(correction="F32")
    ]


def _mxfp8_e8m0():
    """An MXFP8 layer whose block scales are typed F8_E8M0 (ComfyUI's format stores U8)."""
    return [
        t(x.name, "F8_E8M0", x.shape) if x.name.endswith("weight_scale") else x for x in mxfp8()
    ]


SG_ONLY = eff("fails", "none")
ALL_SG = {"target": "sglang@all"}
#: what a header-declared FP8 twin still reports: sglang reads it through its header path
HEADER_FP8 = ("QC616",)
#: what a valid rowwise FP8 file reports: the header path, and ComfyUI not knowing the format
ROWWISE_OK = ("QC616", "QC620")
ALL_CUI = {"target": "comfyui@all"}
FP8_MARK = {"format": "float8_e4m3fn"}
#: What every w6a8_int8 file reports: sglang 0.5.23 lacks it, and so does ComfyUI up to
#: 0271a469 (QC610, shown with --target comfyui@0271a469; the newest ComfyUI step loads it).
W6A8_ALWAYS = ("QC601", "QC610")
OLD_CUI = {"target": "comfyui@0271a469"}
FC1 = "blocks.0.mlp.fc1"

# A valid one-tensor container: the twin of every QC1xx case.
VALID_HDR = {"a.weight": entry("F32", [4], 0, 16)}
VALID = raw_file(VALID_HDR, bytes(16))


def _unaligned_header() -> str:
    text = json.dumps(VALID_HDR, separators=(",", ":"))
    return text + " " * ((1 - len(text)) % 8)  # length % 8 == 1


CONTAINER = [
    RuleCase("QC101", "two-byte-file", raw_bytes(b"\x01\x02"), FAIL2, VALID),
    RuleCase("QC102", "length-2^63", raw_file("{}", length=2**63 - 1), FAIL2, VALID),
    RuleCase("QC103", "length-past-eof", raw_file("{}", length=4096), FAIL2, VALID),
    RuleCase("QC104", "latin1-name", raw_file(b'{"caf\xe9.weight":{}}'), FAIL2, VALID),
    RuleCase("QC105", "truncated-json", raw_file('{"a.weight": {"dtype": '), FAIL2, VALID),
    RuleCase("QC106", "array-header", raw_file('["a.weight"]'), FAIL2, VALID),
    RuleCase(
        "QC107",
        "duplicate-tensor-key",
        raw_file(
            '{"a.weight":'
            + json.dumps(entry("F32", [4], 0, 16))
            + ',"a.weight":'
            + json.dumps(entry("F32", [4], 0, 16))
            + "}",
            bytes(16),
        ),
        eff("degraded", "degraded"),
        VALID,
    ),
    RuleCase(
        "QC108",
        "metadata-int-value",
        raw_file({"__metadata__": {"format": "pt", "step": 1000}, **VALID_HDR}, bytes(16)),
        FAIL2,
        raw_file({"__metadata__": {"format": "pt", "step": "1000"}, **VALID_HDR}, bytes(16)),
    ),
    RuleCase(
        "QC109",
        "dtype-FP8",
        raw_file({"a.weight": entry("FP8", [4], 0, 4)}, bytes(4)),
        FAIL2,
        VALID,
    ),
    RuleCase(
        "QC110",
        "negative-dim",
        raw_file({"a.weight": entry("F32", [4, -1], 0, 16)}, bytes(16)),
        FAIL2,
        VALID,
    ),
    RuleCase(
        "QC111",
        "begin-after-end",
        raw_file({"a.weight": entry("F32", [4], 16, 0)}, bytes(16)),
        FAIL2,
        VALID,
    ),
    RuleCase(
        "QC112",
        "shape-overflows-u64",
        raw_file({"a.weight": entry("F32", [2**40, 2**40], 0, 0)}),
        FAIL2,
        VALID,
    ),
    RuleCase(
        "QC113",
        "three-f4-elements",
        raw_file({"a.weight": entry("F4", [3], 0, 2)}, bytes(2)),
        FAIL2,
        VALID,
    ),
    RuleCase(
        "QC114",
        "span-too-short",
        raw_file({"a.weight": entry("F32", [4], 0, 8)}, bytes(8)),
        FAIL2,
        VALID,
    ),
    RuleCase(
        "QC115",
        "gap-between-tensors",
        raw_file(
            {"a.weight": entry("F32", [4], 0, 16), "b.weight": entry("F32", [4], 32, 48)}, bytes(48)
        ),
        FAIL2,
        raw_file(
            {"a.weight": entry("F32", [4], 0, 16), "b.weight": entry("F32", [4], 16, 32)}, bytes(32)
        ),
    ),
    RuleCase(
        "QC116",
        "overlapping-tensors",
        raw_file(
            {"a.weight": entry("F32", [4], 0, 16), "b.weight": entry("F32", [4], 8, 24)}, bytes(24)
        ),
        FAIL2,
        raw_file(
            {"a.weight": entry("F32", [4], 0, 16), "b.weight": entry("F32", [4], 16, 32)}, bytes(32)
        ),
    ),
    RuleCase("QC117", "data-cut-short", raw_file(VALID_HDR, bytes(8)), FAIL2, VALID),
    RuleCase("QC118", "trailing-bytes", raw_file(VALID_HDR, bytes(16 + 4096)), FAIL2, VALID),
    RuleCase(
        "QC119",
        "f4-rows-of-3",
        raw_file({"a.weight": entry("F4", [2, 3], 0, 3)}, bytes(3)),
        NONE2,
        raw_file({"a.weight": entry("F4", [2, 4], 0, 4)}, bytes(4)),
    ),
    RuleCase("QC120", "nested-100000", raw_file("[" * 100_000 + "]" * 100_000), FAIL2, VALID),
    RuleCase(
        "QC121",
        "entry-without-offsets",
        raw_file({"a.weight": {"dtype": "F32", "shape": [4]}}),
        FAIL2,
        VALID,
    ),
    RuleCase(
        "QC122",
        "header-length-odd",
        raw_file(_unaligned_header(), bytes(16), pad=False),
        NONE2,
        VALID,
    ),
]

MARKERS = [
    RuleCase(
        "QC201",
        "nul-padded-json",
        file(fp8_with(marker(P, None, raw=b'{"format": \x00\x00'))),
        FAIL2,
        file(fp8),
    ),
    RuleCase("QC202", "json-array", file(lambda: fp8(mark=["float8_e4m3fn"])), FAIL2, file(fp8)),
    RuleCase(
        "QC203", "zeroed-marker", file(fp8_with(marker(P, None, raw=bytes(20)))), FAIL2, file(fp8)
    ),
    RuleCase(
        "QC204", "bf16-marker", file(fp8_with(marker(P, FP8_MARK, dtype="BF16"))), FAIL2, file(fp8)
    ),
    RuleCase(
        "QC205", "i8-marker", file(fp8_with(marker(P, FP8_MARK, dtype="I8"))), NONE2, file(fp8)
    ),
    RuleCase(
        "QC206",
        "marker-70KB",
        file(fp8_with(marker(P, None, raw=b" " * 70_000 + json.dumps(FP8_MARK).encode()))),
        NONE2,
        file(fp8),
    ),
    RuleCase(
        "QC207",
        "utf8-bom",
        file(fp8_with(marker(P, None, raw=b"\xef\xbb\xbf" + json.dumps(FP8_MARK).encode()))),
        NONE2,
        file(fp8),
    ),
    RuleCase(
        "QC208",
        "modelopt-metadata",
        file(fp8, {"_quantization_metadata": json.dumps({"quant_algo": "NVFP4"})}),
        FAIL2,
        file(fp8, header_meta({P: FP8_MARK})),
        twin_allows=HEADER_FP8,
    ),
    RuleCase(
        "QC209",
        "layer-entry-string",
        file(fp8, header_meta({P: "float8_e4m3fn"})),
        FAIL2,
        file(fp8, header_meta({P: FP8_MARK})),
        twin_allows=HEADER_FP8,
    ),
    RuleCase(
        "QC210",
        "header-vs-tensor-format",
        file(fp8, header_meta({P: {"format": "nvfp4"}})),
        eff("fails", "degraded"),
        file(fp8, header_meta({P: FP8_MARK})),
        twin_allows=HEADER_FP8,
        message="'format'",
    ),
    RuleCase(
        "QC211",
        "convrot-true-then-1",
        file(
            lambda: int8(mark={**INT8_CONVROT, "convrot": 1}), header_meta({P: {"convrot": True}})
        ),
        NONE2,
        file(int8, header_meta({P: {"convrot": True}})),
    ),
    RuleCase(
        "QC212",
        "no-format-key",
        file(lambda: int8(mark={"convrot": True, "convrot_groupsize": 16})),
        FAIL2,
        file(int8),
    ),
    RuleCase(
        "QC213",
        "format-uppercase",
        file(lambda: nvfp4(mark={"format": "NVFP4"})),
        FAIL2,
        file(nvfp4),
        message="did you mean 'nvfp4'",
    ),
    RuleCase(
        "QC214",
        "int8-blockwise",
        file(
            lambda: int8(
                n=128,
                k=128,
                scale=("F32", (1, 1)),
                mark={"format": "int8_blockwise", "group_size": 128},
            )
        ),
        FAIL2,
        file(lambda: int8(n=128, k=128)),
    ),
    RuleCase(
        "QC214",
        "fp8-rowwise",
        file(lambda: fp8(scale=("F32", (64,)), mark={"format": "float8_e4m3fn_rowwise"})),
        FAIL2,
        file(fp8),
    ),
    RuleCase(
        "QC214",
        "fp8-blockwise",
        file(lambda: fp8(scale=("F32", (1, 1)), mark={"format": "float8_e4m3fn_blockwise"})),
        FAIL2,
        file(fp8),
    ),
    RuleCase(
        "QC215",
        "stale-derived-key",
        file(lambda: int8(mark={**INT8_CONVROT, "_is_tensorwise_scalar": True})),
        eff("degraded", "none"),
        file(int8),
    ),
    RuleCase(
        "QC216",
        "misspelt-key",
        file(
            lambda: w4a4(
                mark={"format": "convrot_w4a4", "convrot_groupsize": 16, "convrot_group_size": 64}
            )
        ),
        NONE2,
        file(w4a4),
        message="'convrot_group_size'",
    ),
    RuleCase(
        "QC218",
        "convrot-1",
        file(lambda: int8(mark={**INT8_CONVROT, "convrot": 1})),
        SG_ONLY,
        file(int8),
    ),
    RuleCase(
        "QC219",
        "convrot-groupsize-missing",
        file(lambda: int8(mark={"format": "int8_tensorwise", "convrot": True})),
        SG_ONLY,
        file(int8),
    ),
    # ComfyUI int()s a string convrot_groupsize (ops.py ~L1234); only sglang refuses it.
    RuleCase(
        "QC219",
        "convrot-groupsize-string",
        file(lambda: int8(mark={**INT8_CONVROT, "convrot_groupsize": "16"})),
        SG_ONLY,
        file(int8),
        message="not a JSON integer",
    ),
    # ComfyUI int()s W4A8 / AWQ group sizes too (ops.py ~L1262, ~L1272; comfyui/diff case
    # w4a8-group-string); only sglang refuses the text.
    RuleCase(
        "QC220",
        "w4a8-group-string",
        file(lambda: w4a8(mark={**W4A8, "group_size": "16"})),
        SG_ONLY,
        file(w4a8),
        message="ComfyUI reads it with int()",
    ),
    RuleCase(
        "QC219",
        "w4a4-convrot-groupsize-string",
        file(lambda: w4a4(mark={"format": "convrot_w4a4", "convrot_groupsize": "16"})),
        SG_ONLY,
        file(w4a4),
        message="not a JSON integer",
    ),
    RuleCase(
        "QC220",
        "w4a8-group-24",
        file(lambda: w4a8(k=48, g=24)),
        FAIL2,
        file(lambda: w4a8(k=48, g=16)),
    ),
    RuleCase(
        "QC221",
        "linear-dtype-fp4",
        file(
            lambda: w4a4(
                mark={"format": "convrot_w4a4", "convrot_groupsize": 16, "linear_dtype": "fp4"}
            )
        ),
        FAIL2,
        file(
            lambda: w4a4(
                mark={"format": "convrot_w4a4", "convrot_groupsize": 16, "linear_dtype": "int8"}
            )
        ),
    ),
    # ComfyUI's second convert_old_quants pass re-attaches entries without the model prefix
    # once more than 5 keys carry it (comfyui_keys).
    RuleCase(
        "QC222",
        "header-without-model-prefix",
        # INT8, not FP8: a float8 header makes sglang's header path take the whole file (QC616)
        file(lambda: _prefixed_int8(4), header_meta({P: INT8_CONVROT})),
        SG_ONLY,
        message="ComfyUI re-attaches",
        twin=file(
            lambda: _prefixed_int8(4), header_meta({f"model.diffusion_model.{P}": INT8_CONVROT})
        ),
    ),
    RuleCase(
        "QC222",
        "header-without-model-prefix-few-keys",
        # 2 keys carry the prefix: ComfyUI strips "model." instead, the entry matches nothing
        file(lambda: _prefixed_int8(0), header_meta({P: INT8_CONVROT})),
        eff("fails", "degraded"),
        twin=file(
            lambda: _prefixed_int8(0), header_meta({f"model.diffusion_model.{P}": INT8_CONVROT})
        ),
    ),
    RuleCase(
        "QC222",
        "header-with-extra-prefix",
        # ComfyUI's strip keeps only the key it wrote for the entry: the tensors are dropped
        file(lambda: int8()[:-1], header_meta({f"model.diffusion_model.{P}": INT8_CONVROT})),
        eff("fails", "fails"),
        file(lambda: int8()[:-1], header_meta({P: INT8_CONVROT})),
        message="dropping the layer's tensors",
    ),
    RuleCase(
        "QC223", "stale-marker", file(lambda: [*fp8(), marker(FC1, FP8_MARK)]), SG_ONLY, file(fp8)
    ),
    RuleCase(
        "QC225",
        "w4a8-as-comfyui-saves",
        file(lambda: w4a8(mark={k: v for k, v in W4A8.items() if k != "convrot"})),
        SG_ONLY,
        file(w4a8),
    ),
]

LAYERS = [
    RuleCase(
        "QC301",
        "fp8-no-scale",
        file(lambda: fp8(with_scale=False)),
        FAIL2,
        file(fp8),
        message="weight_scale",
    ),
    RuleCase(
        "QC302",
        "int8-with-scale-2",
        file(lambda: [*int8(), t(f"{P}.weight_scale_2", "F32", ())]),
        NONE2,
        file(int8),
    ),
    RuleCase(
        "QC303",
        "nvfp4-marker-i8-weight",
        file(lambda: nvfp4(weight="I8")),
        eff("fails", "degraded"),
        file(nvfp4),
    ),
    RuleCase(
        "QC304",
        "int8-marker-bf16-weight",
        file(lambda: int8(weight=("BF16", (64, 64)))),
        eff("fails", "degraded"),
        file(int8),
    ),
    RuleCase(
        "QC305",
        "int8-f16-scale",
        file(lambda: int8(scale=("F16", (64, 1)))),
        SG_ONLY,
        file(int8),
        message="F16",
    ),
    # comfy-kitchen's w4a8_int8_linear takes only F32 channel scales: ComfyUI's forward raises.
    RuleCase(
        "QC305",
        "w4a8-bf16-channel-scale",
        file(lambda: w4a8(channel="BF16")),
        FAIL2,
        file(w4a8),
        message="sglang and ComfyUI need F32",
    ),
    RuleCase(
        "QC306",
        "int8-3d-weight",
        file(lambda: int8(weight=("I8", (2, 4, 32)), scale=("F32", ()))),
        eff("fails", "degraded"),
        file(int8),
    ),
    RuleCase(
        "QC307", "int8-1d-row-scale", file(lambda: int8(scale=("F32", (64,)))), SG_ONLY, file(int8)
    ),
    # ComfyUI never reads weight_correction: its shape cannot fail ComfyUI's load.
    RuleCase(
        "QC307",
        "w4a8-correction-wrong-shape",
        file(_bad_correction),
        SG_ONLY,
        file(lambda: w4a8(correction="F32")),
        message="weight_correction",
        twin_allows=("QC313",),
    ),
    RuleCase(
        "QC308",
        "nvfp4-padded-100x200",
        file(lambda: nvfp4(n=100, k=200)),
        SG_ONLY,
        file(lambda: nvfp4(n=128, k=256)),
        message="[128, 16]",
    ),
    # K=96: the CUDA kernel refuses, comfy-kitchen's eager kernel computes it (ComfyUI: none).
    RuleCase(
        "QC311",
        "w4a4-k-96",
        file(lambda: w4a4(k=96)),
        SG_ONLY,
        file(lambda: w4a4(k=128)),
        message="K a multiple of 64",
    ),
    RuleCase(
        "QC311",
        "w4a4-k-72-rotation-group",
        file(lambda: w4a4(k=72)),
        FAIL2,
        file(lambda: w4a4(k=128)),
        message="K a multiple of convrot_groupsize",
    ),
    RuleCase(
        "QC312",
        "w4a8-6bit",
        file(lambda: w4a8(n=8, k=64, bits=6)),
        SG_ONLY,
        file(lambda: w4a8(n=8, k=64)),
    ),
    RuleCase(
        "QC321",
        "w6a8-packed-width",
        file(lambda: w6a8(cols=32)),
        eff("none", "fails"),
        file(w6a8),
        message="says K=64",
        twin_allows=W6A8_ALWAYS,
    ),
    RuleCase(
        "QC305",
        "w6a8-bf16-channel-scale",
        file(lambda: w6a8(channel="BF16")),
        eff("none", "fails"),
        file(w6a8),
        message="ComfyUI needs F32",
        twin_allows=W6A8_ALWAYS,
    ),
    RuleCase(
        "QC311",
        "w6a8-group-16-k-48",
        file(lambda: w6a8(k=48, g=16)),
        eff("none", "fails"),
        file(lambda: w6a8(k=64, g=16)),
        message="K a multiple of 32",
        twin_allows=W6A8_ALWAYS,
    ),
    RuleCase(
        "QC311",
        "w6a8-group-8",
        file(lambda: w6a8(g=8)),
        eff("none", "fails"),
        file(w6a8),
        message="group_size a multiple of 16",
        twin_allows=W6A8_ALWAYS,
    ),
    RuleCase(
        "QC301",
        "w6a8-missing-group-scales",
        file(lambda: [x for x in w6a8() if not x.name.endswith("weight_s_rel")]),
        eff("none", "fails"),
        file(w6a8),
        twin_allows=W6A8_ALWAYS,
    ),
    RuleCase(
        "QC313",
        "w4a8-correction",
        file(lambda: w4a8(correction="F32")),
        eff("none", "degraded"),
        file(w4a8),
    ),
    RuleCase("QC314", "plain-fp8-cast", file(lambda: fp8()[:1]), SG_ONLY, file(fp8)),
    RuleCase(
        "QC315",
        "legacy-scaled-fp8",
        file(
            lambda: [
                t("scaled_fp8", "F8_E4M3", (2,)),
                t(f"{P}.weight", "F8_E4M3", (64, 64)),
                t(f"{P}.scale_weight", "F32", ()),
            ]
        ),
        SG_ONLY,
        file(fp8),
    ),
    RuleCase(
        "QC316",
        "int8-linear-no-convrot",
        file(lambda: int8(mark={"format": "int8_tensorwise"})),
        eff("degraded", "none"),
        file(int8),
    ),
    RuleCase(
        "QC319",
        "int8-1d-row-scale",
        file(lambda: int8(scale=("F32", (64,)))),
        eff("none", "none"),
        file(int8),
        message="LoRA",
    ),
    RuleCase(
        "QC320",
        "int8-convrot-default-256-k-64",
        file(lambda: int8(mark={"format": "int8_tensorwise", "convrot": True})),
        eff("none", "fails"),
        file(int8),
        message="does not divide K=64",
    ),
    RuleCase(
        "QC320",
        "int8-convrot-default-256-k-512",
        file(lambda: int8(k=512, mark={"format": "int8_tensorwise", "convrot": True})),
        eff("none", "degraded"),
        file(lambda: int8(k=512)),
        message="correct only if the weights were rotated with 256",
    ),
    RuleCase(
        "QC318",
        "nvfp4-convrot",
        file(lambda: nvfp4(mark={"format": "nvfp4", "convrot": True})),
        SG_ONLY,
        file(nvfp4),
    ),
]

SHARDS = [
    RuleCase(
        "QC501",
        "weight-in-two-shards",
        shards((int8, None), (lambda: [t(f"{P}.weight", "I8", (64, 64))], None)),
        eff("degraded", "degraded"),
        shards((int8, None), (lambda: bf16(FC1), None)),
    ),
    RuleCase(
        "QC502",
        "index-escapes-folder",
        index({"a.weight": "../outside.safetensors"}, {}),
        FAIL2,
        index({"a.weight": "part1.safetensors"}, {"part1.safetensors": lambda: bf16("a")}),
    ),
    RuleCase(
        "QC503",
        "index-without-weight-map",
        index({}, {"part1.safetensors": lambda: bf16("a")}, doc={"metadata": {}}),
        FAIL2,
        index({"a.weight": "part1.safetensors"}, {"part1.safetensors": lambda: bf16("a")}),
    ),
    RuleCase(
        "QC504",
        "index-shard-missing",
        index(
            {"a.weight": "part1.safetensors", "b.weight": "part2.safetensors"},
            {"part1.safetensors": lambda: bf16("a")},
        ),
        FAIL2,
        index(
            {"a.weight": "part1.safetensors", "b.weight": "part2.safetensors"},
            {"part1.safetensors": lambda: bf16("a"), "part2.safetensors": lambda: bf16("b")},
        ),
    ),
    RuleCase(
        "QC505",
        "index-misplaces-tensor",
        index(
            {"a.weight": "part1.safetensors", "b.weight": "part1.safetensors"},
            {"part1.safetensors": lambda: bf16("a"), "part2.safetensors": lambda: bf16("b")},
        ),
        NONE2,
        index(
            {"a.weight": "part1.safetensors", "b.weight": "part2.safetensors"},
            {"part1.safetensors": lambda: bf16("a"), "part2.safetensors": lambda: bf16("b")},
        ),
    ),
    RuleCase(
        "QC506",
        "shard-set-part-missing",
        shard_set((1, 3), 3),
        FAIL2,
        shard_set((1, 2, 3), 3),
        message="model-00002-of-00003.safetensors",
    ),
]

RUNTIME = [
    RuleCase(
        "QC601",
        "float8-e5m2",
        file(lambda: fp8(weight="F8_E5M2", mark={"format": "float8_e5m2"})),
        SG_ONLY,
        file(fp8),
    ),
    RuleCase("QC601", "awq-w4a16", file(awq), SG_ONLY, file(fp8)),
    RuleCase(
        "QC601",
        "w6a8-int8",
        file(w6a8),
        SG_ONLY,
        file(lambda: w4a8(n=32, k=32, g=32, bits=6, codebook=False)),
        twin_allows=("QC312",),
        message="no w6a8_int8 support",
    ),
    RuleCase(
        "QC610",
        "w6a8-int8-on-comfyui-0271a469",
        file(w6a8),
        NONE2,  # fails on ComfyUI up to 0271a469 only (release data); none on the newest
        file(lambda: w4a8(n=32, k=32, g=32, bits=6, codebook=False)),
        twin_allows=("QC312",),
        check_kwargs=OLD_CUI,
        message="ComfyUI up to 0271a469 has no w6a8_int8",
    ),
    RuleCase(
        "QC602",
        "fp8-plus-int8",
        file(lambda: [*fp8(), *int8(FC1)]),
        SG_ONLY,
        file(lambda: [*int8(), *int8(FC1)]),
        message="float8_e4m3fn, int8_tensorwise",
    ),
    RuleCase(
        "QC603",
        "w4a8-plus-int8-convrot-linear",
        file(lambda: [*w4a8(), *int8(FC1)]),
        SG_ONLY,
        file(lambda: [*w4a8(), *int8("embed_tokens", mark={"format": "int8_tensorwise"})]),
        message="Unsupported Comfy W4A8 format",
    ),
    RuleCase(
        "QC604",
        "quant-format-mxfp8-with-int8",
        file(lambda: [*mxfp8()[:-1], *int8(FC1)], {"quant_format": "mxfp8"}),
        SG_ONLY,
        file(lambda: mxfp8()[:-1], {"quant_format": "mxfp8"}),
        twin_allows=("QC314", "QC615"),  # QC615: MXFP8 fails at 0.5.23's weight load
    ),  # ComfyUI ignores quant_format: unmarked F8 weights
    # Release rules (runtimes/sglang_releases.py): no effect on the newest releases, checked
    # with --target sglang@all; twins may still need a release newer than 0.5.18 (QC611).
    RuleCase(
        "QC611",
        "sglang-0518-int8-markers",
        file(int8),
        NONE2,
        file(fp8, header_meta({P: FP8_MARK})),
        check_kwargs=ALL_SG,
        twin_allows=HEADER_FP8,
        message="sglang 0.5.18 has no marker inspector",
    ),
    RuleCase(
        "QC612",
        "header-entry-differs-from-tensor-marker",
        file(int8, header_meta({P: {"format": "int8_tensorwise"}})),
        NONE2,
        file(fp8, header_meta({P: FP8_MARK})),
        check_kwargs=ALL_SG,
        twin_allows=("QC611", *HEADER_FP8),
    ),
    RuleCase(
        "QC613",
        "convrot-file-with-plain-int8-embedding",
        file(lambda: [*int8(), *int8("embed_tokens", mark={"format": "int8_tensorwise"})]),
        NONE2,
        file(lambda: [*int8(), *int8(FC1)]),
        check_kwargs=ALL_SG,
        twin_allows=("QC611",),
        message="KitchenInt8Config requires convrot=true",
    ),
    RuleCase(
        "QC614",
        "nvfp4-without-fpmm",
        file(nvfp4),
        NONE2,
        file(lambda: nvfp4(mark={"format": "nvfp4", "full_precision_matrix_mult": True})),
        check_kwargs=ALL_SG,
        twin_allows=("QC611",),
    ),
    RuleCase(
        "QC615",
        "mxfp8-before-0522",
        file(mxfp8),
        SG_ONLY,
        file(fp8, header_meta({P: FP8_MARK})),
        check_kwargs=ALL_SG,
        twin_allows=HEADER_FP8,
    ),
    # sglang's header path (sglang_header_rules.py): which reader takes the file, per release.
    RuleCase(
        "QC616",
        "fp8-header-declared",
        file(fp8, header_meta({P: FP8_MARK})),
        NONE2,
        file(fp8),
        message="through its header path",
    ),
    RuleCase(
        "QC617",
        "fp8-header-sweeps-scalar-int8",
        file(
            lambda: [*fp8(), *int8(FC1, scale=("F32", ()))],
            header_meta({P: FP8_MARK, FC1: INT8_CONVROT}),
        ),
        eff("degraded", "none"),
        file(lambda: [*fp8(), *fp8(FC1)], header_meta({P: FP8_MARK, FC1: FP8_MARK})),
        twin_allows=HEADER_FP8,
        message="1 int8_tensorwise layer",
    ),
    # QC630: the same whole-model Fp8Config cannot load layers that do not fit its per-tensor
    # FP8 parameters (weight load: PerTensorScaleParameter [1], float8_e4m3fn [N, K] weight)
    RuleCase(
        "QC630",
        "fp8-header-sweeps-rowwise-int8",
        file(lambda: [*fp8(), *int8(FC1)], header_meta({P: FP8_MARK, FC1: INT8_CONVROT})),
        SG_ONLY,
        file(lambda: [*fp8(), *fp8(FC1)], header_meta({P: FP8_MARK, FC1: FP8_MARK})),
        twin_allows=HEADER_FP8,
        message="1 int8_tensorwise layer",
    ),
    RuleCase(
        "QC630",
        "fp8-header-rowwise-fp8-scale",
        file(lambda: fp8(scale=("F32", (64, 1))), header_meta({P: FP8_MARK})),
        SG_ONLY,
        file(fp8, header_meta({P: FP8_MARK})),
        twin_allows=HEADER_FP8,
        message="1 float8_e4m3fn layer",
    ),
    RuleCase(
        "QC630",
        "fp8-header-sweeps-nvfp4",
        file(lambda: [*fp8(), *nvfp4(FC1)], header_meta({P: FP8_MARK})),
        SG_ONLY,
        file(lambda: [*fp8(), *fp8(FC1)], header_meta({P: FP8_MARK})),
        twin_allows=HEADER_FP8,
        message="nvfp4",
    ),
    RuleCase(
        "QC617",
        "fp8-header-sweeps-e5m2",
        file(
            lambda: [*fp8(), *fp8(FC1, weight="F8_E5M2", mark={"format": "float8_e5m2"})],
            header_meta({P: FP8_MARK}),
        ),
        eff("degraded", "none"),
        file(lambda: [*fp8(), *fp8(FC1)], header_meta({P: FP8_MARK})),
        twin_allows=HEADER_FP8,
    ),
    RuleCase(
        "QC618",
        "header-without-format-version",
        file(fp8, {"_quantization_metadata": json.dumps({"layers": {P: FP8_MARK}})}),
        NONE2,
        file(fp8, header_meta({P: FP8_MARK})),
        twin_allows=HEADER_FP8,
        message="no format_version",
    ),
    RuleCase(
        "QC619",
        "nvfp4-padded-scales-0518",
        file(lambda: nvfp4(n=128, k=48)),
        NONE2,
        file(nvfp4),
        check_kwargs=ALL_SG,
        twin_allows=("QC614",),
        message="NVFP4 group size 12",
    ),
    RuleCase(
        "QC624",
        "header-format-null",
        file(fp8, header_meta({P: {"format": None}})),
        SG_ONLY,
        file(fp8, header_meta({P: FP8_MARK})),
        twin_allows=HEADER_FP8,
        message="raises TypeError",
    ),
    RuleCase(
        "QC620",
        "rowwise-header-format",
        rowwise(),
        eff("none", "fails"),
        file(fp8),
        message="rowwise FP8 path",
    ),
    RuleCase(
        "QC621",
        "rowwise-format-version-1.0",
        rowwise(version="1.0"),
        eff("fails", "none"),
        rowwise(),
        twin_allows=ROWWISE_OK,
        message="expected one of ['1.1']",
    ),
    RuleCase(
        "QC622",
        "rowwise-without-descriptor",
        rowwise(quant_configs=None),
        eff("fails", "none"),
        rowwise(),
        twin_allows=ROWWISE_OK,
        message="layout descriptor",
    ),
    RuleCase(
        "QC622",
        "rowwise-beside-fp8-layer",
        rowwise(other={"blocks.1.attn.qkv": FP8_MARK}),
        eff("fails", "none"),
        rowwise(),
        twin_allows=ROWWISE_OK,
        message="unknown quant format 'float8_e4m3fn'",
    ),
    RuleCase(
        "QC623",
        "rowwise-scale-per-row-2d",
        rowwise(scale=("F32", (64, 1))),
        eff("fails", "none"),
        rowwise(),
        twin_allows=ROWWISE_OK,
        message="row-wise scale must have shape [64], got [64, 1]",
    ),
    RuleCase(
        "QC623",
        "rowwise-bf16-layer-with-scale",
        rowwise(bf16_scale=True),
        eff("fails", "none"),
        rowwise(),
        twin_allows=ROWWISE_OK,
        message="unexpected quantization tensor",
    ),
]

COMFYUI = [
    # DynamicVRAM's dtype table has no F8_E8M0: the default ComfyUI loader stops outright.
    RuleCase(
        "QC605",
        "mxfp8-e8m0-scales",
        file(_mxfp8_e8m0),
        eff("none", "fails"),
        file(lambda: mxfp8()),
        message="--cpu",
        twin_allows=("QC615",),  # sglang 0.5.23's weight load (not a ComfyUI finding)
    ),
    RuleCase(
        "QC606",
        "int8-needs-v0.27",
        file(int8),
        NONE2,
        file(fp8),
        check_kwargs=ALL_CUI,
        message="from v0.27 on",
    ),
    RuleCase(
        "QC650",
        "mxfp8-needs-v0.18",
        file(lambda: mxfp8()),
        NONE2,
        file(fp8),
        check_kwargs=ALL_CUI,
        message="mxfp8 (1): ComfyUI loads it from v0.18 on",
    ),
    RuleCase(
        "QC651",
        "w4a4-needs-v0.28",
        file(lambda: w4a4(FC1)),
        NONE2,
        file(fp8),
        check_kwargs=ALL_CUI,
        message="convrot_w4a4 (1): ComfyUI loads it from v0.28 on",
    ),
    RuleCase(
        "QC607",
        "w4a8-needs-v0.31",
        file(lambda: [*w4a8(), *w4a4(FC1)]),
        NONE2,
        file(fp8),
        check_kwargs=ALL_CUI,
        message="asym_w4a8_int8 (1): ComfyUI loads it from v0.31 on",
    ),
    RuleCase(
        "QC608",
        "awq-needs-0271a469",
        file(awq),
        NONE2,
        file(fp8),
        check_kwargs=ALL_CUI,
        message="from 0271a469 on",
    ),
    RuleCase(
        "QC609",
        "w6a8-needs-2026-09-29",
        file(w6a8),
        NONE2,
        file(fp8),
        check_kwargs=ALL_CUI,
        message="from 2026-09-29 on",
    ),
]

CASES: list[RuleCase] = CONTAINER + MARKERS + LAYERS + SHARDS + RUNTIME + COMFYUI
