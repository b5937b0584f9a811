"""The GPU dimension of a verdict (issue 24): per target and GPU, how each quantized layer runs
(native / emulated / refused / depends), the weight memory, the lowest class where every
layer is native, and known bad device combinations as findings. Each runtime's decisions are
its own (`Runtime.gpu`, e.g. `rules/comfyui/gpu.py`); this package assembles them."""
