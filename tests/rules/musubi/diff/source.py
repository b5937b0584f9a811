"""musubi-tuner's own checks, from folders outside the repository, verified before they run.

Two releases, two folders (each laid out as `src/musubi_tuner/...`):

`QUANTCHECK_MUSUBI_SRC`, 725869d (PR #1024's branch; runtimes/musubi.py's older step):
- `modules/convrot_int8_utils.py`: `inspect_convrot_int8_artifact` and what it calls;
- `minimax_h3/text_encoder.py`: PR #1024's exact-topology check of the MiniMax H3 Qwen3-VL text
  encoder, `_validate_h3_text_encoder_convrot_topology` (with `LAYER_50_HIDDEN_STATE_INDEX`
  and `normalize_h3_text_encoder_key`), as the PR branch had it.
  The project's machines reach no GitHub host and the code-search mirror of
  kohya-ss/musubi-tuner is a snapshot older than PR #1024: this folder was written from the code
  index's stored copies (convrot_int8_utils.py at 725869d; text_encoder.py from the PR branch, a
  copy whose commit the index does not name) and the pins computed from it.

`QUANTCHECK_MUSUBI_036_SRC`, 0.3.6 (the newest step): the pre-quantized loaders
(`modules/comfy_quant_utils.py`, `modules/convrot_int8_utils.py`, `modules/nvfp4_utils.py`),
the reader (`utils/safetensors_utils.py`), the text encoder's router
(`minimax_h3/text_encoder.py` `load_h3_text_encoder`) and the H3 DiT's header classification
(`minimax_h3/model.py` `classify_h3_transformer`, with `minimax_h3/packing.py`'s channel
constants and `minimax_h3/checkpoint.py` `load_safetensors_metadata`). The newest code read
is the code index's copy of wenyifancc/musubi-tuner @2253ebee (pyproject 0.3.6); the index
holds no fetchable repository for it, so the folder holds real git bytes of the same
definitions from
diodiogod/musubi-tuner_simple_GUI @632b4ec (a fork that copied upstream's dev branch on
2026-08-12: comfy_quant_utils.py, convrot_int8_utils.py, and nvfp4_native_utils.py saved as
nvfp4_utils.py; minimax_h3_native/{model,packing,checkpoint}.py saved under minimax_h3/;
minimax_h3_native/text_encoder.py saved as minimax_h3/text_encoder.py with the two renames the
0.3.6 copy shows in `load_h3_text_encoder`: `disable_mmap` -> `disable_numpy_memmap` and the
`nvfp4_utils` import) and kohya-ss/musubi-tuner v0.3.4 (30c658c,
the mirror; safetensors_utils.py). Every pinned definition was compared with the 0.3.6 copy and
is the same text (the files' character counts match once the fork's own
`patch_convrot_int8_modules` is left out).

Only the pinned definitions run (loader.py); each is pinned below by the SHA-256 of its source
text (decorators included). Nothing of musubi-tuner is stored in this repository.
"""

from __future__ import annotations

import ast
import hashlib
import os
from pathlib import Path

