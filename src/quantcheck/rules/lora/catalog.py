"""QC83x: a LoRA on a (quantized) base, as ComfyUI loads and patches it (`quantcheck lora`,
`check --lora`). Facts: `runtimes/comfyui_lora.py`; checks: `rules/lora/checks.py`."""

from __future__ import annotations

from quantcheck.rules.levels import Severity
from quantcheck.rules.rule import Rule, effects
from quantcheck.runtimes.comfyui_lora import EVIDENCE, LORA_PY
from quantcheck.runtimes.lora_path import LORA_PATHS

E, W, N = Severity.ERROR, Severity.WARNING, Severity.INFO


def _evidence(*facts: tuple[str, str]) -> str:
    """Facts of the other runtimes' LoRA paths (runtime, fact), joined."""
    return "; ".join(LORA_PATHS[rt].evidence[k] for rt, k in facts)


RULES = [
    Rule(
        "QC830",
        "lora-key-not-loaded",
        E,
        "LoRA key ComfyUI does not load onto this model ('lora key not loaded')",
        effects(comfyui="degraded"),
        None,
        "Every diffusion-model key of the LoRA maps, through ComfyUI's model_lora_keys_unet "
        "key map of this base, to a layer load_lora patches.",
        "ComfyUI only logs 'lora key not loaded: <key>' at run time and goes on: the part of "
        "the LoRA under that key does nothing. The message gives the reason (prefix, naming "
        "convention, another model family, a layer the base does not have) and the base name "
        "nearest to the key.",
        "a Wan LoRA with diffusers names blocks.0.attn1.to_q.lora_A.weight on a Wan base",
        "Use a LoRA made for this model, or rename its keys to a form ComfyUI maps "
        "(diffusion_model.<layer> or lora_unet_<layer with _>).",
        f"{EVIDENCE['keys']}; {EVIDENCE['load']}",
    ),
    Rule(
        "QC831",
        "lora-text-encoder-keys",
        N,
        "LoRA keys for the text encoder (not applied to this diffusion model)",
        effects(),
        None,
        "Counts the LoRA keys model_lora_keys_clip's names give to a text encoder.",
        "They patch the text encoder when it is loaded with the LoRA (LoraLoader); "
        "LoraLoaderModelOnly logs them as not loaded. Not a problem of this base.",
        "lora_te1_text_model_encoder_layers_0_mlp_fc1.lora_down.weight",
        "Load the LoRA with the text encoder too (LoraLoader) if its text-encoder part matters.",
        f"{LORA_PY} model_lora_keys_clip (~L97-185)",
    ),
    Rule(
        "QC832",
        "lora-shape-mismatch",
        E,
        "LoRA patch whose shapes do not fit the layer's logical [N, K]",
        effects(comfyui="degraded"),
        None,
        "For every matched patch, the up/down (or LoHa/LoKr/diff) shapes make the layer's "
        "logical [N, K] (packed formats compared by their logical shape, as ComfyUI does) and "
        "the ranks of up and down agree.",
        "A key with the right name but the wrong shape counts as matched: no 'lora key not "
        "loaded' warning, only an 'ERROR lora <key>' log line; the weight is left as it was "
        "and the layer is still re-quantized (its noise, for nothing).",
        "lora_up [3072, 16] on a layer of N = 5120",
        "Use the LoRA made for this model size.",
        f"{EVIDENCE['shape']}",
    ),
    Rule(
        "QC833",
        "lora-patch-raises",
        E,
        "LoRA patch of a layer whose format cannot be re-quantized: the LoRA load fails",
        effects(comfyui="fails"),
        None,
        "No matched layer is stored in a format whose quantize raises (awq_w4a16, svdquant_w4a4).",
        "A full-load patch re-quantizes every patched layer in its own format; AWQ W4A16 "
        "needs offline calibration and its quantize raises NotImplementedError. patch_model "
        "does not catch it, so the whole LoRA load fails, not only that layer. ComfyUI "
        "patches this way on the CPU and wherever DynamicVRAM is off (--disable-dynamic-vram, "
        "--highvram, --gpu-only, --novram, torch < 2.8, AMD with ROCm < 7.14); with "
        "DynamicVRAM the LoRA is applied on the fly and the layer runs dequantized "
        "(`--gpu` shows lora_mode per layer).",
        "a LoRA key matching an awq_w4a16 layer",
        "Use a base in another format for LoRA work (FP8, INT8), or leave the AWQ layers out "
        "of the LoRA.",
        f"{EVIDENCE['patched']}; {EVIDENCE['raises']}",
    ),
    Rule(
        "QC834",
        "lora-drowned-by-requant",
        W,
        "re-quantizing the patched layer adds more noise than the LoRA's own change",
        effects(comfyui="degraded"),
        None,
        "For each patched quantized layer, ||deq(Q(W + s*dW)) - (W + s*dW)|| is below "
        "||s*dW|| (added error < 1) and at least half of the LoRA's direction arrives "
        "(retention >= 0.5); measured with the layer's own codec and ComfyUI's seeded "
        "stochastic rounding when the weights are read, else estimated from the stored scales.",
        "ComfyUI re-quantizes a patched layer with new scales; at 4 bits (NVFP4, W4A4, W4A8) "
        "the rounding noise is several times a typical LoRA's change, so the LoRA arrives "
        "buried in noise or is rounded away.",
        "an NVFP4 layer patched by a LoRA of 1 % of its norm: added error 10x",
        "Use an FP8 or INT8 file (or BF16) of the model for LoRA work, or a LoRA loader that "
        "keeps the LoRA as a side branch.",
        f"{EVIDENCE['patched']}; {EVIDENCE['stochastic']}; {EVIDENCE['kitchen']}",
    ),
    Rule(
        "QC835",
        "lora-runs-dequantized",
        N,
        "patched layer runs dequantized when the LoRA is applied on the fly",
        effects(),
        None,
        "Names the matched quantized layers whose format is not re-quantized on the fly.",
        "With dynamic VRAM or low-VRAM loading ComfyUI applies the LoRA as a weight function; "
        "the quantized matmul is then skipped and the layer is dequantized every step (the "
        "2x slowdowns reported with LoRAs). INT8 layers re-quantize instead (PR #14669).",
        "an NVFP4 layer with a LoRA patch",
        "Expect the speed of a BF16 layer for these layers while the LoRA is on.",
        f"{EVIDENCE['weight_function']}",
    ),
    Rule(
        "QC836",
        "lora-keys-not-predicted",
        N,
        "LoRA keys whose matching quantcheck does not predict",
        effects(),
        None,
        "Counts the keys left to a model_lora_keys_unet branch quantcheck does not model: the "
        "UNet models' (SD1.x/SDXL) diffusers table, unet_to_diffusers.",
        "That branch maps diffusers UNet names (down_blocks, up_blocks, mid_block) through a "
        "table built from the UNet's config; quantcheck lists such keys as unpredicted "
        "instead of guessing. (The Flux, SD3, AuraFlow, PixArt, Krea2 and Lumina2 tables and "
        "the BFL-control and USO conversions are modelled.)",
        "lora_unet_down_blocks_0_attentions_0_proj_in.lora_up.weight on an SDXL base",
        "Check these keys in ComfyUI's log ('lora key not loaded').",
        f"{EVIDENCE['keys']}",
    ),
    Rule(
        "QC837",
        "lora-nothing-loaded",
        E,
        "no key of the LoRA loads onto this model",
        effects(comfyui="fails"),
        None,
        "At least one diffusion-model key of the LoRA is loaded by ComfyUI's load_lora.",
        "Every key is logged as not loaded and the LoRA does nothing at all: usually a LoRA "
        "of another model family or a naming ComfyUI does not map for this model.",
        "a Flux LoRA on a Wan base",
        "Use a LoRA made for this model.",
        f"{EVIDENCE['keys']}; {EVIDENCE['load']}",
    ),
    Rule(
        "QC838",
        "lora-lost-on-runtime",
        W,
        "another runtime's LoRA merge keeps less than half of the LoRA or adds more noise",
        effects(),
        None,
        "For each patched quantized layer and each target runtime that merges the LoRA in its "
        "own way (SD.Next's SDNQ round-to-nearest re-quantization, InvokeAI's bf16 merge, "
        "sd.cpp's F16 merge), retention >= 0.5 and added error <= 1, measured from the "
        "weights with that runtime's rounding. The finding degrades that runtime only.",
        "Round-to-nearest has no randomness to carry a change smaller than half a step: a "
        "LoRA below the grid's spacing is rounded away (SD.Next PR #5044 measured retention "
        "near zero at 4 bits), and a 16-bit merge loses a LoRA under half a BF16 ulp of the "
        "weights. ComfyUI and Forge Neo (the same re-quantization) are QC834.",
        "an nvfp4 layer SD.Next re-quantizes after a 1 % LoRA: retention 0.06",
        "Use a runtime that keeps the LoRA as a side branch on quantized layers (sglang, "
        "DiffSynth, sd.cpp for INT8), or a higher-precision file for LoRA work.",
        _evidence(("sdnext", "rounding"), ("invokeai", "direct"), ("sdcpp", "adapter")),
    ),
    Rule(
        "QC839",
        "lora-side-branch",
        N,
        "runtime keeps the LoRA as a side branch on quantized layers (all of it arrives, "
        "at a speed cost)",
        effects(),
        None,
        "Counts, per target runtime, the patched quantized layers its default mode keeps the "
        "LoRA beside: x @ A @ B computed in high precision next to the quantized matmul.",
        "Nothing is rounded away (retention 1, no added error), but every step pays two thin "
        "GEMMs of the LoRA's rank per layer and keeps the factors resident (sglang's own "
        "help: up to +50 % per step on small models).",
        "sglang --lora-merge-mode auto on an nvfp4 base",
        "Nothing to fix; merge the LoRA into a BF16 base and re-quantize it offline if the "
        "speed matters.",
        _evidence(("sglang", "auto"), ("diffsynth", "hotload"), ("sdcpp", "int8")),
    ),
    Rule(
        "QC840",
        "lora-slice-of-fused-layer",
        N,
        "LoRA patches a slice of a quantized fused weight: the whole layer is re-quantized",
        effects(),
        None,
        "Names the quantized layers whose LoRA patches cover only some rows: diffusers LoRAs "
        "for Flux, SD3, PixArt and Z-Image address q, k and v separately, which ComfyUI maps to "
        "slices of the model's fused qkv (or linear1) weight.",
        "ComfyUI patches the slice but writes back the whole weight with "
        "requantize_from_float and recalculated scales: rows the LoRA leaves alone come back "
        "unchanged while their scale stays (they are on the grid), and move when it changes "
        "(a per-tensor scale whose amax lies in the patched slice). With the weights read, the "
        "finding says which.",
        "transformer.transformer_blocks.0.attn.add_k_proj on double_blocks.0.txt_attn.qkv",
        "Nothing to fix in the file; expect the figures of the whole layer. A LoRA that also "
        "trains the other slices costs no more noise.",
        "ComfyUI @783545f6 comfy/utils.py flux_to_diffusers / mmdit_to_diffusers / "
        "pixart_to_diffusers / z_image_to_diffusers (slices); comfy/lora.py calculate_weight "
        "(weight.narrow at the offset); " + EVIDENCE["patched"],
    ),
]
