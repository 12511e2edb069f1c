"""The package's C part (setup.py): every C source is built, and compiles without a warning under -Wall -Wextra
(pip shows none of a build's warnings)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(ROOT.glob("framestream/**/*.c"))


def test_setup_builds_every_c_source() -> None:
    listed = {node.value for node in ast.walk(ast.parse((ROOT / "setup.py").read_text()))
              if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith(".c")}
    assert SOURCES and listed == {str(path.relative_to(ROOT)) for path in SOURCES}


@pytest.mark.parametrize("source", SOURCES, ids=lambda path: path.name)
def test_a_c_source_compiles_without_warnings(source: Path) -> None:
    compiler = shutil.which("cc") or shutil.which("gcc")
    assert compiler, "make venv needs a C compiler (Makefile: RUN_PACKAGES)"
    done = subprocess.run([compiler, "-fsyntax-only", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror",
                           f"-I{sysconfig.get_paths()['include']}", str(source)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