ENV = "QUANTCHECK_MUSUBI_SRC"
ENV_036 = "QUANTCHECK_MUSUBI_036_SRC"
CONVROT = "src/musubi_tuner/modules/convrot_int8_utils.py"
TEXT_ENCODER = "src/musubi_tuner/minimax_h3/text_encoder.py"
COMFY = "src/musubi_tuner/modules/comfy_quant_utils.py"
NVFP4 = "src/musubi_tuner/modules/nvfp4_utils.py"
READER = "src/musubi_tuner/utils/safetensors_utils.py"
PACKING = "src/musubi_tuner/minimax_h3/packing.py"
CHECKPOINT = "src/musubi_tuner/minimax_h3/checkpoint.py"
MODEL = "src/musubi_tuner/minimax_h3/model.py"
#: 725869d: file::definition -> SHA-256 of its source text
PINS = {
    f"{CONVROT}::ConvRotInt8LayerSpec": (
        "897d3f68e60a98796b9dc82aac269ee4bad88f575f943e42528a66af5b873091"
    ),
    f"{CONVROT}::ConvRotInt8Artifact": (
        "f9577d1b6343d91d9800d16720aa84c9f20d50f63cd647a0ccd7cbc0f6ea7e24"
    ),
    f"{CONVROT}::_HeaderTensor": (
        "23bf3d762ae7c6f1090237a70bbd573aa05b34010e34cb6518324ed2d8f39eb7"
    ),
    f"{CONVROT}::canonicalize_convrot_int8_key": (
        "8e1a20a36e17daf0e154cc41789da3cc0e469cef2e5f70d9ff04ad7bf39a3a11"
    ),
    f"{CONVROT}::_is_power_of_four": (
        "db4f54427b7b9f7f436b2fe1d8e8b0d188411eb0b86fc2ee2d1204ad27406e19"
    ),
    f"{CONVROT}::_artifact_error": (
        "85e5e662fc59720be4d3e3377894c2406127435cb67bd1467295ad23ddc26082"
    ),
    f"{CONVROT}::_decode_convrot_control": (
        "2dd723cb0d8afaa9ec00cfddb11bceeba443f475607dc20046175215a08b03c4"
    ),
    f"{CONVROT}::inspect_convrot_int8_artifact": (
        "6b5bff3eaf0653d23350013afeb7d73e495b787c74b17121518556490bb04e6c"
    ),
    f"{TEXT_ENCODER}::LAYER_50_HIDDEN_STATE_INDEX": (
        "5cfa06fec4f9029e0120bace56eeb43075b933f00ea9fdd84377569245497e96"
    ),
    f"{TEXT_ENCODER}::normalize_h3_text_encoder_key": (
        "516afbe0382f26f8aff586194433e55e6824f3404186e268aaf853c4fa1150bd"
    ),
    f"{TEXT_ENCODER}::_validate_h3_text_encoder_convrot_topology": (
        "ad81d06d8c21df7e690129a9ff1250bd4349f2701cd3fe3d011f4427acb936fb"
    ),
}


