"""QC1xx: the safetensors container's rules (the checks are in io/header.py, which reads the
bytes).
"""
