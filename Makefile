# vlcurate: `make run` serves a demo, `make test` runs the whole suite. Both set everything up first.
VENV ?= .venv
BIN := $(VENV)/bin
# setuptools warns on every editable install that a folder named like the package may shadow it:
# here the folder is the package, so the notice is noise on a newcomer's first `make run`.
PIP := PYTHONWARNINGS="ignore:Editable installation" $(BIN)/python -m pip
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
HOST ?= 127.0.0.1
PORT ?= 8000
CHROMIUM ?= /usr/bin/chromium

.PHONY: install run test browser bench clean

# The app alone for `make run` (no multi-GB model environment); tests add the dev and worker extras.
# The client distribution (./client) holds the API models the server imports: installed from here, not PyPI.
$(STAMP): pyproject.toml client/pyproject.toml
	test -x $(BIN)/python || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e ./client -e .
	touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	$(PIP) install -q -e './client[datasets]' -e '.[dev,worker]'
	touch $(TEST_STAMP)

install: $(STAMP)

# The server and a worker (exports, agreement reports, the suggestion kinds whose models are
# installed); Ctrl-C stops both.
run: install
	$(BIN)/vlcurate db upgrade
	$(BIN)/vlcurate demo
	$(BIN)/vlcurate worker & worker=$$!; trap 'kill $$worker 2>/dev/null; wait $$worker' EXIT INT TERM; \
	  $(BIN)/vlcurate serve --host $(HOST) --port $(PORT)

# Browser tests drive the system's Chromium; install it where we may (as root with apt).
browser:
	@test -x $(CHROMIUM) || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "Browser tests need Chromium at $(CHROMIUM): install it (Debian: sudo apt-get install chromium) or set CHROMIUM=/path"; exit 1; fi; }

# Two test processes (pytest-xdist; each test module stays in one): most tests wait on PostgreSQL,
# a server or a browser. TEST_WORKERS=0 runs them in this process.
TEST_WORKERS ?= 2

test: $(TEST_STAMP) browser
	VLCURATE_CHROMIUM=$(CHROMIUM) $(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadscope $(PYTEST_ARGS)

bench: $(TEST_STAMP) browser
	$(BIN)/python bench/import_bench.py
	$(BIN)/python bench/colorswap_bench.py
	$(BIN)/python bench/wikido_bench.py
	$(BIN)/python bench/worker_bench.py
	$(BIN)/python bench/agreement_bench.py
	$(BIN)/python bench/export_bench.py
	$(BIN)/python bench/client_bench.py
	$(BIN)/python bench/draft_bench.py
	VLCURATE_CHROMIUM=$(CHROMIUM) $(BIN)/python bench/next_screen_bench.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
