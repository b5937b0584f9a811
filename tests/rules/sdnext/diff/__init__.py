"""Differential tests: SD.Next's SDNQ quantizer (the re-quantization of its LoRA merge) against
`quantcheck lora` (`make diff-consumers`)."""
