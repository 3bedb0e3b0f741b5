# The two commands: `make demo` and `make test`. Both install into .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install test lint demo peer bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

# Pi (the reference peer) from the npm registry, into .peer/ (not committed). Needs node.
peer:
	@if command -v node >/dev/null 2>&1; then \
	  test -f .peer/node_modules/@mariozechner/pi-coding-agent/package.json || \
	  npm install --prefix .peer --no-audit --no-fund --silent @mariozechner/pi-coding-agent@0.73.1; \
	else echo "!!! node not found: the Pi conformance tests will be SKIPPED !!!"; fi

lint: install
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

test: install peer lint
	$(BIN)/pytest -q

# The main job: a throwaway gateway with the deterministic provider, all four disruptions,
# the signed report verified, and the badge.
demo: install
	$(BIN)/kurahi continuity run --throwaway --disruption all --out continuity-out
	$(BIN)/kurahi continuity verify continuity-out/continuity-report.json
	$(BIN)/kurahi continuity badge continuity-out/continuity-report.json

bench: install peer
	$(BIN)/python benchmarks/open_project.py
	$(BIN)/python benchmarks/stitch_check.py
	$(BIN)/python benchmarks/append_rate.py
	$(BIN)/python benchmarks/crash_append.py --rounds 200
	$(BIN)/python benchmarks/turn_rate.py
	$(BIN)/python benchmarks/crash_campaigns.py runtime --turns 1000
	$(BIN)/python benchmarks/crash_campaigns.py gateway --kills 100
	$(BIN)/python benchmarks/manifest_hash.py
	$(BIN)/python benchmarks/gateway_load.py
	$(BIN)/python benchmarks/audit_verify.py
	$(BIN)/python benchmarks/provenance.py

clean:
	rm -rf $(VENV) .peer .pytest_cache .mypy_cache .ruff_cache build src/kurahi/store/_native*.so
