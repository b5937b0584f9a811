"""QC6xx: the rules of what a runtime supports for the whole file (formats, mixes, constructors),
shared by sglang and ComfyUI.
"""
