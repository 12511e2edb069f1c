"""framestream's benchmarks: `make bench` runs `python -m benchmarks.run` (see benchmarks/run.py)."""
