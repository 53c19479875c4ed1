# The commands the README gives: `make demo`, `make test`, `make bench` (and `make judges`).
# Everything they need is installed from here (a virtual environment from PyPI,
# and Debian's Chromium for the browser tests when it is missing).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# Two stamps: the platform itself (what `make demo` needs), and everything (automatic judges' torch and
# transformers, test tools) for `make test` and `make bench`.
CORE := $(VENV)/.installed-core
STAMP := $(VENV)/.installed
DOCS := $(VENV)/.installed-docs
HOST ?= 127.0.0.1
PORT ?= 8000
# Where the platform keeps its files (config/settings.py's default; an exported DATA_DIR wins for both).
DATA_DIR ?= var

.PHONY: demo test bench install core judges browser migrate served-at clean docs docs-serve docs-screenshots

install: $(STAMP)
core: $(CORE)

# The platform's dependencies with uv (a faster installer, itself from PyPI), or with pip when uv cannot install
# them. requirements.txt holds no torch, so uv cannot pull a CUDA build of it; the judges stay on pip (below).
# --compile-bytecode as pip does: every later start finds its modules compiled.
$(CORE): requirements.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv && $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -r requirements.txt \
	  || { echo "uv could not install requirements.txt: installing with pip"; \
	       $(BIN)/python -m pip install --quiet --upgrade pip && $(BIN)/python -m pip install --quiet -r requirements.txt; }
	@touch $(CORE)

# The automatic judges' extras (about 4 minutes on a fresh machine): the CPU build of torch first, so
# nothing else can pull a CUDA build.
judges: $(CORE)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -r requirements-judges.txt

$(STAMP): $(CORE) requirements-judges.txt requirements-dev.txt
	$(MAKE) judges
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
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

migrate: core
	DEBUG=1 $(BIN)/python manage.py migrate --noinput

# The address `make demo` serves on, for the links commands print (manage.py invite) when PUBLIC_BASE_URL is
# unset; pages use the address they were asked on (config/baseurl.py).
# HOST=0.0.0.0 (every interface) is no address another machine can open: nothing is written then.
served-at:
	@mkdir -p "$(DATA_DIR)" && case "$(HOST)" in 0.0.0.0|::) rm -f "$(DATA_DIR)/served-at" ;; *) echo "http://$(HOST):$(PORT)" > "$(DATA_DIR)/served-at" ;; esac

# Starts without the automatic judges' torch and transformers (`make judges` adds them; the judges page says so).
demo: core migrate served-at
	DEBUG=1 $(BIN)/python manage.py load_demo
	@echo "Serving on http://$(HOST):$(PORT)/  (Ctrl-C to stop)"
	DEBUG=1 $(BIN)/python manage.py runserver $(HOST):$(PORT)

test: install browser
	$(BIN)/python -m pytest

bench: install
	$(BIN)/python bench/run.py

# The documentation site (mkdocs.yml): reference pages generated from the code at build time, --strict (no broken
# link or anchor, every page in the navigation). The screenshots are committed PNGs (docs/img/), so this needs no browser.
$(DOCS): $(CORE) requirements-docs.txt
	$(BIN)/python -m pip install --quiet -r requirements-docs.txt
	@touch $(DOCS)

docs: $(DOCS)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

docs-serve: $(DOCS)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --strict -a $(HOST):$(PORT)

# Retakes the screenshots (docs/img/*.png) with the browser tests' Playwright and Debian's Chromium.
docs-screenshots: install browser
	DOCS_SCREENSHOTS=docs/img $(BIN)/python -m pytest tests/browser/test_docs_screenshots.py -q

clean:
	rm -rf $(VENV) var .pytest_cache site
