"""Turns a run's results into the printed tables, and checks them against the targets of issues 6 and 7."""

from __future__ import annotations

from typing import Any


def _f(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


HEALTHZ_MS = 50.0  # issue 7: /healthz stays under this while loaded
MARKDOWN = False  # benchmarks.markdown sets it: the same tables as Markdown, for docs/performance.md


def table(header: list[str], rows: list[list[Any]]) -> str:
    cells = [[_f(c) if not isinstance(c, str) else c for c in row] for row in rows]
    if MARKDOWN:
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        lines += ["| " + " | ".join(c.replace("|", "/") for c in r) + " |" for r in cells]
        return "\n".join(lines)
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(header)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
            for r in cells]
    return "\n".join(out)


def _peer_cpu(row: dict[str, Any], name: str) -> tuple[Any, Any, Any]:
    peer = row.get(name, {})
    if "skipped" in peer:
        return "skipped", "-", "-"
    cpu = peer.get("cpu", {})
    return cpu.get(name), cpu.get("chromium"), peer.get("fps")


def _others(row: dict[str, Any]) -> float | None:
    """The most that other processes (not measured, not the benchmark) took during any of the row's windows."""
    values = [row[k]["cpu"].get("others") for k in ("framestream", "ffmpeg", "selkies") if "cpu" in row.get(k, {})]
    present = [v for v in values if v is not None]
    return max(present) if present else None


def size_order(size: str) -> tuple[int, int]:
    """Sort key of a size label ("1280x800@2x (2560x1600)", "640x400", "1280x800@2x, patches"): the default dpr 2
    first, then larger pictures before smaller, as the docs quote them; sorted() keeps the run's order within one."""
    css, _, dpr = size.partition(" ")[0].partition(",")[0].partition("@")
    width, _, height = css.partition("x")
    return -int(dpr.rstrip("x") or 1), -int(width) * int(height)


def _by_size(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: size_order(str(r["size"])))


def cpu_table(rows: list[dict[str, Any]]) -> str:
    header = ["size", "page", "fs svc", "fs chrome", "fs xvfb", "fs fps", "fs kbit/s", "ffmpeg", "ff chrome",
              "ff fps", "selkies", "sk chrome", "sk fps", "sk kbit/s", "fs/ffmpeg", "fs/selkies", "others"]
    out = []
    for r in _by_size(rows):
        fs = r["framestream"]
        ff, ffc, fff = _peer_cpu(r, "ffmpeg")
        sk, skc, skf = _peer_cpu(r, "selkies")
        out.append([r["size"], r["page"], fs["cpu"]["service"], fs["cpu"]["chromium"], fs["cpu"]["xvfb"],
                    _f(fs["stream"]["fps"], 1), _f(fs["stream"]["kbps"], 0), ff, ffc, _f(fff, 1), sk, skc,
                    _f(skf, 1), _f(r.get("selkies", {}).get("kbps"), 0), r.get("ratio_ffmpeg"),
                    r.get("ratio_selkies"), _f(_others(r), 2)])
    return table(header, out)


def per_picture(row: dict[str, Any], name: str) -> tuple[float | None, float | None]:
    """(pictures a second, CPU milliseconds per picture) of one system in one CPU row."""
    if name == "framestream":
        fps, vcpu = row["framestream"]["stream"]["fps"], row["framestream"]["cpu"]["service"]
    else:
        peer = row.get(name, {})
        if "skipped" in peer:
            return None, None
        fps, vcpu = peer.get("fps"), peer.get("cpu", {}).get(name)
    if not fps or vcpu is None:
        return fps, None
    return fps, round(vcpu * 1000 / fps, 2)


