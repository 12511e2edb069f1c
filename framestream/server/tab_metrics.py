"""/metrics series for what a frame's pages do: pages, hung pages, dialogs, file choosers, downloads, refusals."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from framestream.frames.frame import Frame

Family = Callable[[str, str, str, list[str]], None]
Line = Callable[[str, float, "dict[str, str] | None"], str]


def tab_families(frames: Iterable[Frame], family: Family, line: Line) -> None:
    frames = list(frames)

    def counted(name: str, key: str, help_text: str, label: str | None = None) -> None:
        samples = []
        for f in frames:
            for (kind, value), n in sorted(f.browsing.counts.items()):
                if kind == key:
                    samples.append(line(name, n, {"frame": f.id, **({label: value} if label else {})}))
        family(name, "counter", help_text, samples)

    family("framestream_pages", "gauge", "Pages of each frame's browser (popups and tabs included).",
           [line("framestream_pages", len(f.browsing.pages or ()), {"frame": f.id}) for f in frames])
    family("framestream_unresponsive_pages", "gauge", "Pages whose script does not answer, per frame.",
           [line("framestream_unresponsive_pages", f.browsing.unresponsive_pages, {"frame": f.id}) for f in frames])
    family("framestream_open_dialogs", "gauge", "JavaScript dialogs waiting for an answer, per frame.",
           [line("framestream_open_dialogs", len(f.browsing.dialogs), {"frame": f.id}) for f in frames])
    counted("framestream_dialogs_total", "dialogs", "JavaScript dialogs opened, by kind.", "kind")
    counted("framestream_dialog_timeouts_total", "dialog-timeouts", "Dialogs dismissed because nobody answered.")
    counted("framestream_file_choosers_total", "file-choosers", "File choosers opened (never a native dialog).")
    counted("framestream_downloads_total", "downloads", "Downloads ended, by state (done, failed).", "state")
    counted("framestream_pages_refused_total", "pages-refused", "Pages closed at once past the page limit.")
    counted("framestream_pages_unresponsive_total", "pages-unresponsive", "Times a page stopped answering.")
    counted("framestream_pages_server_back_total", "pages-server-back",
            "Pages on Chrome's error page, loaded again once their server answered.")


__all__ = ["tab_families"]
