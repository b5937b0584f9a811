"""sglang's checks: format support and mixes (checks), its header path per release (header_path,
header_rules) and older releases' rules (release_rules). Its releases:
runtimes/sglang_releases.py.
"""
