# Two commands set everything up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
# make run PORT=8001 serves the demo on another port.
PORT   ?= 8000

.PHONY: install run test lint fmt bench bench-gateway clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(PY) -m builder.demo --serve --port $(PORT)

test: $(STAMP)
	bash tests/browser/install-chromium.sh
	bash tests/fleet/install-redis.sh
	bash tests/interop/install-go.sh
	$(PY) -m pytest -q -p no:cacheprovider

lint: $(STAMP)
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

fmt: $(STAMP)
	$(VENV)/bin/ruff check --fix . && $(VENV)/bin/ruff format .

bench: bench-gateway
	$(PY) -m bench

# wrk and nginx from Debian's packages (installed if missing); the gateway beside nginx.
bench-gateway: $(STAMP)
	sh bench/install-tools.sh && $(PY) -m bench.gateway_load

# The demo's home and its tree go together (a tree belongs to one registry); site_out's
# tracked .gitignore stays.
clean:
	rm -rf $(VENV) var .site_out.rebuild .site_out.rebuild.old
	[ ! -d site_out ] || find site_out -mindepth 1 -maxdepth 1 ! -name .gitignore -exec rm -rf {} +
