"""Quantization formats as data: tensors, dtypes, shapes and marker keys per format."""