def per_picture_table(rows: list[dict[str, Any]]) -> str:
    header = ["size", "fs fps", "fs ms/pic", "ffmpeg fps", "ff ms/pic", "selkies fps", "sk ms/pic",
              "fs/ff per pic", "fs/sk per pic"]
    out = []
    for r in _by_size(rows):
        if r["page"] != "animated":
            continue
        (ffps, fms), (gfps, gms), (sfps, sms) = (per_picture(r, n) for n in ("framestream", "ffmpeg", "selkies"))
        out.append([r["size"], _f(ffps, 1), _f(fms, 2), _f(gfps, 1), _f(gms, 2), _f(sfps, 1), _f(sms, 2),
                    _f(fms / gms if fms and gms else None, 3), _f(fms / sms if fms and sms else None, 3)])
    return table(header, out)


def stream_table(rows: list[dict[str, Any]]) -> str:
    header = ["size", "fps", "drop-free", "kbit/s", "capture->recv p50 ms", "p95 ms", "convert+encode ms/pic",
              "loop thread vCPU", "worker threads vCPU"]
    out = []
    for r in _by_size(rows):
        if r["page"] != "animated":
            continue
        s = r["framestream"]["stream"]
        cpu = r["framestream"]["cpu"]
        c = s.get("capture_to_recv_ms") or {}
        out.append([r["size"], _f(s["fps"], 1), _f(s["drop_free"], 4), _f(s["kbps"], 0), _f(c.get("p50"), 1),
                    _f(c.get("p95"), 1), _f(s.get("encode_ms_per_picture"), 2), cpu.get("loop_thread"),
                    cpu.get("worker_threads")])
    return table(header, out)


def latency_table(rows: list[dict[str, Any]]) -> str:
    header = ["size", "clicks", "missed", "input->picture p50", "p95", "send->capture p50", "capture->recv p50",
              "recv->decoded p50", "input-ack p50"]
    out = []
    for r in _by_size(rows):
        def p(key: str, q: str = "p50", r: dict[str, Any] = r) -> str:
            v = r.get(key) or {}
            return _f(v.get(q), 1)
        out.append([r["size"], r["clicks"], r["missed"], p("input_to_picture_ms"), p("input_to_picture_ms", "p95"),
                    p("send_to_capture_ms"), p("capture_to_recv_ms"), p("recv_to_decoded_ms"), p("input_ack_ms")])
    return table(header, out)


def quality_table(q: dict[str, Any]) -> str:
    header = ["case", "size", "PSNR dB", "SSIM", "kbit/s", "notes"]
    out = []
    for s in _by_size(q.get("still", [])):
        out.append(["still (text page, refined)", s["size"], _f(s["psnr_db"], 2), _f(s["ssim"], 4),
                    _f(s["still_kbps"], 2),
                    f"burst {s['burst_bytes'] // 1024} KiB in {s['pictures']} pictures, "
                    f"first picture {s['first_picture_psnr_db']} dB"])
    for a in _by_size(q.get("animated", [])):
        out.append([f"animated ({a['page']})", a["size"], _f(a["psnr_db"], 2), _f(a["ssim"], 4), _f(a["kbps"], 0),
                    f"{a['matched']}/{a['screenshots']} screenshots matched, min {a['psnr_min_db']} dB"])
    return table(header, out)


def fanout_table(f: dict[str, Any]) -> str:
    header = ["viewers", "service vCPU", "x one viewer", "fps min", "fps mean", "drop-free min", "bench vCPU",
              "others"]
    out = [[lv["viewers"], lv["cpu"]["service"], lv["vs_one_viewer"], _f(lv["fps_min"], 1),
            _f(lv["fps_mean"], 1), lv["drop_free_min"], lv["cpu"]["bench"], _f(lv["cpu"].get("others"), 2)]
           for lv in f["levels"]]
    return table(header, out)


