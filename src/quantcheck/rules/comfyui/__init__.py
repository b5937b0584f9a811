"""ComfyUI's own checks: its key plumbing (keys), header-entry attachment (attach) and loader rules
(checks). Its records and release steps: runtimes/comfyui_releases.py, runtimes/comfyui_cpu.py.
"""
