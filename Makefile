# One entry point per task. `make test` builds .venv from nothing, installs, lints, type-checks and
# runs the whole suite; `make bench` prints the performance figures quoted in the README.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

INTEROP := tests/interop

.PHONY: test lint typecheck pytest interop bench fuzz run screenshot snapshots vectors clean

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

pytest: $(STAMP) interop
	$(BIN)/pytest

# The real DeepSeek Harness packages (and a Node 22 binary, both from the npm registry) for
# tests/test_interop.py. Without npm those tests skip, unless SESSIONREF_REQUIRE_INTEROP=1.
$(INTEROP)/node_modules/.installed: $(INTEROP)/package.json $(INTEROP)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		cd $(INTEROP) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error && touch node_modules/.installed; \
	else echo "npm not found: tests/test_interop.py will be skipped"; fi

interop: $(INTEROP)/node_modules/.installed

bench: $(STAMP)
	$(BIN)/python -m bench

# The long fuzzing profile: 100,000 inputs under libFuzzer across every target, then the counts.
# (make test runs the bounded, seeded profile as tests/test_fuzz.py.)
fuzz: $(STAMP)
	$(BIN)/python -m fuzz

run: $(STAMP)
	$(BIN)/sessionref --demo

# Re-record the SVG snapshots (look at every picture before committing), then the README's PNG.
snapshots: $(STAMP)
	$(BIN)/pytest tests/test_snapshots.py --snapshot-update

# The README picture: an SVG snapshot rendered by headless Chromium (Debian's `chromium` package).
screenshot: $(STAMP)
	$(BIN)/python docs/render_screenshot.py snapshots/test_mention_with_truncated_compacted_preview.svg docs/screenshot.png --scale 1

# Regenerate the JavaScript parity vectors (needs Node.js).
vectors:
	node tests/js/make_vectors.mjs > tests/js/vectors.json

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis $(INTEROP)/node_modules