def lifecycle_table(life: dict[str, Any]) -> str:
    rows = []
    for key, label in (("idle_fresh", "idle service, fresh"), ("idle_after", "idle service, after frames")):
        if key in life:
            i = life[key]
            rows.append([label, f"RSS {i['rss_mb']} MB, PSS {i['pss_mb']} MB, {i['vcpu']} vCPU over {i['window_s']} s"])
    if "live_pss" in life:
        p = life["live_pss"]
        rows.append(["live frame memory", f"PSS {p['total_mb']} MB (Chromium {p['chromium_mb']}, Xvfb {p['xvfb_mb']}), "
                     f"USS {p.get('uss_mb')} MB; {p.get('other_chromium_processes')} other Chromium processes ran"])
    if "paused" in life:
        p = life["paused"]
        rows.append(["paused frame", f"PSS {p['total_mb']} MB (Chromium {p['chromium_mb']}, Xvfb {p['xvfb_mb']}), "
                     f"USS {p.get('uss_mb')} MB; {p['vcpu_frame']} vCPU (frame), service {p['vcpu_service']}"])
        busy = ", ".join(f"{k.split(' ', 1)[-1]} {v}" for k, v in list(p.get("busy_processes", {}).items())[:4])
        rows.append(["paused: busiest processes", busy or "none"])
    if "resume_ms" in life:
        rows.append(["resume -> first keyframe", f"median {life['resume_ms']['median']} ms, each "
                     f"{life['resume_ms']['each']}"])
    if "reopen_ms" in life:
        rows.append(["reopen -> first keyframe", f"median {life['reopen_ms']['median']} ms, each "
                     f"{life['reopen_ms']['each']}"])
    for key, label in (("resize_in_place_ms", "resize in place -> first keyframe"),
                       ("resize_relaunch_ms", "resize by a relaunch -> first keyframe")):
        if key in life:
            rows.append([label, f"median {life[key]['median']} ms, each {life[key]['each']}"])
    return table(["lifecycle", "figure"], rows)


MEMORY_RUNS = (("one.live", "one frame, live"), ("one.paused", "one frame, paused"),
               ("six_paused", "six frames, paused"), ("six_live", "six frames, live"),
               ("webgl_off.live", "one frame, live, WebGL off"), ("webgl_off.paused", "one frame, paused, WebGL off"),
               ("webgl_page.live", "webgl.html, live"), ("webgl_page.paused", "webgl.html, paused"),
               ("webgl_off_webgl_page.live", "webgl.html, live, WebGL off"),
               ("webgl_off_webgl_page.paused", "webgl.html, paused, WebGL off"))


