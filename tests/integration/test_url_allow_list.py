"""FRAMESTREAM_URL_ALLOW_HOSTS holds for a page's own navigations too (issue 32, #4): a redirect, a script's
navigation and a popup to a host off the list never reach it, the frame's `url` never names it, and viewers hear
why; URLs that Python and Chromium would read differently are refused when the frame is made.

The allowed host is 127.0.0.1; the page server answers as `localhost` too (the same loopback socket), so a
request that got through would arrive with `Host: localhost:<port>`: the server counts those.
"""

from __future__ import annotations

import asyncio
import http.server
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from tests.fixtures import service_fixture
from tests.support import PAGES, Service, StreamClient, page_server

ENV = {"FRAMESTREAM_URL_ALLOW_HOSTS": "127.0.0.1", "FRAME_IDLE_PAUSE_S": "30"}


class _Pages(http.server.SimpleHTTPRequestHandler):
    off_list: ClassVar[list[str]] = []  # paths asked for under a host off the list

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, directory=str(PAGES), **kwargs)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        host = self.headers.get("Host", "")
        if not host.startswith("127.0.0.1:"):
            _Pages.off_list.append(self.path)
        port = self.server.server_address[1]
        away = f"http://localhost:{port}/box.html"
        scripted = {
            "/redirect": None,
            "/script": f"<script>setTimeout(() => {{ location.href = '{away}'; }}, 50)</script>",
            "/popup": f"<a href='{away}' target=_blank style='position:fixed;inset:0'>a popup</a>",
        }
        if self.path.startswith("/own?"):  # to the service's own port, given in the query
            body = (b"<!doctype html><script>setTimeout(() => { location.href = 'http://127.0.0.1:' + "
                    b"location.search.slice(1) + '/metrics'; }, 50)</script>")
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", away)
            self.end_headers()
        elif self.path in scripted:
            body = f"<!doctype html><body style='background:#fff'>{scripted[self.path]}</body>".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            super().do_GET()


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with page_server(handler=_Pages) as url:
        yield url


service = service_fixture(env=ENV, scope="module", pages="base")


def test_urls_read_differently_by_python_and_chromium_are_refused(service: Service, base: str) -> None:
    port = base.rsplit(":", 1)[1]
    for url in (f"http://localhost:{port}\\@127.0.0.1/box.html", f"http://user@127.0.0.1:{port}/box.html",
                f"http://127.1:{port}/box.html", f"http://2130706433:{port}/box.html",
                f"http://localhost:{port}/box.html"):
        status, body = service.request("POST", "/frames", {"url": url, "width": 320, "height": 200})
        assert status == 400 and body["error"] == "bad-message", (url, status, body)
    assert _Pages.off_list == []


@pytest.mark.parametrize("path", ["/script", "/popup", "/redirect"])
async def test_a_pages_own_navigation_off_the_list_is_blocked(service: Service, base: str, path: str) -> None:
    before = len(_Pages.off_list)
    frame = service.create_frame(f"{base}{path}", width=320, height=200, dpr=1)
    viewer = await StreamClient.connect(service)
    await viewer.send({"type": "watch", "frame": frame})
    if path == "/popup":  # a person's click on a link that opens a new tab
        await service.wait_state_async(frame, "live")
        click = {"seq": 1, "events": [{"kind": "mouse", "action": "down", "x": 100, "y": 100, "button": "left"},
                                      {"kind": "mouse", "action": "up", "x": 100, "y": 100, "button": "left"}]}
        status, body = await asyncio.to_thread(service.request, "POST", f"/frames/{frame}/input", click,
                                               service.token("drive"))
        assert status == 200, body
    if path != "/redirect":  # (a redirect of the first load fails the load itself: the frame says so)
        refused = await viewer.next_text("error", timeout=30.0)
        assert refused["code"] == "url-not-allowed" and "FRAMESTREAM_URL_ALLOW_HOSTS" in refused["message"], refused
    else:
        state = await service.wait_state_async(frame, "error")
        assert "ERR_BLOCKED_BY_CLIENT" in str(state["message"]), state
    described = (await asyncio.to_thread(service.get, f"/frames/{frame}"))[1]
    assert "localhost" not in described["url"], described
    assert _Pages.off_list[before:] == [], f"requests reached the host off the list: {_Pages.off_list[before:]}"
    await viewer.close()


async def test_the_services_own_port_is_not_a_frames_to_open(service: Service, base: str) -> None:
    """Issue 32, #1: no loopback port the service owns is a frame's (DevTools has none now; the service's own
    serves only its /web/ files to frames): neither as the frame's URL nor by the page's own navigation."""
    own = f"http://127.0.0.1:{service.port}"
    for url in (f"{own}/metrics", f"{own}/", f"{own}/frames", f"http://localhost:{service.port}/healthz"):
        status, body = service.request("POST", "/frames", {"url": url, "width": 320, "height": 200})
        assert status == 400 and body["error"] == "bad-message", (url, body)
    frame = service.create_frame(f"{base}/own?{service.port}", width=320, height=200, dpr=1)
    viewer = await StreamClient.connect(service)
    await viewer.send({"type": "watch", "frame": frame})
    refused = await viewer.next_text("error", timeout=30.0)
    assert refused["code"] == "url-not-allowed" and "own port" in refused["message"], refused
    await viewer.close()
