"""Tests of the comfyui rule folder (src/quantcheck/rules/comfyui)."""