def memory_runs(mem: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(label, measurement) of each state the memory section measured, in order."""
    out = []
    for path, label in MEMORY_RUNS:
        node: Any = mem
        for key in path.split("."):
            node = node.get(key) if isinstance(node, dict) else None
        if node:
            out.append((label, node))
    return out


def memory_table(mem: dict[str, Any]) -> str:
    """Totals of each measured state: frames' processes, the service, all, per frame, and /metrics' figure."""
    rows = []
    for label, m in memory_runs(mem):
        rows.append([label, m["processes"], f"{m['frames_pss_mb']} / {m['frames_uss_mb']}",
                     f"{m['service']['pss_mb']} / {m['service']['uss_mb']}",
                     f"{m['total_pss_mb']} / {m['total_uss_mb']}", f"{m['per_frame_pss_mb']} / {m['per_frame_uss_mb']}",
                     _f(m.get("metrics_frames_pss_mb"), 1), m["other_chromium"]])
    out = table(["state", "processes", "frames PSS / USS", "service PSS / USS", "all PSS / USS",
                 "per frame PSS / USS", "/metrics frames PSS", "other Chromium"], rows)
    if "resume_ms" in mem:
        r = mem["resume_ms"]
        out += (f"\n- resume of the six paused frames -> first keyframe: median {_f(r['median'], 1)} ms, "
                f"each {r['each']}")
    if "resume_fresh_ms" in mem:
        r = mem["resume_fresh_ms"]
        out += (f"\n- resume -> first keyframe captured after the watch (the resumed pipeline's): median "
                f"{_f(r['median'], 1)} ms, each {r['each']}")
    return out


def memory_kinds_table(mem: dict[str, Any]) -> str:
    """PSS / USS by process kind in each measured state (count in parentheses when more than one)."""
    runs = memory_runs(mem)
    kinds = sorted({k for _, m in runs for k in m["by_kind"]})
    rows = []
    for label, m in runs:
        cells = []
        for k in kinds:
            v = m["by_kind"].get(k)
            count = f" ({v['n']})" if v and v["n"] > 1 else ""
            cells.append("-" if v is None else f"{v['pss_mb']} / {v['uss_mb']}{count}")
        rows.append([label, *cells, f"{m['service']['pss_mb']} / {m['service']['uss_mb']}"])
    return table(["PSS / USS MB", *kinds, "service"], rows)


def spread_text(s: dict[str, Any] | None, digits: int = 1) -> str:
    return "-" if not s else f"{_f(s['min'], digits)} / {_f(s['median'], digits)} / {_f(s['max'], digits)}"


def pct_text(p: dict[str, Any] | None, digits: int = 1) -> str:
    if not p or not p.get("n"):
        return "-"
    return f"{_f(p['p50'], digits)} / {_f(p['p95'], digits)} / {_f(p['max'], digits)}"


LOAD_RUNS = ("viewers_100", "six_by_ten")


def load_label(r: dict[str, Any]) -> str:
    return f"{r['frames']} frame{'s' if r['frames'] > 1 else ''} x {r['viewers'] // r['frames']} viewers"


def load_table(load: dict[str, Any]) -> str:
    """One row per many-viewer run: delivered fps spread over the viewers, CPU, service RSS, /healthz."""
    header = ["run", "size", "fps/viewer min / med / max", "starved", "drop-free min", "longest gap ms med / max",
              "encoded fps", "svc vCPU", "chrome", "xvfb", "bench", "others", "svc RSS MB",
              "healthz ms p50/p95/max (all)", "(window)"]
    rows = []
    for key in LOAD_RUNS:
        r = load.get(key)
        if not r:
            continue
        c, gap = r["cpu"], r["max_gap_ms"]
        rows.append([load_label(r), r["size"], spread_text(r["fps"]), r["starved"], r["drop_free_min"],
                     f"{_f(gap['median'], 0)} / {_f(gap['max'], 0)}", spread_text(r["encoded_fps"]), c["service"],
                     c["chromium"], c["xvfb"], c["bench"], _f(c.get("others"), 2),
                     f"{r['rss_mb_before']} -> {r['rss_mb']}", pct_text(r["healthz_ms"]),
                     pct_text(r["healthz_window_ms"])])
    return table(header, rows)


def slowest_lines(load: dict[str, Any]) -> list[str]:
    """Where the slowest /healthz answers of each run fell (seconds from its start, and what it was doing)."""
    out = []
    for key in (*LOAD_RUNS, "storm"):
        r = load.get(key)
        if r and r["healthz_ms"].get("slowest"):
            worst = ", ".join(f"{s['ms']:.0f} ms at {s['at_s']} s" + (f" ({s['during']})" if s["during"] else "")
                              for s in r["healthz_ms"]["slowest"])
            out.append(f"- slowest /healthz, {load_label(r) if key in LOAD_RUNS else key}: {worst}")
    return out


def storm_table(s: dict[str, Any]) -> str:
    rows = [[kind, k["n"], k["expected"], ", ".join(f"{why}: {n}" for why, n in k["unexpected"].items()) or "-"]
            for kind, k in s["kinds"].items()]
    return table(["connection", "n", "expected answers", "otherwise"], rows)


def storm_lines(s: dict[str, Any]) -> list[str]:
    g, v, c = s["gauges"], s["viewer"], s["cpu"]

    def trio(name: str) -> str:
        return (f"{g['baseline'].get(name)} -> peak {g['peak'].get(name)} -> {g['after'].get(name)} "
                f"(no viewer {g['no_viewer'].get(name)}, all left {g['all_left'].get(name)})")

    return [f"- {line}" for line in [
        f"{s['connections']} connections, {s['concurrency']} at a time, in {s['seconds']} s ({s['per_second']}/s); "
        f"unexpected answers {s['unexpected']}",
        f"hello -> welcome ms p50/p95/max {pct_text(s['welcome_ms'])}; "
        f"watch -> first picture {pct_text(s['first_picture_ms'])}",
        f"/healthz during the storm ms p50/p95/max {pct_text(s['healthz_ms'])} ({s['healthz_ms']['failed']} failed)",
        f"the watching viewer ({s['size']}): {v['fps_before']} fps before, {v['fps_during']} during, drop-free "
        f"{v['drop_free']}, longest gap {v['max_gap_ms']} ms",
        f"vCPU during: service {c['service']}, Chromium {c['chromium']}, Xvfb {c['xvfb']}, bench {c['bench']}, "
        f"others {c.get('others')}",
        f"connections {trio('framestream_connections')}; settled in {g['settle_s']} s",
        f"tasks {trio('framestream_tasks')}",
        f"fds {trio('process_open_fds')}",
    ]]


def checks_table(checks: list[dict[str, Any]]) -> str:
    return table(["check", "value", "bound", ""],
                 [[c["check"], c["value"], c["bound"] or "-", "OK" if c["ok"] else "NOT OK"] for c in checks])


def soak_table(s: dict[str, Any]) -> str:
    rows = []
    for name, g in s["gauges"].items():
        scale = 2**20 if name.endswith("_bytes") else 1
        label = name.replace("_bytes", " MB") if scale > 1 else name

        def v(x: float | None, scale: float = scale) -> str:
            return "-" if x is None else _f(round(x / scale, 1), 1)

        rows.append([label, v(g["baseline"]), v(g["start"]), v(g["end"]), v(g["max"]), v(g["first_median"]),
                     v(g["last_median"]), v(g["growth"])])
    return table(["gauge", "baseline", "start", "end", "max", "first-minute median", "last-minute median",
                  "growth"], rows)


def _near(at_s: float, events: list[dict[str, Any]], within: float = 2.0) -> str:
    """The pausing frame's state change closest to a moment (polled every 0.5 s), if one was that close."""
    near = [e for e in events if abs(e["at_s"] - at_s) <= within]
    if not near:
        return ""
    e = min(near, key=lambda e: abs(e["at_s"] - at_s))
    return f" (third frame {e['state']} at {e['at_s']} s)"


def soak_lines(s: dict[str, Any]) -> list[str]:
    visits = ", ".join(f"{kind} {k['expected']}/{k['n']}" for kind, k in s["visits"].items())
    c = s["cpu"]
    events = s.get("third_frame_states", [])
    slow = "; ".join(f"{x['ms']:.0f} ms at {x['at_s']} s{_near(x['at_s'], events)}"
                     for x in s["healthz_ms"].get("slowest", []))
    gaps = "; ".join(f"{g['ms']:.0f} ms at {g['at_s']} s{_near(g['at_s'], events)}"
                     for g in s.get("anchor_gaps", []))
    return [f"- {line}" for line in [
        f"slowest /healthz: {slow}",
        f"longest gap of each viewer watching throughout: {gaps}",
        f"connections (expected answers / made): {visits}; unexpected {s['unexpected']}",
        f"watch -> first picture ms p50/p95/max {pct_text(s['first_picture_ms'])}; the {s['anchors']} viewers "
        f"watching throughout {spread_text(s['anchor_fps'])} fps, longest gap {s['anchor_max_gap_ms']} ms",
        f"/healthz ms p50/p95/max {pct_text(s['healthz_ms'])} ({s['healthz_ms']['failed']} failed); "
        f"vCPU service {c['service']}, Chromium {c['chromium']}, Xvfb {c['xvfb']}, bench {c['bench']}, "
        f"others {c.get('others')}",
    ]]


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Every target of issue 6 (and issue 2's capture-to-send) with the measured value: met, behind or n/a."""
    out: list[dict[str, Any]] = []

    def add(name: str, value: Any, target: str, ok: bool | None) -> None:
        out.append({"target": name, "value": value, "goal": target,
                    "status": "n/a" if ok is None else ("met" if ok else "BEHIND")})

    for r in results.get("cpu", []):
        fs = r["framestream"]["cpu"]["service"]
        if r["page"] == "still":
            add(f"still vCPU {r['size']}", fs, "<= 0.02", fs <= 0.02)
            add(f"still vs ffmpeg {r['size']}", r.get("ratio_ffmpeg"), "<= 0.1x",
                None if r.get("ratio_ffmpeg") is None else r["ratio_ffmpeg"] <= 0.1)
        else:
            add(f"animated vs ffmpeg {r['size']}", r.get("ratio_ffmpeg"), "<= 0.5x",
                None if r.get("ratio_ffmpeg") is None else r["ratio_ffmpeg"] <= 0.5)
            add(f"animated vs selkies {r['size']}", r.get("ratio_selkies"), "<= 0.8x",
                None if r.get("ratio_selkies") is None else r["ratio_selkies"] <= 0.8)
            fps = r["framestream"]["stream"]["fps"]
            add(f"animated fps {r['size']}", fps, ">= 29", fps >= 29)
            c2r = (r["framestream"]["stream"].get("capture_to_recv_ms") or {}).get("p50")
            add(f"capture->recv p50 {r['size']}", c2r, "< 15 ms", None if c2r is None else c2r < 15)
    for lat in results.get("latency", []):
        v = lat.get("input_to_picture_ms") or {}
        add(f"input->picture p50 {lat['size']}", v.get("p50"), "<= 50 ms",
            None if v.get("p50") is None else v["p50"] <= 50)
        add(f"input->picture p95 {lat['size']}", v.get("p95"), "<= 100 ms",
            None if v.get("p95") is None else v["p95"] <= 100)
    for row in results.get("agent", []):
        for way, name in (("client", "handoff"), ("viewer", "handoff_viewer")):
            if name not in row:
                continue
            v = row[name].get("take_over_ms") or {}
            add(f"take over -> every watcher's control p95, {way} {row['size']} (issue 27)", v.get("p95"),
                "<= 100 ms", None if v.get("p95") is None else v["p95"] <= 100)
    q = results.get("quality", {})
    for s in q.get("still", []):
        add(f"PSNR still {s['size']}", s["psnr_db"], ">= 40 dB", s["psnr_db"] >= 40)
    for a in q.get("animated", []):
        value = a["psnr_db"]
        add(f"PSNR {a['page']} {a['size']}", value, ">= 32 dB", None if value is None else value >= 32)
    f = results.get("fanout")
    if f and len(f["levels"]) > 1:
        last = f["levels"][-1]
        add(f"{last['viewers']} viewers vs 1", last["vs_one_viewer"], "<= 1.3x",
            None if last["vs_one_viewer"] is None else last["vs_one_viewer"] <= 1.3)
    s = results.get("scale")
    if s:
        add(f"{s['frames']} animated frames fps min", s["fps_min"], ">= 25 (or graceful)", s["fps_min"] >= 25)
    for key in LOAD_RUNS:
        r = results.get("load", {}).get(key)
        if r:
            label = load_label(r)
            h = r["healthz_ms"].get("p95")
            add(f"/healthz p95, {label}", h, f"< {HEALTHZ_MS:g} ms", None if h is None else h < HEALTHZ_MS)
            add(f"starved viewers, {label}", r["starved"], "0 (none below half the median fps)", r["starved"] == 0)
    storm = results.get("load", {}).get("storm")
    if storm:
        h = storm["healthz_ms"].get("p95")
        add("/healthz p95 during the storm", h, f"< {HEALTHZ_MS:g} ms", None if h is None else h < HEALTHZ_MS)
        add("storm: unexpected answers", storm["unexpected"], "0", storm["unexpected"] == 0)
        add("storm: back to baseline", sum(c["ok"] for c in storm["checks"]), f"{len(storm['checks'])} checks",
            all(c["ok"] for c in storm["checks"]))
    for row in (results.get("faults") or {}).get("rows", []):
        add(f"back after a killed {row['victim']} (max)", row["picture_ms_max"], "<= 3000 ms",
            row["picture_ms_max"] <= 3000)
    soak = results.get("soak")
    if soak:
        for c in soak["checks"]:
            add(f"soak: {c['check']}", c["value"], c["bound"], c["ok"])
    life = results.get("lifecycle", {})
    if "resume_ms" in life:
        add("resume -> keyframe ms, median (max)", f"{life['resume_ms']['median']} ({life['resume_ms']['max']})",
            "<= 250 ms", life["resume_ms"]["max"] <= 250)
    if "reopen_ms" in life:
        add("reopen -> keyframe ms, median (max)", f"{life['reopen_ms']['median']} ({life['reopen_ms']['max']})",
            "<= 3000 ms", life["reopen_ms"]["max"] <= 3000)
    if "paused" in life:
        add("paused frame PSS MB", life["paused"]["total_mb"], "<= 250 MB", life["paused"]["total_mb"] <= 250)
        add("paused frame vCPU", life["paused"]["vcpu_frame"], "<= 0.005", life["paused"]["vcpu_frame"] <= 0.005)
    mem = results.get("memory", {})
    one, six = mem.get("one", {}).get("paused"), mem.get("six_paused")
    if one and "idle_service" in mem:
        # The frame's processes and what the service holds because of it (the service with this frame less the
        # same service with none: the media stack it loads for a first frame, the frame's feed); the service's
        # own idle size is there with no frame at all. The whole, service included, is reported beside it.
        share = round(one["service"]["pss_mb"] - mem["idle_service"]["pss_mb"], 1)
        frame_pss = round(one["frames_pss_mb"] + share, 1)
        add("one paused frame with its share of the service, PSS MB (issue 17)",
            f"{frame_pss} ({one['frames_pss_mb']} + {share}; with the idle service {one['total_pss_mb']})",
            "<= 450 MB", frame_pss <= 450)
    elif one:
        add("one paused frame, all PSS MB (issue 17)", one["total_pss_mb"], "<= 450 MB", one["total_pss_mb"] <= 450)
    if six:
        add("six paused frames, PSS MB per frame (issue 17)", six["per_frame_pss_mb"], "<= 250 MB",
            six["per_frame_pss_mb"] <= 250)
        add("six paused frames, all PSS MB (issue 17)", six["total_pss_mb"], "<= 1700 MB", six["total_pss_mb"] <= 1700)
    if "resume_ms" in mem:
        add("resume of six paused frames ms, median (issue 17)", mem["resume_ms"]["median"], "<= 60 ms",
            mem["resume_ms"]["median"] <= 60)
    if "resume_fresh_ms" in mem:
        add("resume -> fresh keyframe ms, max (issue 17)", mem["resume_fresh_ms"]["max"], "<= 250 ms",
            mem["resume_fresh_ms"]["max"] <= 250)
    if "idle_fresh" in life:
        add("idle service RSS MB", life["idle_fresh"]["rss_mb"], "<= 60 MB", life["idle_fresh"]["rss_mb"] <= 60)
        add("idle service vCPU", life["idle_fresh"]["vcpu"], "~0 (<= 0.002)", life["idle_fresh"]["vcpu"] <= 0.002)
    return out


def faults_table(faults: dict[str, Any]) -> str:
    rows = []
    for row in faults["rows"]:
        runs = row["runs"]
        rows.append([row["victim"], len(runs), max(r["told_ms"] for r in runs), max(r["live_ms"] for r in runs),
                     row["picture_ms_median"], row["picture_ms_max"], row["other_fps_min"]])
    return table(["SIGKILL", "runs", "told ms (max)", "live ms (max)", "picture ms (median)", "picture ms (max)",
                  "other frame fps (min)"], rows)


def targets_table(items: list[dict[str, Any]]) -> str:
    return table(["target", "value", "goal", "status"],
                 [[t["target"], t["value"], t["goal"], t["status"]] for t in items])
