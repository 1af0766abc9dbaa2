"""shadowd benchmarks: ``python -m benchmarks.run`` writes docs/benchmarks.json and docs/benchmarks.md."""
