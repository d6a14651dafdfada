# One entry point per task. `make test` builds .venv from nothing, installs, lints, type-checks and
# runs the whole suite; `make check` is the quick edit-test loop (lint, types, the fast tests);
# `make run` opens the app on a demo store with only what the app needs installed; `make bench`
# prints the performance figures quoted in docs/benchmarks.md.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
RUNTIME_STAMP := $(VENV)/.installed-runtime
# pytest-xdist workers: the tests mostly wait (terminals, servers, debounces), so four pay on two cores.
JOBS ?= 4

INTEROP := tests/interop

.PHONY: agents-heavy test check lint typecheck pytest interop agents bench fuzz run screenshot snapshots vectors clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# What the app needs to run (the runtime dependencies), and nothing else.
$(RUNTIME_STAMP): pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -e .
	touch $(RUNTIME_STAMP)

# Everything the tests, the benchmarks and the fuzzer use (the dev extra).
$(STAMP): pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP) $(RUNTIME_STAMP)

test: lint typecheck pytest

# The edit-test loop: ruff, mypy and every test but the slow kinds (tmux, browser, PostgreSQL,
# interop, fuzz, snapshots, the wheel, the long workloads; tests/conftest.py marks them).
check: lint typecheck
	$(BIN)/pytest -q -n $(JOBS) --dist worksteal -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

# Everything in parallel but the real terminal and the browser, which then run alone: what they
# measure (a key to a painted screen) is the terminal's own timing.
pytest: $(STAMP)
	$(MAKE) --no-print-directory -j6 interop agents
	$(BIN)/pytest -n $(JOBS) --dist worksteal -m "not (tmux or browser)" --durations=12
	$(BIN)/pytest -m "tmux or browser" --durations=5

# The real DeepSeek Harness packages, the agents the interop tests run, and a Node 22 binary, all
# from the npm registry, at the versions the lock file pins. Without npm those tests skip, unless
# SESSIONREF_REQUIRE_INTEROP=1. `npm ci` refuses a lock file that lacks another platform's optional
# binary (opencode-darwin-*, a clipboard addon of Qwen Code's), which a registry mirror may not
# carry; `npm install` then installs the same locked versions and skips what this platform never uses.
$(INTEROP)/node_modules/.installed: $(INTEROP)/package.json $(INTEROP)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		cd $(INTEROP) && { npm ci --ignore-scripts --no-audit --no-fund --loglevel=error 2>/dev/null \
			|| npm install --ignore-scripts --no-audit --no-fund --loglevel=error --no-save; } \
		&& touch node_modules/.installed; \
	else echo "npm not found: the interop tests will be skipped"; fi

# An agent whose dependencies must not meet the others' (nanocoder's React) has a folder of its own,
# tests/interop/alone/<agent>, installed the same way; a package whose own dependencies the registry
# lacks (Letta Code's) is named in the folder's `packed` file and unpacked into node_modules as npm
# packs it, beside the dependencies it does load.
ALONE := $(patsubst %/package.json,%/node_modules/.installed,$(wildcard $(INTEROP)/alone/*/package.json))
$(INTEROP)/alone/%/node_modules/.installed: $(INTEROP)/alone/%/package.json $(INTEROP)/alone/%/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		cd $(INTEROP)/alone/$* && { npm ci --ignore-scripts --no-audit --no-fund --loglevel=error 2>/dev/null \
			|| npm install --ignore-scripts --no-audit --no-fund --loglevel=error --no-save; } \
		&& { [ ! -f packed ] || while read -r spec; do \
			name=$${spec%@*}; mkdir -p node_modules/$$name \
			&& tarball=$$(npm pack --silent --pack-destination node_modules "$$spec") \
			&& tar xzf node_modules/$$tarball --strip-components=1 -C node_modules/$$name \
			&& rm node_modules/$$tarball || exit 1; \
		done < packed; } \
		&& touch node_modules/.installed; \
	else echo "npm not found: the interop tests will be skipped"; fi

interop: $(INTEROP)/node_modules/.installed $(ALONE)

# The agents published on PyPI that the interop tests run (tests/interop/python/<agent>.txt, pinned),
# each in a virtualenv of its own (their dependencies are not ours), installed with uv, with the
# Python its file asks for (tests/interop/python/interpreter).
AGENT_VENVS := $(patsubst $(INTEROP)/python/%.txt,$(INTEROP)/python/.venv-%/.installed,$(wildcard $(INTEROP)/python/*.txt))
$(INTEROP)/python/.venv-%/.installed: $(INTEROP)/python/%.txt | $(STAMP)
	rm -rf $(INTEROP)/python/.venv-$*
	$(BIN)/uv venv --quiet --python "$$($(INTEROP)/python/interpreter $< $(PYTHON))" $(INTEROP)/python/.venv-$*
	VIRTUAL_ENV=$(abspath $(INTEROP)/python/.venv-$*) $(BIN)/uv pip install --quiet -r $<
	touch $@

agents: $(AGENT_VENVS)

# The agents too large to install on every test run (tests/interop/python/heavy/<agent>.txt): their
# tests run when they are installed; the files they wrote are kept as test data.
HEAVY_VENVS := $(patsubst $(INTEROP)/python/heavy/%.txt,$(INTEROP)/python/.venv-%/.installed,$(wildcard $(INTEROP)/python/heavy/*.txt))
$(INTEROP)/python/.venv-%/.installed: $(INTEROP)/python/heavy/%.txt | $(STAMP)
	rm -rf $(INTEROP)/python/.venv-$*
	$(BIN)/uv venv --quiet --python "$$($(INTEROP)/python/interpreter $< $(PYTHON))" $(INTEROP)/python/.venv-$*
	VIRTUAL_ENV=$(abspath $(INTEROP)/python/.venv-$*) $(BIN)/uv pip install --quiet -r $<
	touch $@

agents-heavy: $(HEAVY_VENVS)

# `make bench ONLY=retrieval` runs one group (python -m bench --only GROUP).
bench: $(STAMP)
	$(BIN)/python -m bench $(if $(ONLY),--only $(ONLY))

# The long fuzzing profile: 100,000 inputs under libFuzzer across every target, then the counts.
# (make test runs the bounded, seeded profile as tests/test_fuzz.py.)
fuzz: $(STAMP)
	$(BIN)/python -m fuzz

run: $(RUNTIME_STAMP)
	$(BIN)/sessionref --demo

# Re-record the SVG snapshots (look at every picture before committing), then the README's PNG.
snapshots: $(STAMP)
	$(BIN)/pytest tests/test_snapshots.py --snapshot-update

# The README picture: an SVG snapshot rendered by headless Chromium (Debian's `chromium` package).
screenshot: $(STAMP)
	$(BIN)/python docs/render_screenshot.py "snapshots/test_prompt_with_chips_under_a_dark_and_a_light_theme[textual-dark].svg" docs/screenshot.png --scale 1

# Regenerate the JavaScript parity vectors (needs Node.js).
vectors:
	node tests/js/make_vectors.mjs > tests/js/vectors.json

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis $(INTEROP)/node_modules build dist *.egg-info
