"""The closing part of every command's `--help`: its exit codes and examples to copy.

One table for all commands, so each command says its own exit codes (not check's) and a test
can run every example shown here (tests/test_doc_commands.py). Example lines are indented two
spaces and start with `quantcheck `; a line that continues a command is indented further.
"""

from __future__ import annotations

#: shared by every command that reads checkpoints
_PIPE = "  141 stdout closed before everything was printed (e.g. `| head`)."

EXIT_CODES = {
    "quantcheck": (
        "exit codes: 0 clean / done, 1 problems found, 2 could not run (bad usage, unreadable "
        "input).\n"
        "  Each command's --help gives its own."
    ),
    "check": (
        "exit codes: 0 clean, 1 problems found (at --fail-on or above), 2 could not run (bad\n"
        "  usage, unreadable input, hostile server),\n" + _PIPE
    ),
    "inspect": (
        "exit codes: 0 shown, 1 shown, but the file is broken as a container (not safetensors,\n"
        "  truncated: the problem is on stderr), 2 could not run (bad usage, unreadable input),\n"
        + _PIPE
    ),
    "rules": "exit codes: 0 listed, 2 bad usage.",
    "explain": "exit codes: 0 explained, 2 no code, rule name or known message matched.",
    "fix": (
        "With no fix to apply nothing is written, and the exit code is check's.\n"
        "exit codes: 0 nothing left to fix, 1 problems remain, 2 could not run."
    ),
    "quantize": "exit codes: 0 written, 2 could not run (or the format is refused for --target).",
    "dequantize": (
        "exit codes: 0 written, 1 some layers could not be dequantized (left as they are),\n"
        "  2 could not run."
    ),
    "compare": "exit codes: 0 compared, 1 some layers could not be compared, 2 could not run.",
    "report": "exit codes: 0 report written, 2 could not run.",
    "lora": (
        "exit codes: 0 the LoRA loads and patches cleanly, 1 problems found (keys not loaded,\n"
        "  shapes that do not fit, a patch that fails, at --fail-on or above), 2 could not run,\n"
        + _PIPE
    ),
}

