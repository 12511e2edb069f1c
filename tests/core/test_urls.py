"""The URL rule (core/urls.py): refused unless Python and a WHATWG parser (Chromium) read the same host."""

from __future__ import annotations

import pytest

from framestream.core.urls import check_url, document_refusal, host_allowed

ALLOW = ("127.0.0.1", "example.com", "[::1]")


@pytest.mark.parametrize(("url", "canonical"), [
    ("https://example.com/x", "https://example.com/x"),
    ("http://127.0.0.1:3000/a?b=c#d", "http://127.0.0.1:3000/a?b=c#d"),
    ("HTTP://Example.COM/Path", "http://example.com/Path"),
    ("http://[::1]:8080/", "http://[::1]:8080/"),
    ("http://[0:0:0:0:0:0:0:1]/", "http://[::1]/"),
])
def test_canonical_urls_pass_as_written_with_scheme_and_host_lowered(url: str, canonical: str) -> None:
    assert check_url(url, ALLOW) == canonical


@pytest.mark.parametrize("url", [
    "http://localhost:8712\\@127.0.0.1/",  # issue 32: Python read 127.0.0.1, Chromium loads localhost
    "http://example.com\\.evil.test/",
    "http://user:pw@127.0.0.1/", "http://127.0.0.1@evil.test/",
    "http://127.1/", "http://0x7f.0.0.1/", "http://2130706433/", "http://0177.0.0.1/", "http://127.000.0.1/",
    "http://exam%70le.com/", "http://example.com./", "http://éxample.com/", "http://exa mple.com/",
    "http://example.com\t/", "http:/example.com/", "http:example.com", "http://example.com:0/",
    "http://example.com:65536/", "http://example.com:8o/", "http://[::1/", "http://[zz::1]/",
    "file:///etc/passwd", "javascript:alert(1)", "data:text/html,hi", "chrome://settings",
])
def test_urls_a_browser_could_read_otherwise_are_refused(url: str) -> None:
    with pytest.raises(ValueError):
        check_url(url, ALLOW)
    assert not host_allowed(url, ALLOW)


def test_the_allow_list_is_of_canonical_hosts() -> None:
    assert host_allowed("http://EXAMPLE.com/", ALLOW)
    assert not host_allowed("http://evil.test/", ALLOW)
    assert not host_allowed("http://sub.example.com/", ALLOW)
    assert host_allowed("http://anything.test/", ())  # no list: any canonical http(s) host


def test_of_the_services_own_port_only_web_is_a_frames_to_open() -> None:
    assert check_url("http://127.0.0.1:7682/web/demo/index.html", (), 7682)
    for url in ("http://127.0.0.1:7682/metrics", "http://localhost:7682/", "http://[::1]:7682/frames",
                "http://127.0.0.5:7682/ws"):
        with pytest.raises(ValueError, match="own port"):
            check_url(url, (), 7682)
    assert check_url("http://127.0.0.1:7683/metrics", (), 7682)  # another port: someone else's
    assert document_refusal("http://127.0.0.1:7682/metrics", (), 7682) is not None
    assert document_refusal("http://127.0.0.1:7682/web/app.css", (), 7682) is None
    assert document_refusal("http://my_host.test/", (), 7682) is None  # (browsers allow underscores)
    assert document_refusal("about:blank", ("example.com",), 7682) is None
    assert document_refusal("http://evil.test/", ("example.com",), None) is not None
