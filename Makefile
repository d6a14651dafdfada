# One entry point per task. `make test` builds .venv from nothing, installs, lints, type-checks and
# runs the whole suite; `make bench` prints the performance figures quoted in the README.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: test lint typecheck pytest bench run vectors clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

test: lint typecheck pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/pytest

bench: $(STAMP)
	$(BIN)/python -m bench

run: $(STAMP)
	$(BIN)/sessionref --demo

# Regenerate the JavaScript parity vectors (needs Node.js).
vectors:
	node tests/js/make_vectors.mjs > tests/js/vectors.json

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
