"""LoRA on a quantized base: key map, load, patch outcome and numbers (QC83x)."""
