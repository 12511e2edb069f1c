"""Run the viewer's JavaScript unit tests (tests/web/*.test.mjs) with node's built-in runner, so that
`pytest` (and `make test`) covers them too. No npm packages: node alone."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def test_viewer_js_units() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is needed for the viewer's unit tests (node --test tests/web/)")
    files = sorted(str(p) for p in HERE.glob("*.test.mjs"))
    assert files, "no *.test.mjs found"
    proc = subprocess.run([node, "--test", *files], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "# fail 0" in proc.stdout
