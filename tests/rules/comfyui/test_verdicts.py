"""Verdicts that follow ComfyUI's own loading code (issue 20, items 1-4): each case is also a
case of the ComfyUI differential suite (tests/rules/comfyui/diff/cases.py), where ComfyUI's
code at the pin decides it."""

from __future__ import annotations

from pathlib import Path

from quantcheck.checking import check_paths

from .._build import P, file, header_meta, marker, t

DEFAULT = "comfyui,comfyui-cpu,sglang"


def _status(paths: list[Path], target: str = DEFAULT) -> tuple[dict[str, str], set[str]]:
    report = check_paths([str(p) for p in paths], target=target)
    keys = target.split(",")
    return {k: report.target_status(k)["status"] for k in keys}, {
        d.code for d in report.diagnostics
    }


# --- item 1: every independent problem of a layer, the worst deciding -----------------------


def test_wrong_dtype_weight_without_its_required_companion_fails(tmp_path: Path) -> None:
    """mxfp8 marker, I8 weight, no weight_scale: ComfyUI raises "Missing MXFP8 block scales"
    (comfy/ops.py _load_quantized_module) before the weight's dtype matters."""
    paths = file(lambda: [t(f"{P}.weight", "I8", (128, 128)), marker(P, {"format": "mxfp8"})])(
        tmp_path
    )
    status, codes = _status(paths)
    assert {"QC301", "QC303"} <= codes
    assert status["comfyui"] == "fails" and status["comfyui-cpu"] == "fails"
    # sglang's inspector passes explicit mxfp8 markers (recorded); 0.5.23 then stops MXFP8 at
    # weight load (QC615: weight_loader_v2 without tp_rank)
    assert status["sglang"] == "fails"


def test_unquantized_weight_without_its_scale_fails(tmp_path: Path) -> None:
    """A BF16 weight under an nvfp4 marker with no scales: ComfyUI raises "Missing NVFP4
    scales" before it casts the weight."""
    paths = file(lambda: [t(f"{P}.weight", "BF16", (64, 64)), marker(P, {"format": "nvfp4"})])(
        tmp_path
    )
    status, codes = _status(paths)
    assert {"QC301", "QC304"} <= codes
    assert status["comfyui"] == "fails"


def test_wrong_dtype_weight_with_a_wrong_dtype_scale_reports_both(tmp_path: Path) -> None:
    paths = file(
        lambda: [
            t(f"{P}.weight", "U8", (64, 64)),
            t(f"{P}.weight_s_rel", "F8_E4M3", (64, 8)),
            t(f"{P}.weight_s_channel", "BF16", (64,)),
            marker(P, {"format": "asym_w4a8_int8", "group_size": 16, "convrot_groupsize": 16}),
        ]
    )(tmp_path)
    status, codes = _status(paths)
    assert {"QC303", "QC305"} <= codes
    assert status["comfyui"] == "fails"  # the BF16 channel scale: NoCapableBackendError


# --- item 3: a 1-D int8 row scale: inference right, LoRA / fallback not ----------------------


def test_int8_row_scale_1d_is_ok_with_a_lora_warning(tmp_path: Path) -> None:
    from .._build import int8

    paths = file(lambda: int8(scale=("F32", (64,))))(tmp_path)
    report = check_paths([str(p) for p in paths], target=DEFAULT)
    assert report.target_status("comfyui")["status"] == "ok"
    assert report.target_status("comfyui-cpu")["status"] == "ok"
    (hit,) = [d for d in report.diagnostics if d.code == "QC319"]
    assert hit.effective_severity.value == "warning"
    assert "LoRA" in hit.message and "full-precision fallback" in hit.message


# --- item 2: unmarked storage, decided from the shapes ---------------------------------------

MODEL = "model.diffusion_model."


def _nvfp4_under_prefix(header: str, others: int = 0):
    from .._build import bf16, nvfp4

    def make():
        layer = nvfp4(MODEL + "blocks.4.attn.wo", n=128, k=64)[:-1]  # no marker tensor
        return [*layer, *(x for i in range(others) for x in bf16(f"{MODEL}blocks.{i}.ff"))]

    return file(make, header_meta({header: {"format": "nvfp4"}}))


