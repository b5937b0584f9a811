"""Byte sources and the safetensors container reader (standard library only)."""
