"""Frames: each shared page with the processes it owns, and the manager that keeps them within the cap.

- `urls`: which pages a frame may show (`check_url`).
- `events`: what a frame tells its viewers (`StateChanged`, `ControlChanged`), as values, never wire text.
- `runtime`: one launch of Xvfb + Chromium + the capture/encode pipeline, its watchdog, the relaunch budget.
- `frame`: a frame's state, viewers, pause timer and input steps (`Frame.apply_step`).
- `pictures`, `steps`, `recovery`: what a frame owns for its pictures, its drivers' steps, its relaunches.
- `registry`: frames.json, saved off the loop and retried while the state dir cannot be written.
- `manager`: every frame, the cap on running browsers, every background task, shutdown in order.

Import from the modules themselves. The package imports none of them: `events` sits below the recorder and the
feed, which `frame` imports, so a package that pulled in `frame` made importing `events` a cycle.
"""
