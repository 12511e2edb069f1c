"""web/lib/webrtc.js with node's own test runner (no browser): offer, answer, fallback rules."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def test_webrtc_js_units() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is needed for the viewer's unit tests")
    test_file = Path(__file__).parent / "webrtc.test.mjs"
    proc = subprocess.run([node, "--test", str(test_file)], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "# fail 0" in proc.stdout
