"""`quantcheck lora`: key map, load_lora, reasons, shapes, outcomes, figures, outputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from quantcheck.cli.main import main
from quantcheck.model.checkpoint import load_checkpoint
from quantcheck.rules.lora.analyse import analyse
from quantcheck.rules.lora.conventions import Explainer, describe
from quantcheck.rules.lora.keymap import build_key_map
from quantcheck.rules.lora.load import load_lora

from .pairs import WAN_LAYERS, wan_base, write_lora

ALL = [f"blocks.0.{name}" for name in WAN_LAYERS]


def _pair(tmp: Path, fmt: str = "nvfp4", **lora) -> tuple[Path, Path]:
    b, lo = tmp / "base.safetensors", tmp / "lora.safetensors"
    wan_base(b, fmt, awq_at=lora.pop("awq_at", ""))
    write_lora(lo, lora.pop("paths", ALL), **lora)
    return b, lo


def _analyse(b: Path, lo: Path, **kw):
    with load_checkpoint([str(b)]) as base, load_checkpoint([str(lo)], read_markers=False) as lora:
        return analyse(base, [lora], **kw)


# --- key map -------------------------------------------------------------------------------


def test_key_map_generic_entries_and_prefix() -> None:
    km = build_key_map(["model.diffusion_model.blocks.0.q.weight", "x"])
    # one prefixed key is not more than 5: ComfyUI strips its fallback "model." and drops "x"
    assert km.prefix == "model." and list(km.stored) == [
        "diffusion_model.diffusion_model.blocks.0.q.weight"
    ]
    names = [f"model.diffusion_model.blocks.{i}.q.weight" for i in range(8)]
    km = build_key_map(names)
    assert km.prefix == "model.diffusion_model."
    assert km.entries["lora_unet_blocks_0_q"] == "diffusion_model.blocks.0.q.weight"
    assert km.entries["diffusion_model.blocks.0.q"] == "diffusion_model.blocks.0.q.weight"
    assert "transformer.blocks.0.q" not in km.entries  # no family branch


def test_key_map_family_branches() -> None:
    qwen = build_key_map(
        ["transformer_blocks.0.img_mod.1.weight", "transformer_blocks.0.attn.to_q.weight"]
    )
    assert qwen.family == "qwen_image"
    assert qwen.entries["transformer.transformer_blocks.0.attn.to_q"].endswith("to_q.weight")
    assert qwen.entries["lycoris_transformer_blocks_0_attn_to_q"].endswith("to_q.weight")
    hv = build_key_map(
        [
            "txt_in.individual_token_refiner.blocks.0.norm1.weight",
            "double_blocks.0.img_attn.qkv.weight",
        ]
    )
    assert hv.family == "hunyuan_video"
    assert hv.entries["transformer.double_blocks.0.img_attn_qkv"] == (
        "diffusion_model.double_blocks.0.img_attn.qkv.weight"
    )
    flux = build_key_map(
        ["double_blocks.0.img_attn.qkv.weight", "img_in.weight", "single_blocks.0.linear1.weight"],
        shapes={"img_in.weight": (128, 64)},
    )
    assert flux.family == "flux" and not flux.unmodelled
    qkv = "diffusion_model.double_blocks.0.img_attn.qkv.weight"
    assert flux.entries["transformer.transformer_blocks.0.attn.to_k"] == (qkv, (0, 128, 128))
    assert flux.entries["lora_transformer_transformer_blocks_0_attn_add_v_proj"] == (
        "diffusion_model.double_blocks.0.txt_attn.qkv.weight",
        (0, 256, 128),
    )
    assert flux.entries["diffusion_model.single_blocks.0.linear1_qkv"] == (
        "diffusion_model.single_blocks.0.linear1.weight",
        (0, 0, 384),
    )
    assert flux.entries["transformer.norm_out.linear"] == (
        "diffusion_model.final_layer.adaLN_modulation.1.weight",
        None,
        "swap",
    )
    unet = build_key_map(["input_blocks.0.0.weight"])
    assert unet.family == "unet" and unet.unmodelled


# --- load_lora -----------------------------------------------------------------------------


def test_load_lora_takes_every_adapter_naming() -> None:
    km = build_key_map([f"blocks.{i}.q.weight" for i in range(7)])
    shapes = {
        "lora_unet_blocks_0_q.lora_up.weight": (8, 2),
        "lora_unet_blocks_0_q.lora_down.weight": (2, 8),
        "lora_unet_blocks_0_q.alpha": (),
        "diffusion_model.blocks.1.q.lora_B.weight": (8, 2),
        "diffusion_model.blocks.1.q.lora_A.weight": (2, 8),
        "diffusion_model.blocks.2.q.hada_w1_a": (8, 2),
        "diffusion_model.blocks.2.q.hada_w1_b": (2, 8),
        "diffusion_model.blocks.2.q.hada_w2_a": (8, 2),
        "diffusion_model.blocks.2.q.hada_w2_b": (2, 8),
        "diffusion_model.blocks.3.q.lokr_w1": (2, 2),
        "diffusion_model.blocks.3.q.lokr_w2": (4, 4),
        "diffusion_model.blocks.4.q.diff": (8, 8),
        "diffusion_model.blocks.5.q.lora_B.weight": (8, 2),
        "diffusion_model.blocks.5.q.lora_A.weight": (2, 8),
        "diffusion_model.blocks.5.q.dora_scale": (8, 1),
        "diffusion_model.blocks.6.q.lora_up.weight.bias": (8,),
        "diffusion_model.blocks.9.q.lora_B.weight": (8, 2),
    }
    got = load_lora(shapes, km.entries)
    kinds = {t: p.kind for t, p in got.patches.items()}
    assert kinds == {
        "diffusion_model.blocks.0.q.weight": "lora",
        "diffusion_model.blocks.1.q.weight": "lora",
        "diffusion_model.blocks.2.q.weight": "loha",
        "diffusion_model.blocks.3.q.weight": "lokr",
        "diffusion_model.blocks.4.q.weight": "diff",
        "diffusion_model.blocks.5.q.weight": "lora",
    }
    assert (
        got.patches["diffusion_model.blocks.5.q.weight"].parts["dora_scale"].endswith("dora_scale")
    )
    assert got.unmatched == [
        "diffusion_model.blocks.6.q.lora_up.weight.bias",
        "diffusion_model.blocks.9.q.lora_B.weight",
    ]


def test_wan_fun_conversion() -> None:
    km = build_key_map(["blocks.0.cross_attn.k.weight"])
    shapes = {
        "lora_unet__blocks_0_cross_attn_k.lora_down.weight": (2, 8),
        "lora_unet__blocks_0_cross_attn_k.lora_up.weight": (8, 2),
    }
    got = load_lora(shapes, km.entries)
    assert got.conversion == "wan-fun" and got.unmatched == []
    assert list(got.patches) == ["diffusion_model.blocks.0.cross_attn.k.weight"]


# --- conventions and reasons ---------------------------------------------------------------


def test_describe_conventions() -> None:
    names = [
        "lora_unet_double_blocks_0_img_attn_qkv.lora_up.weight",
        "lora_unet_double_blocks_0_img_attn_qkv.lora_down.weight",
        "lora_te1_text_model_encoder_layers_0_mlp_fc1.lora_up.weight",
        "transformer.blocks.0.x.lora_B.weight",
        "diffusion_model.blocks.1.x.dora_scale",
    ]
    d = describe(names, {"ss_base_model_version": "flux1"})
    assert d["adapters"] == {"lora": 3, "dora": 1}
    assert d["namings"] == {"kohya": 2, "peft": 1}
    assert d["prefixes"] == {"kohya": 1, "diffusers": 1}
    assert d["text_encoder_keys"] == 1
    assert d["made_for"] == "flux"
    assert d["metadata"] == {"ss_base_model_version": "flux1"}


@pytest.mark.parametrize(
    ("key", "reason", "nearest"),
    [
        (
            "transformer.blocks.0.attn1.to_q.lora_B.weight",
            "naming-convention",
            "blocks.0.self_attn.q",
        ),
        ("transformer.blocks.0.self_attn.q.lora_B.weight", "prefix", "blocks.0.self_attn.q"),
        ("lora_unet_blocks_7_self_attn_q.lora_up.weight", "missing-layer", "blocks.0.self_attn.q"),
        ("lora_unet_double_blocks_0_img_attn_qkv.lora_up.weight", "another-family", None),
        ("lora_te_text_model_encoder_layers_0_mlp_fc1.lora_up.weight", "text-encoder", None),
        ("diffusion_model.blocks.0.self_attn.q.scale", "not-an-adapter-tensor", None),
    ],
)
def test_unmatched_reasons(key: str, reason: str, nearest: str | None) -> None:
    km = build_key_map([f"blocks.0.{n}.weight" for n in WAN_LAYERS] + ["patch_embedding.weight"])
    made_for = "flux" if "double_blocks" in key else "wan"
    why = Explainer(km, made_for).explain(key)
    assert why["reason"] == reason, why
    if nearest is not None:
        assert why["nearest"] == "diffusion_model." + nearest


def test_diffusers_wan_names_match_nothing(tmp_path: Path) -> None:
    b, lo = _pair(tmp_path, convention="diffusers-wan")
    a = _analyse(b, lo)
    f = a.files[0]
    assert f.matched_tensors == 0 and len(f.unmatched) == f.tensors == 16
    assert {u["reason"] for u in f.unmatched} == {"naming-convention"}


# --- shapes and outcomes -------------------------------------------------------------------


def test_packed_layers_compare_logical_shape(tmp_path: Path) -> None:
    b, lo = _pair(tmp_path, "nvfp4")
    with load_checkpoint([str(b)]) as base:
        assert base.tensors["blocks.0.self_attn.q.weight"].shape == (128, 64)  # [N, K/2]
    a = _analyse(b, lo)
    assert all(r.problem is None and r.shape == (128, 128) for r in a.layers)
    write_lora(lo, ALL, k=64)  # made for the stored [N, K/2]: wrong
    a = _analyse(b, lo)
    assert all("logical shape is [128, 128]" in (r.problem or "") for r in a.layers)


def test_right_name_wrong_shape_counts_as_matched(tmp_path: Path) -> None:
    b, lo = _pair(tmp_path, "nvfp4", wrong_shape="blocks.0.self_attn.k")
    a = _analyse(b, lo, numbers=True)
    assert a.files[0].unmatched == []  # no 'lora key not loaded'
    bad = [r for r in a.layers if r.problem]
    assert [r.layer for r in bad] == ["blocks.0.self_attn.k"]
    assert bad[0].outcome == "patched" and bad[0].basis == "shape-mismatch"


def test_outcomes_per_format(tmp_path: Path) -> None:
    b, lo = _pair(tmp_path, "int8_tensorwise", awq_at="blocks.0.self_attn.o")
    a = _analyse(b, lo)
    by = {r.layer: r for r in a.layers}
    assert by["blocks.0.self_attn.o"].outcome == "raises"
    assert by["blocks.0.self_attn.q"].outcome == "patched"
    assert by["blocks.0.self_attn.q"].on_the_fly == "requantized"
    assert by["blocks.0.self_attn.q"].patch_bytes == 2 * 8 * 128 * 4  # rank x (N + K) x F32


# --- figures -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "low", "high"),
    [("nvfp4", 5.0, 20.0), ("float8_e4m3fn", 0.5, 4.0), ("int8_tensorwise", 0.02, 1.0)],
)
def test_added_error_by_format(tmp_path: Path, fmt: str, low: float, high: float) -> None:
    b, lo = _pair(tmp_path, fmt, size=0.01)
    a = _analyse(b, lo, numbers=True)
    figs = [r.figures for r in a.layers]
    assert all(f and f["retention"] > 0.7 for f in figs), figs
    mean = float(np.mean([f["added_error"] for f in figs if f]))
    assert low < mean < high, mean
    again = _analyse(b, lo, numbers=True)
    assert [r.figures for r in again.layers] == figs  # seeded: the same bits every run


def test_estimate_without_weights(tmp_path: Path) -> None:
    b, lo = _pair(tmp_path, "nvfp4", size=0.01)
    measured = _analyse(b, lo, numbers=True)
    est = _analyse(b, lo, numbers=True, max_bytes=0)
    assert est.numbers == "estimated" and est.bytes_read == 0
    for m, e in zip(measured.layers, est.layers, strict=True):
        assert e.basis == "estimated"
        assert 0.5 < e.figures["added_error"] / m.figures["added_error"] < 2.0


def test_strength_scales_the_delta(tmp_path: Path) -> None:
    b, lo = _pair(tmp_path, "float8_e4m3fn")
    one = _analyse(b, lo, numbers=True).layers[0].figures
    half = _analyse(b, lo, numbers=True, strength=0.5).layers[0].figures
    assert half["delta_norm"] == pytest.approx(one["delta_norm"] / 2, rel=1e-5)


# --- the command ---------------------------------------------------------------------------


def _run(argv: list[str], capsys) -> tuple[int, str]:
    code = main(argv)
    return code, capsys.readouterr().out


def test_json_document_fields(tmp_path: Path, capsys) -> None:
    b, lo = _pair(tmp_path, "nvfp4", paths=[*ALL, "blocks.7.self_attn.q"], text_encoder=1)
    code, out = _run(["lora", str(b), str(lo), "--output-format", "json"], capsys)
    doc = json.loads(out)
    assert code == 1 and doc["kind"] == "lora"
    assert doc["lora"]["tensors"] == 20 and doc["lora"]["matched_tensors"] == 16
    assert doc["lora"]["unmatched"] == [
        "lora_unet_blocks_7_self_attn_q.lora_up.weight",
        "lora_unet_blocks_7_self_attn_q.lora_down.weight",
        "lora_te1_text_model_encoder_layers_0_mlp_fc1.lora_up.weight",
        "lora_te1_text_model_encoder_layers_0_mlp_fc1.lora_down.weight",
    ]
    assert doc["targets"]["comfyui"]["status"] == "degraded"
    layer = doc["layers"][0]
    assert layer["format"] == "nvfp4" and layer["outcome"] == "patched"
    assert 0 < layer["retention"] <= 1.1 and layer["added_error"] > 1


def test_awq_layer_fails_the_target(tmp_path: Path, capsys) -> None:
    b, lo = _pair(tmp_path, "float8_e4m3fn", awq_at="blocks.0.self_attn.o")
    code, out = _run(["lora", str(b), str(lo), "--output-format", "json"], capsys)
    doc = json.loads(out)
    assert code == 1 and doc["targets"]["comfyui"]["status"] == "fails"
    assert {x["outcome"] for x in doc["layers"]} == {"patched", "raises"}


def test_clean_pair_exits_0_and_other_outputs(tmp_path: Path, capsys) -> None:
    b, lo = _pair(tmp_path, "int8_tensorwise")
    code, out = _run(["lora", str(b), str(lo)], capsys)
    assert code == 0 and "16 of 16 tensors load" in out
    code, out = _run(["lora", str(b), str(lo), "--output-format", "sarif"], capsys)
    assert json.loads(out)["version"] == "2.1.0"
    code, out = _run(["lora", str(b), str(lo), "--output-format", "html"], capsys)
    assert '<section class="lora" id="lora">' in out and "blocks.0 (8)" in out


def test_check_with_lora(tmp_path: Path, capsys) -> None:
    b, lo = _pair(tmp_path, "float8_e4m3fn", paths=["double_blocks.0.img_attn.qkv"])
    code, out = _run(["check", str(b), "--lora", str(lo), "--output-format", "json"], capsys)
    codes = {d["code"] for d in json.loads(out)["diagnostics"]}
    assert {"QC830", "QC837"} <= codes and code == 1


def test_the_public_check_takes_a_lora(tmp_path: Path) -> None:
    import quantcheck

    b, lo = _pair(tmp_path, "float8_e4m3fn", paths=["double_blocks.0.img_attn.qkv"])
    codes = {d.code for d in quantcheck.check(str(b), lora=str(lo)).diagnostics}
    assert {"QC830", "QC837"} <= codes
    assert not {"QC830", "QC837"} & {d.code for d in quantcheck.check(str(b)).diagnostics}


def test_headers_only_imports_no_numpy(tmp_path: Path) -> None:
    b, lo = _pair(tmp_path, "nvfp4")
    code = (
        "import sys; from quantcheck.cli.main import main; "
        f"rc = main(['lora', {str(b)!r}, {str(lo)!r}, '--headers-only']); "
        "assert 'numpy' not in sys.modules, 'numpy imported'; sys.exit(rc)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr


def test_flux_diffusers_keys_patch_slices(tmp_path: Path) -> None:
    """A diffusers Flux LoRA's to_q/to_k/to_v patch thirds of the fused qkv (three patches,
    one layer whose whole weight is re-quantized); proj_mlp the last 4h rows of linear1;
    norm_out the final modulation with its halves swapped (ComfyUI's flux_to_diffusers)."""
    from .families import family_base, family_lora

    b, lo = tmp_path / "b.safetensors", tmp_path / "l.safetensors"
    family_base(b, "flux", "float8_e4m3fn")
    family_lora(lo, "flux", "transformer.")
    a = _analyse(b, lo, numbers=True)
    f = a.files[0]
    assert f.unpredicted == [] and f.unmatched == [] and f.matched_tensors == f.tensors
    by = {r.layer: r for r in a.layers}
    assert by["double_blocks.0.img_attn.qkv"].slices == [(0, 64), (64, 64), (128, 64)]
    assert by["double_blocks.0.txt_attn.qkv"].slices == [(64, 64)]
    assert by["single_blocks.0.linear1"].slices == [(0, 64), (192, 256)]
    assert by["final_layer.adaLN_modulation.1"].slices == []
    assert all(r.figures and 0.9 < r.figures["retention"] < 1.1 for r in a.layers)
    # the whole layer is re-quantized: the two thirds the LoRA leaves alone are measured too
    part = by["double_blocks.0.txt_attn.qkv"].figures
    assert (
        part["untouched_error"] >= 0
        and "untouched_error" not in by["single_blocks.0.linear2"].figures
    )


def test_gpu_dimension_fills_lora_mode(tmp_path: Path, capsys) -> None:
    """DynamicVRAM (NVIDIA default): INT8 re-quantized on the fly, AWQ dequantized (no raise);
    on the CPU the full load re-quantizes and the AWQ layer fails the load."""
    b, lo = _pair(tmp_path, "int8_tensorwise", awq_at="blocks.0.self_attn.o")
    argv = ["lora", str(b), str(lo), "--gpu", "rtx4090", "--gpu", "cpu", "--output-format", "json"]
    _, out = _run(argv, capsys)
    gpu = json.loads(out)["targets"]["comfyui"]["gpu"]
    modes = {g: {p: r["lora_mode"] for p, r in e["execution"].items()} for g, e in gpu.items()}
    assert modes["rtx4090"]["blocks.0.self_attn.o"] == "dequantized"
    assert modes["rtx4090"]["blocks.0.self_attn.q"] == "requantized"
    assert modes["cpu"]["blocks.0.self_attn.o"] == "load-fails"
    assert gpu["rtx4090"]["lora"]["dynamic_vram"] is True and not gpu["cpu"]["lora"]["dynamic_vram"]
    assert gpu["cpu"]["lora"]["patch_bytes"] == 8 * 2 * 8 * 128 * 4
    assert "LoRA: 7 requantized, 1 load-fails" in gpu["cpu"]["summary"]
    _, out = _run(
        ["check", str(b), "--lora", str(lo), "--gpu", "rtx4090", "--output-format", "json"], capsys
    )
    ex = json.loads(out)["targets"]["comfyui"]["gpu"]["rtx4090"]["execution"]
    assert ex["blocks.0.self_attn.o"]["lora_mode"] == "dequantized"


def test_the_dynamic_vram_switch_reaches_lora_mode(tmp_path: Path, capsys) -> None:
    """`--gpu rtx4090,flags=disable-dynamic-vram`: ComfyUI does the full load, so the LoRA is
    patched and re-quantized and the AWQ layer fails the load, as on the CPU; the entry's
    `dynamic_vram` and the LoRA block agree."""
    b, lo = _pair(tmp_path, "int8_tensorwise", awq_at="blocks.0.self_attn.o")
    gpus = ["--gpu", "rtx4090", "--gpu", "rtx4090,flags=disable-dynamic-vram"]
    _, out = _run(["lora", str(b), str(lo), *gpus, "--output-format", "json"], capsys)
    gpu = json.loads(out)["targets"]["comfyui"]["gpu"]
    off = gpu["rtx4090,flags=disable-dynamic-vram"]
    assert off["dynamic_vram"] is False and off["lora"]["dynamic_vram"] is False
    assert off["execution"]["blocks.0.self_attn.o"]["lora_mode"] == "load-fails"
    on = gpu["rtx4090"]
    assert on["lora"]["dynamic_vram"] is True
    assert on["execution"]["blocks.0.self_attn.o"]["lora_mode"] == "dequantized"


def test_hostile_lora_tensors_give_no_crash(tmp_path: Path, capsys) -> None:
    """An alpha of several values and a truncated LoRA: figures not computed, no traceback."""
    from quantcheck.io.build import RawTensor, write_safetensors

    b, lo = _pair(tmp_path, "float8_e4m3fn", paths=ALL[:1])
    with load_checkpoint([str(lo)], read_markers=False) as ck:
        names = list(ck.tensors)
    up, down = np.zeros((128, 8), np.float32), np.zeros((8, 128), np.float32)
    x = names[0].rsplit(".lora_", 1)[0]
    write_safetensors(
        lo,
        [
            RawTensor(f"{x}.lora_up.weight", "F32", up.shape, up.tobytes()),
            RawTensor(f"{x}.lora_down.weight", "F32", down.shape, down.tobytes()),
            RawTensor(f"{x}.alpha", "F32", (3,), np.ones(3, np.float32).tobytes()),
        ],
    )
    a = _analyse(b, lo, numbers=True)
    assert a.layers[0].figures is None and a.layers[0].basis.startswith("not computed")
    lo.write_bytes(lo.read_bytes()[:-100])  # truncated: a container finding of the LoRA
    code, out = _run(["lora", str(b), str(lo), "--output-format", "json"], capsys)
    doc = json.loads(out)
    assert code == 1 and any(d["code"].startswith("QC1") for d in doc["diagnostics"])
