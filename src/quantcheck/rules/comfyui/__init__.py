"""ComfyUI's behaviour: its rules (catalog), their checks (checks: its loader's rules and the
`paths` hook; keys: its key plumbing; attach: header entries attached under another name), its
error messages (messages) and its device gates (gpu). Its records and release steps:
runtimes/comfyui_releases.py, runtimes/comfyui_cpu.py.
"""
