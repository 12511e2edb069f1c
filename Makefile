# framestream: `make run` starts the service with a demo frame; `make test` runs the whole suite.
# Both install what is missing first (Debian packages as root, a .venv with the package).

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 7682
# What the service runs: the frames' browser and displays, xrandr (their refresh rate) and fonts for pages.
# gcc, libc6-dev and python3-dev build the package's C part (setup.py); `Python.h` stands for the headers of $(PYTHON).
RUN_PACKAGES := chromium xvfb x11-xserver-utils fonts-dejavu-core fonts-noto-color-emoji fonts-noto-cjk \
	gcc libc6-dev python3-dev
RUN_BINARIES := chromium Xvfb xrandr gcc Python.h
# What the tests and benchmarks add. firefox-esr: the viewer's second browser (tests/web/test_viewer_firefox.py);
# its WebCodecs decodes H.264 with Debian's libavcodec, which ffmpeg brings. iproute2: link limits; nodejs: the
# npm package's tests.
TEST_PACKAGES := firefox-esr ffmpeg x11-utils iproute2 nodejs
TEST_BINARIES := firefox-esr ffmpeg xdpyinfo ip node
STAMP := $(VENV)/.installed

.PHONY: run test bench soak lint typecheck audit lock system-deps run-deps venv clean

# $(1): binaries that must be on PATH; $(2): the Debian packages to install when one is not.
define install_missing
	@missing=""; \
	for bin in $(1); do \
	  if [ "$$bin" = Python.h ]; then $(PYTHON) -c "$$HAS_PYTHON_H" || missing="$$missing $$bin"; \
	  else command -v $$bin >/dev/null 2>&1 || missing="$$missing $$bin"; fi; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages for:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $(2) >/dev/null; \
	fi
endef

export HAS_PYTHON_H := import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))

run-deps:
	$(call install_missing,$(RUN_BINARIES),$(RUN_PACKAGES))

system-deps:
	$(call install_missing,$(RUN_BINARIES) $(TEST_BINARIES),$(RUN_PACKAGES) $(TEST_PACKAGES))

# Every dependency is pinned with its hashes in requirements-dev.lock (requirements.lock: the service alone, for
# images); the package itself goes in on top without resolving anything again.
# The lock's own pip goes in first: the pip a Python 3.11 venv starts with (23.2) takes an extra's requirement
# (pip-audit's CacheControl[filecache]>=0.13) to the newest release, not the pinned one, and refuses the lock as
# soon as a newer release is out.
$(STAMP): pyproject.toml setup.py requirements-dev.lock $(wildcard framestream/*/_*.c)
	$(PYTHON) -m venv $(VENV)
	sed -n '/^pip==/,/^    #/p' requirements-dev.lock | grep -v '^ *#' > $(VENV)/pip.lock
	$(PY) -m pip install -q --require-hashes --no-deps -r $(VENV)/pip.lock
	$(PY) -m pip install -q --require-hashes -r requirements-dev.lock
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	touch $(STAMP)

venv: $(STAMP)

# Without TERMINAL_AUTH_SECRET the demo runs with --insecure-dev, which says so loudly. The demo frame is a page
# the service serves itself, so nothing else needs to run.
run: run-deps venv
	@mkdir -p .state
	FRAMESTREAM_STATE_DIR=$${FRAMESTREAM_STATE_DIR:-$(CURDIR)/.state} exec $(PY) -m framestream serve --port $(PORT) \
	  $$( [ -n "$$TERMINAL_AUTH_SECRET" ] || echo --insecure-dev ) \
	  --frame http://127.0.0.1:$(PORT)/web/demo/index.html@1280x800

lint: venv
	$(VENV)/bin/ruff check framestream tests benchmarks

typecheck: venv
	$(VENV)/bin/mypy

# The whole suite, on two workers (pytest-xdist: the tests wait for pictures, pages and links, so two at a time
# take about a quarter less time on two cores; tests/beside.py runs the network-namespace runs once). A module's
# tests stay together, in their order, with one service (`loadfile`). It lists its 15 slowest tests, so the log
# shows where its 15-minute budget goes. `TEST_WORKERS=0` runs it in line.
TEST_WORKERS ?= 2
test: system-deps venv
	$(VENV)/bin/ruff check framestream tests benchmarks
	$(VENV)/bin/mypy
	$(VENV)/bin/pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile --durations=15

# Known vulnerabilities in the pinned dependencies (pip-audit; fails when one is found, and says plainly which
# packages it could not look up). AUDIT_STRICT=1 fails on those too.
audit: venv
	$(PY) .ci/audit

# Re-pin after changing dependencies in pyproject.toml (needs the package index).
LOCK_FLAGS := -q --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url --no-emit-find-links
lock: venv
	$(VENV)/bin/pip-compile $(LOCK_FLAGS) -o requirements.lock pyproject.toml
	$(VENV)/bin/pip-compile $(LOCK_FLAGS) --extra dev -o requirements-dev.lock pyproject.toml

# Runs go to benchmarks/results/local/ (ignored); RECORD=1 writes the run into benchmarks/results/, to commit with
# docs/performance.md when the page quotes it.
bench: system-deps venv
	$(PY) -m benchmarks.run $(if $(RECORD),--record)

soak: system-deps venv
	$(PY) -m benchmarks.run --only soak $(if $(RECORD),--record)

clean:
	rm -rf $(VENV) .state .mypy_cache .ruff_cache
