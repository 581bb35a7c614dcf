# vlcurate: `make run` serves a demo, `make test` runs the whole suite. Both set everything up first.
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000
CHROMIUM ?= /usr/bin/chromium

.PHONY: install run test browser bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || python3 -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,worker]'
	touch $(STAMP)

install: $(STAMP)

run: install
	$(BIN)/vlcurate db upgrade
	$(BIN)/vlcurate demo
	$(BIN)/vlcurate serve --host $(HOST) --port $(PORT)

# Browser tests drive the system's Chromium; install it where we may (as root with apt).
browser:
	@test -x $(CHROMIUM) || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "Browser tests need Chromium at $(CHROMIUM): install it (Debian: sudo apt-get install chromium) or set CHROMIUM=/path"; exit 1; fi; }

test: install browser
	VLCURATE_CHROMIUM=$(CHROMIUM) $(BIN)/pytest -q $(PYTEST_ARGS)

bench: install
	$(BIN)/python bench/import_bench.py
	$(BIN)/python bench/colorswap_bench.py
	$(BIN)/python bench/wikido_bench.py
	$(BIN)/python bench/worker_bench.py
	$(BIN)/python bench/agreement_bench.py
	$(BIN)/python bench/export_bench.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
