"""The C part of framestream, beside pyproject.toml (which holds everything else): the per-picture work of pictures of
copies that numpy's per-call cost made slow (docs/performance.md). Plain C against the CPython API, built by pip with
the machine's C compiler and Python headers (`make venv`). In setup.py: pyproject's `[tool.setuptools]
ext-modules` is still experimental (setuptools warns on every build)."""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension(name, [source], extra_compile_args=["-O2", "-std=c11"]) for name, source in (
        ("framestream.core._slices", "framestream/core/_slices.c"),
        ("framestream.media._blocks", "framestream/media/_blocks.c"),
    )
])
