PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: test venv lint quickstart bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

venv: $(BIN)/python
	$(BIN)/pip install -q -e ".[test]"

lint: venv
	$(BIN)/ruff check ember tests bench examples

test: venv lint
	$(BIN)/python -m pytest -n 2 tests

bench: venv
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(BIN)/python -m bench

clean:
	rm -rf $(VENV) build *.egg-info
