"""quantcheck: validate ComfyUI per-layer quantized safetensors checkpoints."""

__version__ = "0.1.0"
