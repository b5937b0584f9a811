"""The node pack's pyproject.toml as the Comfy registry reads it.

The checks follow comfy-cli 1.23.0 (`comfy_cli/registry/config_parser.py`:
`extract_node_configuration`, `validate_version`, `sanitize_node_name`, and
`command/custom_nodes/command.py` `validate_node_for_publishing`, which refuses an empty version);
`comfy node validate` in integrations/comfyui passed with it (2026-12-04). Where comfy-cli is
installed its own functions are run too.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

PACK = Path(__file__).resolve().parents[2] / "integrations" / "comfyui"
DOC = tomllib.loads((PACK / "pyproject.toml").read_text())
#: comfy-cli's version pattern for requires-comfyui (a spec string, not code)
VERSION_PART = re.compile(r"^(?:(==|>=|<=|!=|~=|>|<|<>|=)\s*)?(\d+\.\d+\.\d+(?:-[a-zA-Z0-9]+)?)?$")


def test_project_table() -> None:
    project = DOC["project"]
    assert re.fullmatch(r"[a-z0-9][a-z0-9._-]*[a-z0-9]", project["name"])
    assert not project["name"].startswith(("comfy", "comfyui"))  # sanitize_node_name keeps it
    assert re.fullmatch(r"\d+\.\d+\.\d+", project["version"])  # semver, not dynamic
    assert (PACK / project["license"]["file"]).is_file()
    assert project["urls"]["Repository"].startswith("https://")
    assert project["dependencies"] == ["quantcheck>=0.1.0"]
    assert (PACK / "requirements.txt").read_text().split() == project["dependencies"]
    assert all(c.startswith("Operating System :: OS Independent") for c in project["classifiers"])


def test_tool_comfy_table() -> None:
    comfy = DOC["tool"]["comfy"]
    assert comfy["PublisherId"] and comfy["DisplayName"] and comfy["Icon"].startswith("https://")
    assert isinstance(comfy["includes"], list)
    assert (PACK / comfy["web"]).is_dir() and list((PACK / comfy["web"]).glob("*.js"))
    for part in comfy["requires-comfyui"].split(","):
        assert VERSION_PART.match(part.strip())


def test_comfy_cli_reads_it_as_written() -> None:
    parser = pytest.importorskip("comfy_cli.registry.config_parser")
    config = parser.extract_node_configuration(str(PACK / "pyproject.toml"))
    assert config.project.name == parser.sanitize_node_name(config.project.name)
    assert config.project.version == DOC["project"]["version"]
    assert config.project.license.file == "LICENSE"
    assert config.project.supported_comfyui_version == DOC["tool"]["comfy"]["requires-comfyui"]
    assert config.tool_comfy.publisher_id == DOC["tool"]["comfy"]["PublisherId"]
    assert config.tool_comfy.web == "web"