EXAMPLES = {
    "quantcheck": """\
  quantcheck check model.safetensors                  every problem for sglang and ComfyUI
  quantcheck check --target all model.safetensors     ... for every modelled runtime
  quantcheck inspect model.safetensors                what is inside
  quantcheck explain QC301                            what a code means and how to fix it
  quantcheck fix model.safetensors -o fixed.safetensors
                                                      apply the safe fixes""",
    "check": """\
  quantcheck check model.safetensors                  every problem for sglang and ComfyUI
                                                      (the default targets)
  quantcheck check --target all model.safetensors     every modelled runtime
  quantcheck check --target sglang@0.5.19 model.safetensors
                                                      one release of one runtime
  quantcheck check models/                            every checkpoint in a folder, a table
  quantcheck check model.safetensors.index.json       a sharded checkpoint
  quantcheck check --as-one part1.safetensors part2.safetensors
                                                      shards of one checkpoint, without an index
  quantcheck check --output-format json model.safetensors
                                                      machine-readable
  quantcheck check --deep model.safetensors           also read the scale tensors' values
  quantcheck check --gpu rtx4090 model.safetensors    per layer native / emulated on an RTX 4090,
                                                      weight memory, the lowest class where all
                                                      layers run natively
  quantcheck check --gpu sm_89,cuda=12.8 --gpu mps,torch=2.15 model.safetensors
                                                      a compute capability or backend, with its
                                                      torch / CUDA build (default: torch 2.15,
                                                      CUDA 13.0)
  quantcheck check --gpu all model.safetensors        every GPU class of the table, as a matrix
  quantcheck check --gpu rtx3090,flags=supports-fp8-compute+disable-dynamic-vram model.safetensors
                                                      with ComfyUI's launch switches

  --gpu SPEC: a card (rtx3090, rtx4090, rtx5090, a100, l40s, h100, h200, b200, gb200,
  rx7900xtx, mi300x, arc-a770, m2), a compute capability (sm_89, 8.9, sm_100), an AMD
  architecture (gfx1100, gfx942), a backend (xpu, directml, mps, cpu), all, or auto (this
  machine's device, read with torch); then optionally ,torch=X.Y ,cuda=X.Y ,rocm=X.Y
  ,os=windows ,flags=A+B. flags: ComfyUI's launch switches supports-fp8-compute,
  enable-triton-backend, disable-triton-backend, disable-dynamic-vram, enable-dynamic-vram,
  highvram, gpu-only, novram (a leading -- is accepted), and SD.Next's setting
  sdnq-quantized-matmul; a runtime that does not read a switch notes it as ignored.""",
    "inspect": """\
  quantcheck inspect model.safetensors                every layer: format, dtype, shapes, bytes
  quantcheck inspect --summary model.safetensors      totals per format and the metadata
  quantcheck inspect model.safetensors.index.json     a sharded checkpoint
  quantcheck inspect --output-format json model.safetensors""",
    "rules": """\
  quantcheck rules                                    every code, its severity and effects
  quantcheck rules --output-format markdown           the full documentation""",
    "explain": """\
  quantcheck explain QC301                            what a code means and how to fix it
  quantcheck explain companion-dtype                  the same, by rule name
  quantcheck explain "Comfy INT8 layer 'x' needs I8 weights and F32 scales, got BF16 and F16"
                                                      a runtime's error message, as you saw it""",
    "fix": """\
  quantcheck fix model.safetensors -o fixed.safetensors
                                                      the safe fixes for sglang and ComfyUI
  quantcheck fix model.safetensors -o fixed.safetensors --unsafe-fixes --dry-run
                                                      show the plan, including value changes
  quantcheck fix model.safetensors -o portable.safetensors --profile portable --target all
                                                      one file every consumer reads alike
  quantcheck fix model.safetensors --profile portable --dry-run --output-format json
                                                      the portable plan, for machines""",
    "quantize": """\
  quantcheck quantize model-bf16.safetensors -o model-nvfp4.safetensors --to nvfp4
  quantcheck quantize model-bf16.safetensors -o model-int8.safetensors --to int8_tensorwise \\
      --convrot-groupsize 64 --target comfyui
                                                      (for a DiT but MiniMax-H3, sglang's loader
                                                      reads no INT8 markers)
  quantcheck quantize model-bf16.safetensors -o plan.safetensors --to mxfp8 --target comfyui \\
      --dry-run
  quantcheck quantize model-bf16.safetensors -o model-4090.safetensors --to auto --gpu rtx4090
                                                      a format that runs natively on an RTX 4090
                                                      (--gpu alone: warn where it would not)""",
    "dequantize": """\
  quantcheck dequantize model-nvfp4.safetensors -o model-back.safetensors --dtype bf16""",
    "compare": """\
  quantcheck compare model-nvfp4.safetensors model-bf16.safetensors
                                                      error per layer, worst first""",
    "report": """\
  quantcheck report model-nvfp4.safetensors -o report.html
  quantcheck report model-nvfp4.safetensors -o report.html --compare model-bf16.safetensors
                                                      with the per-layer error heat map""",
    "lora": """\
  quantcheck lora model-bf16.safetensors lora.safetensors
                                                      which keys load, what arrives
  quantcheck lora model-bf16.safetensors lora.safetensors --strength 0.8 --output-format json
  quantcheck lora model-bf16.safetensors lora.safetensors --headers-only
                                                      key matching and outcomes only
  quantcheck check model-bf16.safetensors --lora lora.safetensors
                                                      check, with the LoRA's findings""",
}


#: the end of `check --help`: the environment remote inputs honour (README has the same)
ENVIRONMENT = """\
environment (remote inputs; the huggingface_hub conventions):
  HF_TOKEN            token for private or gated repositories, sent only to HF_ENDPOINT;
                      unset: the one `hf auth login` saved (HF_TOKEN_PATH, else HF_HOME/token)
  HF_ENDPOINT         the hub (default https://huggingface.co)
  HF_HOME             default ~/.cache/huggingface; HF_HUB_CACHE default HF_HOME/hub: a
                      complete cached snapshot of hf://ORG/REPO is checked without a request
  HF_HUB_OFFLINE=1    only the local cache; nothing is fetched
  HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY    http:// proxies, as curl reads them
  REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, SSL_CERT_FILE   CA certificates to trust
  QUANTCHECK_HTTP_TIMEOUT   seconds to wait for any byte (default 20)
"""


def epilog(command: str) -> str:
    """The `--help` epilog of `command` (or of the program for "quantcheck")."""
    text = f"{EXIT_CODES[command]}\n\nexamples:\n{EXAMPLES[command]}\n"
    return text + ("\n" + ENVIRONMENT if command == "check" else "")