#: 0.3.6: file::definition -> SHA-256 of its source text (loaded in this order)
PINS_036 = {
    f"{READER}::MemoryEfficientSafeOpen": (
        "2e3de03cd7005b1358f024a4508fc09b04fb627e342549ef70efd96bad958905"
    ),
    f"{READER}::WeightTransformHooks": (
        "7d0711b1920b92b78fef65e11ded282fb6075838c71f0bf7c3c7759440e4510a"
    ),
    f"{READER}::TensorWeightAdapter": (
        "3d8ff11c4a1d13497a97d4826e471b0aa2b03c1de5adec5ac67a702affa1edd4"
    ),
    f"{READER}::load_safetensors": (
        "6d56a095dc54bef700f3673827ec29438ee1935c0a89b22d6dab2e87c6326098"
    ),
    f"{COMFY}::COMFY_QUANT_SUFFIX": (
        "de7018492fc95f4d3f0611f329110a87ad240b1b986e2a12a43aa208cdb9d816"
    ),
    f"{COMFY}::COMFY_WEIGHT_SCALE_SUFFIX": (
        "8982ed2daf1467392d0b67940dc371dfd44bebf01d81eace798192e610817aa5"
    ),
    f"{COMFY}::FORMAT_CONVROT_INT8": (
        "2621cb5d65a4bfef1bc24e3c9280df964cfd0f2e6914faaeeb324ada2be3651d"
    ),
    f"{COMFY}::FORMAT_INT8_TENSORWISE": (
        "f4d384807e2f63f5e0c7e03196322bae70cb77f050c656e15f2721167225b72b"
    ),
    f"{COMFY}::FORMAT_NVFP4": ("338bb64fe87866fa3313131ee3f49f7ecb0884acf1bae13012d7d1ced20f87a1"),
    f"{COMFY}::decode_comfy_quant_spec": (
        "c6b60f01eb9f198b33c84c8d2b934ad546d7427e85583e818a62f911af6e3d8d"
    ),
    f"{COMFY}::classify_comfy_quant_spec": (
        "f41872867f8db3e0f57b4aaf5f0591d448cd04e82093a1f0ea590c5128449f76"
    ),
    f"{COMFY}::detect_comfy_quant_formats": (
        "37f16e87eb073146f9c3ed5c7f05cde97c05272680cd8efb5ed98695178b6435"
    ),
    f"{CONVROT}::CONVROT_GROUPSIZE": (
        "60004f8e32637541ffc77101ad15698ac79c985d8421b273d9684f43e67f3e28"
    ),
    f"{CONVROT}::COMFY_QUANT_FORMAT_INT8": (
        "1e0220108cd8fbd0fcb95e4ca5d7ec1298d9cc9bcc7316b3c721ec54584639fa"
    ),
    f"{CONVROT}::_is_power_of_4": (
        "e72586d588011d2a9da5661b7a5872e57a5733c1b9d1652306a4eed11383444e"
    ),
    f"{CONVROT}::parse_comfy_quant_spec": (
        "c2060d3cc51d2bac5ece8303456c79be06979d98f42a1f2bbf74206de68c6cbf"
    ),
    f"{CONVROT}::canonicalize_convrot_int8_key": (
        "3344fb0b726add300bf9607b6c5f21a07d678f50385b8d6dce45e1f29e4a48be"
    ),
    f"{CONVROT}::has_comfy_quant_tensors": (
        "c783e3ee4741b61ecdfa03da053b13206f513b2b563c017114996ee00e9bb81a"
    ),
    f"{CONVROT}::ConvRotInt8Quantizer": (
        "fcd30358e30600dbd56ab0293d4a82bb60f8b9bb30acb138f82a7a679d6fd4a8"
    ),
    f"{CONVROT}::convrot_int8_linear_forward_patch": (
        "8b7afac927bd66666d9a437ccf8d450e7b987163d7773c6234c424a43da12231"
    ),
    f"{CONVROT}::_validate_convrot_bwd_mode": (
        "2c66f7d663d09cb3f4e32ff4582057308c9f85c57ffb9dddd4534d2645271777"
    ),
    f"{CONVROT}::_patch_convrot_int8_linear": (
        "d3fb259e3d43f2612b43bb302ec8a09e43378598dc728e53408d564b883b58b3"
    ),
    f"{CONVROT}::apply_convrot_int8_monkey_patch": (
        "51b1c5ab431d9b2dbbb6c85d18c9bd010a97ca0443aa27b47c58133b3db404df"
    ),
    f"{NVFP4}::NVFP4_BLOCK_SIZE": (
        "fb073b11b331c55dc465132669b334f9ec9938a28b3e11ce029e5fe6be32e7c3"
    ),
    f"{NVFP4}::COMFY_WEIGHT_SCALE_2_SUFFIX": (
        "142da94c9d0124844a4f85b7e43f57ff26e39326958b271b384458d18b882210"
    ),
    f"{NVFP4}::COMFY_PRE_QUANT_SCALE_SUFFIX": (
        "180e7a08c306e5486bf0c4226eaac35ecda271474656e2c0edab5ece8a649680"
    ),
    f"{NVFP4}::_ceil_div": ("97325b46e0bf52b167a0b9a45ed535f927dd74d621630bf89d22ff83ab052449"),
    f"{NVFP4}::_roundup": ("6625430add0c5d491d98bea5021c0e7297b24ddbd4a92289777d1b9cbf23ce93"),
    f"{NVFP4}::nvfp4_scaled_mm_available": (
        "67a2778d4342c02c2d6f6d7691e47c251a6c210f914c2f7aeb7e9d6a60ff7417"
    ),
    f"{NVFP4}::nvfp4_linear_forward_patch": (
        "cff4e8205e39674d71fb690994d6c0fdd761441ae4d1877157a5e9262aad2e46"
    ),
    f"{NVFP4}::int8_embedding_forward_patch": (
        "6089d4c0afb3f2f431db116ab4f59a4f3af22f3c6707864c78e8bcf6642c6ab9"
    ),
    f"{NVFP4}::NvFp4Quantizer": (
        "9a151507e159bc6f2e9621ed62da8853e80508a8c96be490379108984a2014f6"
    ),
    f"{NVFP4}::apply_nvfp4_monkey_patch": (
        "c85cf3fd6024856d22c45d5b91eb877226ccba5c683de644240cf0ed68ed2c40"
    ),
    f"{TEXT_ENCODER}::TEXT_WIDTH": (
        "ac7584c7e46eb751a0a429bdf2cdf96d53ebcc7bbf4ff1956001c4813648831a"
    ),
    f"{TEXT_ENCODER}::LAYER_50_HIDDEN_STATE_INDEX": (
        "5cfa06fec4f9029e0120bace56eeb43075b933f00ea9fdd84377569245497e96"
    ),
    f"{TEXT_ENCODER}::H3_REPO_ID": (
        "5d15b5ead98f4542f242d84cf654b3666645f403eae10f33968aa458e8d4b14d"
    ),
    f"{TEXT_ENCODER}::TEXT_ENCODER_CONFIG_SUBFOLDER": (
        "4803f9c6177cfe0e609ee8986ad107f902c705ddbe4e0d9ada7020ae0b426d09"
    ),
    f"{TEXT_ENCODER}::normalize_h3_text_encoder_key": (
        "516afbe0382f26f8aff586194433e55e6824f3404186e268aaf853c4fa1150bd"
    ),
    f"{TEXT_ENCODER}::load_h3_text_encoder": (
        "88d22f557f0b1ba4eb9bce56ae80758274571d0cd7824c35b5855a9aa7ffd780"
    ),
    f"{PACKING}::VIDEO_CHANNELS": (
        "fad3311f72ebf78e15fd2d6b5348c0465d8ac56e769171356a38c76ba7f1e725"
    ),
    f"{PACKING}::AUDIO_CHANNELS": (
        "e3e794fe9f45824028e5241a563a748d96dc378af16acc925cba604201f5f33e"
    ),
    f"{PACKING}::VIDEO_PATCH_SIZE": (
        "29f27f6b4a925b84b916155dfbdfc8e75a955ca0e678663c43fd80ebd7da0bd0"
    ),
    f"{CHECKPOINT}::load_safetensors_metadata": (
        "812c984f71caa3c6e5aec555cd875fe13cb0641347c349a1fe57607d3c36cef9"
    ),
    f"{MODEL}::MiniMaxH3Config": (
        "0988271b9d8ebe499d058b49bcd6ba1646499745c449dd539aaf3ec5e0aa99dd"
    ),
    f"{MODEL}::_PUBLISHED_CONFIG_FIELDS": (
        "f52764d68ec3c29567516408be0c1f5fd8e3d01e0750e12cf6890ea0486b2ccc"
    ),
    f"{MODEL}::parse_h3_transformer_config": (
        "cb5984ad3fce379a2008741624f0727d95c5c22634ad77a0841044b4aad5b6b4"
    ),
    f"{MODEL}::_read_h3_tensor_headers": (
        "b15c6d021bb13f6bb27703fee214ccceb98b274d8768264274be16411a02bee8"
    ),
    f"{MODEL}::_published_pruned_h3_config": (
        "d517e188a9480772b7bced125665fb7149ce916221da9bd31afe351337380a63"
    ),
    f"{MODEL}::_require_pruned_adaln_header": (
        "be53e7911d1608f901b13393431ff2f9df7a0e12e50bd48a2895f6007d7291e0"
    ),
    f"{MODEL}::classify_h3_transformer": (
        "143fdcb18991a1d024687bf43e1b792740f9b9821061262e3024aa0d249d31e7"
    ),
}


