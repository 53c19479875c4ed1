# The commands the README gives: `make demo`, `make test`, `make bench`.
# Everything they need is installed from here (a virtual environment from PyPI,
# and Debian's Chromium for the browser tests when it is missing).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: demo test bench install browser migrate clean

install: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# The CPU build of torch first: with it in place no other requirement can pull a CUDA build.
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -r requirements.txt -r requirements-dev.txt
	@touch $(STAMP)

# Browser tests drive Debian's Chromium with Playwright (never `playwright install`).
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = "0" ]; then \
	    echo "Installing chromium and chromium-driver from Debian's packages"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; \
	  else \
	    echo "Chromium missing: sudo apt-get install chromium chromium-driver (browser tests will be skipped)"; \
	  fi; \
	fi

migrate: install
	DEBUG=1 $(BIN)/python manage.py migrate --noinput

demo: install migrate
	DEBUG=1 $(BIN)/python manage.py load_demo
	@echo "Serving on http://$(HOST):$(PORT)/  (Ctrl-C to stop)"
	DEBUG=1 $(BIN)/python manage.py runserver $(HOST):$(PORT)

test: install browser
	$(BIN)/python -m pytest

bench: install
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) var .pytest_cache
