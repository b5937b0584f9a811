"""Differential tests against ComfyUI's own loader code (see test_diff_comfyui.py)."""
