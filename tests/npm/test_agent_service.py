"""framestream/node from the packed tarball against the real service: Node code mints the grants, opens a frame,
clicks its button and reads a screenshot whose pixels show the click; its tokens verify in Python and the Python
client's tokens work in it; a handoff (request-help, a person's take-over, release with a note) end to end; a
download read back, a file chooser answered and files dropped, by the pages' pixels; the frame resized in place
(`resizeFrame`), its page's state kept."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from framestream.client.pictures import png_to_rgb, rgb_to_png
from framestream.tokens import mint_token, verify_token
from tests.fixtures import service_fixture
from tests.npm.conftest import HERE, node
from tests.support import TEST_SECRET, Service

pytestmark = pytest.mark.integration

service = service_fixture(timeout=60)

RED = np.array([220, 30, 30])
GREEN = np.array([30, 180, 60])


def colour_at(png: Path, x: int, y: int) -> np.ndarray:
    return png_to_rgb(png.read_bytes())[y, x].astype(int)


def test_node_agent_from_the_tarball_drives_the_real_service(service: Service, scratch: Path,
                                                             tmp_path: Path) -> None:
    shutil.copy(HERE / "consumer" / "agent_flow.mjs", scratch)
    frame_grant = mint_token(TEST_SECRET, role="drive", sandbox_id="test", frame="*", subject="py-agent",
                             step=True)
    cfg = {"base": service.base, "secret": TEST_SECRET, "sandbox": "test", "dir": str(tmp_path),
           "page": f"{service.pages}/clicker.html",
           "pythonView": mint_token(TEST_SECRET, role="view", sandbox_id="test", subject="py"),
           "pythonGrant": frame_grant, "pages": service.pages,
           "bluePng": base64.b64encode(rgb_to_png(np.full((1, 1, 3), (40, 60, 220), np.uint8))).decode()}
    proc = node("--experimental-websocket", "agent_flow.mjs", json.dumps(cfg), cwd=scratch, timeout=150)
    out = json.loads(proc.stdout.strip().splitlines()[-1])

    # The clicks show in the screenshots' pixels: the button was red, the Python grant's click made it green, the
    # Node agent's own grant's click red again. Read at (60, 60), inside the button and off its label (the clicks'
    # own (140, 100) lies between the label's words: its colour was the button's by luck).
    assert np.abs(colour_at(tmp_path / "before.png", 60, 60) - RED).max() < 30
    assert np.abs(colour_at(tmp_path / "again.png", 60, 60) - GREEN).max() < 30
    assert np.abs(colour_at(tmp_path / "after.png", 60, 60) - RED).max() < 30
    assert (out["first"]["width"], out["first"]["height"]) == (320, 200)
    assert out["first"]["captureUs"] >= out["first"]["sentUs"]
    assert out["frame"]["state"] == "live"

    # Both ways: the tokens Node minted verify with the service's code, and Node verified the Python one.
    minted = out["minted"]
    assert verify_token(TEST_SECRET, minted["view"], sandbox_id="test").sub == "alice"
    step = verify_token(TEST_SECRET, minted["step"], sandbox_id="test")
    assert step.step and step.role == "drive" and step.frm == out["frame"]["id"]
    assert verify_token(TEST_SECRET, minted["control"], sandbox_id="test").role == "control"
    assert out["pythonClaims"]["sub"] == "py" and out["again"] >= 1

    # Handoff: asked, refused while a person holds the frame (TakenOver), answered with the person's note.
    assert out["asked"] == {"reason": "please log in", "subject": "agent"}
    assert out["refused"] == {"typed": True, "code": "taken-over", "frame": out["frame"]["id"]}
    assert out["note"] == "logged in as ana"
    assert out["unanswered"] is None
    assert out["closed"] is True

    # Files: the page's CSV read back; a file chooser answered (the page's marker: one file, its first two bytes);
    # a text file and a PNG dropped on a drop zone (its bar green once it read both).
    assert out["downloaded"] == {"name": "report.csv", "text": "id,value\n1,42\n"}
    # The page's prompt, heard and answered "yes": its marker green; the tab its link opened, closed by `page`.
    assert out["dialog"] == {"kind": "prompt", "message": "say yes", "open": [out["dialog"]["open"][0]]}
    assert np.abs(colour_at(tmp_path / "answered.png", 320, 360) - GREEN).max() < 30
    assert out["tabs"]["left"] == [["p1", "tab.html"]] and out["tabs"]["opened"] != "p1", out["tabs"]
    assert out["tabs"]["dialogsLeft"] == 0
    assert out["chosen"] == ["picked.bin"]
    assert np.abs(colour_at(tmp_path / "chosen.png", 320, 360) - np.array([60, 200, 10])).max() < 30
    assert out["dropped"] == ["hello.txt", "blue.png"]
    assert np.abs(colour_at(tmp_path / "dropped.png", 320, 360) - GREEN).max() < 30

    # Resized in place (240x160 at dpr 1 in the 320x200 display it launched with): the answer is the frame at the
    # new size, the watched frame's video-config and the next screenshot are of it, and the button the click
    # before turned green is green still (a reloaded page would show it red). Read at (60, 60): inside the button
    # (CSS 40..240 x 40..160) at both sizes, and off its label (white text around its centre).
    assert np.abs(colour_at(tmp_path / "before_resize.png", 60, 60) - GREEN).max() < 30
    resized = out["resized"]
    assert (resized["id"], resized["width"], resized["height"], resized["dpr"], resized["state"]) == (
        out["frame"]["id"], 240, 160, 1, "live"), resized
    assert (resized["encoded_width"], resized["encoded_height"], resized["message"]) == (240, 160, None), resized
    assert out["configAtReturn"] == [240, 160], out["configAtReturn"]  # the new size's config came first
    shot = out["resizedShot"]
    assert shot["config"] == [240, 160, 240, 160] and shot["watched"] == [240, 160], shot
    assert (shot["width"], shot["height"]) == (240, 160), shot
    picture = png_to_rgb((tmp_path / "resized.png").read_bytes())
    assert picture.shape[:2] == (160, 240)
    assert np.abs(np.array(shot["button"]) - GREEN).max() < 30, shot["button"]
    assert np.abs(picture[60, 60].astype(int) - GREEN).max() < 30, picture[60, 60]
