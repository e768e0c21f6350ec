PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: test venv lint quickstart data bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

venv: $(BIN)/python
	$(BIN)/pip install -q -e ".[test,distributed]"

lint: venv
	$(BIN)/ruff check ember tests bench examples

# data first, so that the quickstart smoke test (skipped without Fashion-MNIST) runs too.
# The distributed tests start 2-4 MPI ranks each: they run after the rest, one at a time, so
# that they neither starve nor are starved by the timing-sensitive tests on a 2-core machine.
# Then the suite once more on another OpenBLAS kernel than the CPU's own: other machines pick
# other kernels, and a tolerance must hold on all of them.
test: venv lint data
	$(BIN)/python -m pytest -n 2 tests --ignore=tests/distributed
	$(BIN)/python -m pytest tests/distributed
	OPENBLAS_CORETYPE=$$($(BIN)/python -m tests.other_kernel) \
		$(BIN)/python -m pytest -n 2 tests --ignore=tests/distributed

# Fashion-MNIST from Debian's package where apt is available; ember's download=True falls back
# to $EMBER_DATASETS and the official mirrors otherwise.
data:
	@if [ ! -d /usr/share/datasets/fashion-mnist ] && command -v apt-get >/dev/null; then \
		(apt-get install -y -q dataset-fashion-mnist || \
		 (apt-get update -q && apt-get install -y -q dataset-fashion-mnist)) || \
		echo "apt could not install dataset-fashion-mnist; ember will try the mirrors"; \
	fi

quickstart: data
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -e .
	$(BIN)/python -m ember.examples.quickstart $(ARGS)

bench: venv
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(BIN)/python -m bench

clean:
	rm -rf $(VENV) build *.egg-info
