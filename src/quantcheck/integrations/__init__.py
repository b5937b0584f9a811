"""quantcheck inside the runtimes: the pre-load check the ComfyUI node pack and the sglang
plugin share (`preflight`), and the sglang plugin itself (`sglang_plugin`)."""
