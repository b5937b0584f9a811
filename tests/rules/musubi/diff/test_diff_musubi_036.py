"""Differential: musubi-tuner 0.3.6's own loaders (source.py `PINS_036`, loader_036.py) against
quantcheck's verdict for `--target musubi` (its newest release, 0.3.6).

Which loader a file reaches is the user's choice of argument; here a file the family detection
takes for Qwen3-VL-32B is given to MiniMax H3's `load_h3_text_encoder` (as `--text_encoder`),
every other file to the pre-quantized DiT gate (`ConvRotInt8Quantizer.load_and_quantize`).

1. Every rule case of the rule tables (tests/rules/*cases.py, failing file and twin): musubi
   raises exactly where quantcheck says musubi fails, leaving out the files whose verdict comes
   from code the harness does not run (QC1xx reader-container codes, QC5xx shard handling,
   QC86x model layout: the stand-in model is built from the file), and `quantcheck explain`
   maps musubi's message to a rule quantcheck reports for the file.
2. Files of every format quantcheck's quantizer writes (tests/families/standin.py), mixed and
   header-only variants, as DiT files and as MiniMax H3 text encoders (the family's layout cut
   to 64 wide): the same comparison.
3. MiniMax H3's DiT header (`classify_h3_transformer`, header only): the released full and
   pruned ConvRot layouts (sparse, full size) with and without the published config, and their
   deviations: it refuses exactly the files QC766 names.

Skipped unless QUANTCHECK_DIFF_MUSUBI=1 and QUANTCHECK_MUSUBI_036_SRC names the folder.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.families import standin as S

from quantcheck.checking import check_paths
from quantcheck.families.detection import topology_layers
from quantcheck.families.table import BY_NAME
from quantcheck.model.checkpoint import load_checkpoint
from quantcheck.model.family_view import checkpoint_family_name
from quantcheck.runtimes.musubi import H3_CONFIG, TEXT_ENCODER_FAMILY

from .loader_036 import Musubi036
from .rule_cases import explained, rule_case_files

pytestmark = pytest.mark.skipif(
    os.environ.get("QUANTCHECK_DIFF_MUSUBI") != "1",
    reason="set QUANTCHECK_DIFF_MUSUBI=1 and QUANTCHECK_MUSUBI_036_SRC (make diff-musubi)",
)

#: Verdicts that come from code the harness does not run (reader container, shards, layout).
NOT_RUN = ("QC1", "QC5", "QC86")
#: torch's own messages (the strict load_state_dict after the loaders): no musubi text to explain.
TORCH = ("Error(s) in loading state_dict", "Only Tensors of floating point")


def _is_text_encoder(paths: list[Path]) -> bool:
    try:
        ck = load_checkpoint([str(p) for p in paths])
    except Exception:
        return False
    return checkpoint_family_name(ck) == TEXT_ENCODER_FAMILY


def _musubi(musubi: Musubi036, paths: list[Path]) -> tuple[str | None, bool]:
    """(musubi's error message or None when it loads, whether the text encoder took it)."""
    files = [str(p) for p in paths if p.suffix == ".safetensors"]
    te = len(files) == 1 and _is_text_encoder(paths)
    try:
        if te:
            musubi.text_encoder(files[0])
        else:
            musubi.gate(files)
    except Exception as exc:  # whatever stops musubi's load is its refusal
        return f"{type(exc).__name__}: {exc}", te
    return None, te


def _ours(paths: list[Path], kwargs: dict[str, Any], te: bool) -> tuple[bool, set[str], bool]:
    """(quantcheck says musubi fails, the codes that say so, comparable); a marker over 64 KiB
    (QC206), which quantcheck does not read, counts as every code musubi may name for it."""
    options = {k: v for k, v in kwargs.items() if k != "target"}
    report = check_paths([str(p) for p in paths], target="musubi", **options)
    unread = any(d.code == "QC206" for d in report.diagnostics)
    failing = {
        d.code
        for d in report.diagnostics
        if "musubi" in d.effective_effects and d.effective_effects["musubi"].value == "fails"
    }
    if te:  # the stand-in model is built from the file: its layout is not compared
        failing = {c for c in failing if not c.startswith("QC86")}
    comparable = not any(c.startswith(NOT_RUN) for c in failing)
    return bool(failing), failing | ({"QC206"} if unread else set()), comparable


def _compare(musubi: Musubi036, label: str, paths: list[Path], kwargs: dict[str, Any]) -> str:
    """ "" when musubi and quantcheck agree on the file, else what differs; "skip" when the
    verdict rests on code not run."""
    said, te = _musubi(musubi, paths)
    fails, codes, comparable = _ours(paths, kwargs, te)
    if not comparable:
        return "skip"
    if (said is not None) != fails:
        return f"{label}: musubi {said!r}, quantcheck {sorted(codes)}"
    # quantcheck does not read a marker over 64 KiB (QC206): it cannot name what musubi says of it
    if said is not None and not said.split(": ", 1)[1].startswith(TORCH) and "QC206" not in codes:
        meant = explained(said)
        if not meant & codes:
            return f"{label}: musubi said {said!r} ({sorted(meant)}), quantcheck {sorted(codes)}"
    return ""


def _run(musubi: Musubi036, rows: list[tuple[str, list[Path], dict[str, Any]]]) -> list[str]:
    bad, compared = [], 0
    for label, paths, kwargs in rows:
        out = _compare(musubi, label, paths, kwargs)
        if out == "skip":
            continue
        compared += 1
        if out:
            bad.append(out)
    rows.clear()
    return [f"compared {compared}", *bad]


def test_the_loaders_agree_with_every_rule_case(
    musubi036: Musubi036, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = list(rule_case_files(tmp_path))
    total = len(rows)
    compared, *bad = _run(musubi036, rows)
    with capsys.disabled():
        print(f"\nmusubi 0.3.6: {compared} of {total} rule-case files, {len(bad)} disagree")
    assert int(compared.split()[1]) > 300
    assert not bad, "\n".join(bad)


# --- generated files: every format, mixed and header-only, as a DiT and as the text encoder ---

#: a DiT-like layout: quantizable Linears and a norm
DIT: S.Tensors = {
    **{f"blocks.{i}.attn.qkv.weight": ("BF16", (256, 256), None) for i in range(2)},
    **{f"blocks.{i}.mlp.fc1.weight": ("BF16", (128, 256), None) for i in range(2)},
    "blocks.0.norm.weight": ("BF16", (256,), None),
}
#: the formats with a writer (awq through standin's own layout) and their options
FORMATS: dict[str, dict[str, Any]] = {
    "float8_e4m3fn": {},
    "float8_e5m2": {},
    "int8_tensorwise": {},
    "int8-convrot-256": {"convrot": True, "per_row": True},
    "int8-convrot-64": {"convrot": True, "per_row": True, "convrot_groupsize": 64},
    "int8-convrot-scalar-scale": {"convrot": True, "per_row": False},
    "nvfp4": {},
    "mxfp8": {},
    "asym_w4a8_int8": {},
    "w6a8_int8": {},
    "convrot_w4a4": {},
    "awq_w4a16": {},
}


def _fmt(name: str) -> str:
    return "int8_tensorwise" if name.startswith("int8-") else name


def _q(base: S.Tensors, name: str, pick: Callable[[str], bool] = lambda n: True) -> S.Tensors:
    opts = FORMATS[name]
    return S.quantize(base, _fmt(name), lambda n, _s: pick(n), lambda _n: dict(opts))


def _header_only(tensors: S.Tensors) -> tuple[S.Tensors, dict[str, str]]:
    """The markers moved into __metadata__._quantization_metadata."""
    layers = {
        k[: -len(".comfy_quant")]: json.loads(raw or b"{}")
        for k, (_, _, raw) in tensors.items()
        if k.endswith(".comfy_quant")
    }
    kept = {k: v for k, v in tensors.items() if not k.endswith(".comfy_quant")}
    meta = {"_quantization_metadata": json.dumps({"format_version": "1.0", "layers": layers})}
    return kept, meta


def _legacy_fp8(base: S.Tensors) -> S.Tensors:
    out: S.Tensors = {}
    for k, v in base.items():
        if k.endswith(".weight") and len(v[1]) == 2:
            out[k] = ("F8_E4M3", v[1], None)
            out[k[: -len(".weight")] + ".scale_weight"] = ("F32", (), None)
        else:
            out[k] = v
    return out


def dit_files() -> dict[str, tuple[S.Tensors, dict[str, str] | None]]:
    files: dict[str, tuple[S.Tensors, dict[str, str] | None]] = {
        f"dit {name}": (_q(DIT, name), None) for name in FORMATS
    }
    files["dit bf16"] = (dict(DIT), None)
    files["dit nvfp4 qkv + convrot fc1"] = (
        _q(_q(DIT, "nvfp4", lambda n: ".qkv." in n), "int8-convrot-256", lambda n: ".fc1." in n),
        None,
    )
    files["dit convrot, header-only markers"] = _header_only(_q(DIT, "int8-convrot-256"))
    files["dit legacy scaled fp8"] = (_legacy_fp8(DIT), None)
    return files


def _te_base() -> S.Tensors:
    base = S.miniature("qwen3vl-32b", side=64)
    base["model.layers.0.post_attention_layernorm.weight"] = ("BF16", (5120,), None)
    return base


EMBED = "model.embed_tokens.weight"


def _linear(n: str) -> bool:
    return n.startswith("model.layers.") and n != EMBED


def te_files() -> dict[str, tuple[S.Tensors, dict[str, str] | None]]:
    base = _te_base()
    int8_embed = ("int8_tensorwise", lambda n: n == EMBED)

    def q(t: S.Tensors, name: str, pick: Callable[[str], bool]) -> S.Tensors:
        return _q(t, name, pick)

    nvfp4 = q(base, "nvfp4", _linear)
    files: dict[str, tuple[S.Tensors, dict[str, str] | None]] = {
        "te bf16": (base, None),
        "te convrot-64 Linears": (q(base, "int8-convrot-64", _linear), None),
        "te convrot-64 Linears and embedding": (
            q(base, "int8-convrot-64", lambda n: _linear(n) or n == EMBED),
            None,
        ),
        "te nvfp4 Linears": (nvfp4, None),
        "te nvfp4 Linears, int8 embedding": (q(nvfp4, int8_embed[0], int8_embed[1]), None),
        "te nvfp4 Linears and embedding": (
            q(base, "nvfp4", lambda n: _linear(n) or n == EMBED),
            None,
        ),
        "te nvfp4 + int8 Linear": (
            q(
                q(base, "nvfp4", lambda n: ".mlp." in n),
                "int8_tensorwise",
                lambda n: ".q_proj." in n,
            ),
            None,
        ),
        "te nvfp4 + convrot": (
            q(
                q(base, "nvfp4", lambda n: ".mlp." in n),
                "int8-convrot-64",
                lambda n: ".q_proj." in n,
            ),
            None,
        ),
        "te convrot, header-only markers": _header_only(q(base, "int8-convrot-64", _linear)),
        "te legacy scaled fp8": (_legacy_fp8(base), None),
        "te unmarked fp8": (
            {
                k: (("F8_E4M3", v[1], None) if _linear(k) and len(v[1]) == 2 else v)
                for k, v in base.items()
            },
            None,
        ),
    }
    for name in ("float8_e4m3fn", "int8_tensorwise", "mxfp8", "convrot_w4a4"):
        files[f"te {name} Linears"] = (q(base, name, _linear), None)
    awq = dict(nvfp4)
    for k in nvfp4:
        if k.endswith(".mlp.down_proj.weight_scale_2"):
            awq[k.replace("weight_scale_2", "pre_quant_scale")] = ("F32", (64,), None)
    files["te nvfp4 awq pre_quant_scale"] = (awq, None)
    return files


@pytest.mark.parametrize("kind", ["dit", "te"])
def test_the_loaders_agree_on_every_format(
    musubi036: Musubi036, tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    made = dit_files() if kind == "dit" else te_files()
    rows: list[tuple[str, list[Path], dict[str, Any]]] = []
    for i, (label, (tensors, meta)) in enumerate(made.items()):
        path = S.write(tmp_path / f"{i}.safetensors", tensors, meta)
        rows.append((label, [path], {}))
        if kind == "te":
            assert _is_text_encoder([path]), label
    total = len(rows)
    compared, *bad = _run(musubi036, rows)
    with capsys.disabled():
        print(
            f"\nmusubi 0.3.6 ({kind}): {compared} of {total} generated files, {len(bad)} disagree"
        )
    assert int(compared.split()[1]) == total
    assert not bad, "\n".join(bad)


# --- MiniMax H3's DiT header (QC766): the released layouts and their deviations -------------

#: the header entry the published transformer carries (runtimes/musubi.py H3_CONFIG)
H3_META = {"config": json.dumps({"transformer": H3_CONFIG})}
FULL, PRUNED = (BY_NAME["minimax_h3"].topologies[i] for i in (0, 1))


def _convrot(topo: Any, base: S.Tensors | None = None) -> S.Tensors:
    return S.convrot(S.released_base(topo) if base is None else base, topology_layers(topo))


def _config(**change: Any) -> dict[str, str]:
    return {"config": json.dumps({"transformer": {**H3_CONFIG, **change}})}


def h3_files() -> dict[str, tuple[S.Tensors, dict[str, str] | None]]:
    full, pruned = _convrot(FULL), _convrot(PRUNED)
    bf16 = S.released_base(FULL)
    wide = dict(pruned)
    wide["blocks.7.adaln_proj.linear.weight"] = ("F16", (96768, 16), None)
    return {
        "full convrot with config": (full, H3_META),
        "full bf16 with config": (bf16, H3_META),
        "full convrot without metadata": (full, None),
        "full convrot, config not JSON": (full, {"config": "{transformer"}),
        "full convrot, config a list": (full, {"config": "[1, 2]"}),
        "full convrot, transformer a string": (full, {"config": '{"transformer": "x"}'}),
        "full convrot, hidden_size 5120": (full, _config(hidden_size=5120)),
        "full convrot, no image_model": (
            full,
            {"config": json.dumps({"transformer": {**H3_CONFIG, "image_model": None}})},
        ),
        "full convrot, adaln_curve_grid set": (full, _config(adaln_curve_grid=1025)),
        "full convrot, metadata names nvfp4": (full, {**H3_META, "title": "H3 NVFP4 mix"}),
        "full convrot, metadata names int8": (full, {**H3_META, "title": "H3 int8 convrot"}),
        "full bf16, metadata names int8": (bf16, {**H3_META, "title": "H3 int8 convrot"}),
        "pruned convrot": (pruned, None),
        "pruned convrot, F16 table": (
            {**pruned, "adaln_t_table": ("F16", (1025, 8), None)},
            None,
        ),
        "pruned convrot, time embedder kept": (
            {**pruned, "time_embedder.proj_in.weight": ("F32", (5376, 256), None)},
            None,
        ),
        "pruned convrot, a 16-wide AdaLN": (wide, None),
        "full convrot, both scale names": (
            {**full, "blocks.0.attn.qkv_proj.scale_weight": ("F32", (16128, 1), None)},
            H3_META,
        ),
    }


def test_the_h3_header_check_agrees_with_qc766(
    musubi036: Musubi036, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad, refused = [], 0
    for i, (label, (tensors, meta)) in enumerate(h3_files().items()):
        path = S.write(tmp_path / f"{i}.safetensors", tensors, meta)
        try:
            musubi036.h3_header(str(path))
            said = None
        except (ValueError, TypeError) as exc:
            said = str(exc)
            refused += 1
        found = [d for d in check_paths([str(path)], target="musubi").diagnostics]
        ours = [d.message for d in found if d.code == "QC766"]
        if (said is None) != (not ours):
            bad.append(f"{label}: musubi {said!r}, quantcheck {ours}")
        elif said is not None and "QC766" not in explained(said):
            bad.append(f"{label}: explain does not take {said!r} for QC766")
    total = len(h3_files())
    with capsys.disabled():
        print(f"\nmusubi 0.3.6 H3 header: {total} files, {refused} refused, {len(bad)} disagree")
    assert 2 < refused < total
    assert not bad, "\n".join(bad)