def test_unmarked_packed_nvfp4_fails_comfyui(tmp_path: Path) -> None:
    """The header entry does not attach (3 keys carry the prefix: ComfyUI strips "model."):
    the U8 [N, K/2] codes load as a [N, K/2] weight and the first forward raises."""
    status, codes = _status(_nvfp4_under_prefix("blocks.4.attn.wo")(tmp_path))
    assert "QC314" in codes
    assert status["comfyui"] == "fails" and status["comfyui-cpu"] == "fails"


def test_unmarked_w4a8_fails_comfyui(tmp_path: Path) -> None:
    from .._build import w4a8

    status, codes = _status(file(lambda: w4a8()[:-1])(tmp_path))
    assert "QC314" in codes and status["comfyui"] == "fails"


def test_unmarked_same_width_int8_stays_degraded(tmp_path: Path) -> None:
    from .._build import int8

    status, codes = _status(file(lambda: int8()[:-1])(tmp_path))
    assert "QC314" in codes and status["comfyui"] == "degraded"


# --- item 4: load_diffusion_model_state_dict's two convert_old_quants passes ------------------


def test_header_without_model_prefix_attaches_once_the_prefix_is_stripped(tmp_path: Path) -> None:
    """ComfyUI's own test_two_call_pattern_mirrors_load_diffusion_model_state_dict: tensors
    under model.diffusion_model.proj_in, the header names proj_in; 7 keys carry the prefix."""
    from .._build import bf16, fp8

    def make():
        layer = fp8(MODEL + "proj_in")[:-1]
        return [*layer, *(x for i in range(5) for x in bf16(f"{MODEL}blocks.{i}.ff"))]

    meta = header_meta({"proj_in": {"format": "float8_e4m3fn"}})
    report = check_paths([str(p) for p in file(make, meta)(tmp_path)], target="all")
    for key in ("comfyui", "comfyui-cpu", "forge-neo"):
        assert report.target_status(key)["status"] == "ok", key
    for release in ("v0.16", "0271a469"):
        key = f"comfyui@{release}"
        assert (
            check_paths([str(tmp_path / "model.safetensors")], target=key).target_status(key)[
                "status"
            ]
            == "ok"
        )


def test_the_marked_view_is_judged_for_comfyui(tmp_path: Path) -> None:
    """Once ComfyUI attaches the entry, the layer's own problems are its problems: an nvfp4
    entry on tensors without weight_scale_2 fails ("Missing NVFP4 scales")."""
    from .._build import bf16, nvfp4

    def make():
        layer = [x for x in nvfp4(MODEL + "blocks.4.attn.wo")[:-1] if "scale_2" not in x.name]
        return [*layer, *(x for i in range(4) for x in bf16(f"{MODEL}blocks.{i}.ff"))]

    paths = file(make, header_meta({"blocks.4.attn.wo": {"format": "nvfp4"}}))(tmp_path)
    report = check_paths([str(p) for p in paths], target=DEFAULT)
    assert report.target_status("comfyui")["status"] == "fails"
    hit = next(d for d in report.diagnostics if d.code == "QC301")
    assert hit.effective_effects["sglang"].value == "none"  # sglang sees the layer unmarked


def test_few_prefixed_keys_leave_the_entry_unattached(tmp_path: Path) -> None:
    """With at most 5 keys under model.diffusion_model., unet_prefix_from_state_dict answers
    "model.": the entry names nothing ComfyUI loads."""
    status, codes = _status(_nvfp4_under_prefix("blocks.4.attn.wo", others=2)(tmp_path))
    assert status["comfyui"] == "fails" and "QC222" in codes  # 5 keys: still unattached
    status, _ = _status(_nvfp4_under_prefix("blocks.4.attn.wo", others=3)(tmp_path))
    assert status["comfyui"] == "ok"  # 6 keys: stripped, attached


def test_prefixed_entries_on_unprefixed_tensors_drop_the_tensors(tmp_path: Path) -> None:
    """ComfyUI's TestKnownResidualGap: the strip keeps only the key written for the entry."""
    from .._build import INT8_CONVROT, int8

    meta = header_meta({MODEL + P: INT8_CONVROT})
    report = check_paths([str(p) for p in file(lambda: int8()[:-1], meta)(tmp_path)])
    assert report.target_status("comfyui")["status"] == "fails"
    hit = next(d for d in report.diagnostics if d.code == "QC222")
    assert "dropping the layer's tensors" in hit.message
