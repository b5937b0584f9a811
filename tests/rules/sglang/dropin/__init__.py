"""The drop-in `quantcheck.compat.sglang` (sglang's marker loading, reproduced in
rules/sglang/) against sglang 0.5.23's reference cases and message rules, and the safe_open
look-alike it reads with (io/safe_open.py)."""
