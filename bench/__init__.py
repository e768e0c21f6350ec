"""ember vs torch benchmarks: `make bench` or `python -m bench`."""