def definition(path: Path, name: str) -> str:
    """The source text of top-level definition `name` in `path`: a function or class with its
    decorators, or an assignment (KeyError if absent)."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    for node in ast.parse(text).body:
        named = isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == name
        assigned = isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        )
        if named or assigned:
            decorators = getattr(node, "decorator_list", [])
            first = min([node.lineno, *(d.lineno for d in decorators)])
            assert node.end_lineno is not None
            return "".join(lines[first - 1 : node.end_lineno])
    raise KeyError(f"{path}: no top-level definition {name}")


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def root() -> Path | None:
    """725869d's verified folder (None when QUANTCHECK_MUSUBI_SRC is unset)."""
    return verified(ENV, PINS)


def root_036() -> Path | None:
    """0.3.6's verified folder (None when QUANTCHECK_MUSUBI_036_SRC is unset)."""
    return verified(ENV_036, PINS_036)


def verified(env: str, pins: dict[str, str]) -> Path | None:
    """The folder `env` names (None when unset); raises when a pinned definition is missing or
    differs."""
    value = os.environ.get(env)
    if not value:
        return None
    base = Path(value)
    bad = []
    for key, want in pins.items():
        rel, _, name = key.partition("::")
        try:
            got = sha256(definition(base / rel, name))
        except (OSError, KeyError) as exc:
            bad.append(f"{key}: {exc}")
            continue
        if got != want:
            bad.append(f"{key}: sha256 {got} is not the pinned {want}")
    if bad:
        raise RuntimeError(
            f"musubi-tuner source in ${env} is not the pinned code:\n" + "\n".join(bad)
        )
    return base
