# Two commands set everything up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
# make run PORT=8001 serves the demo on another port.
PORT   ?= 8000
FLEET_PORTS ?= 8001,8002
EDGE_PORT ?= 8080
FLEET_ROOT ?= var/fleet

.PHONY: install lock run fleet test lint fmt bench bench-gateway bench-edge bench-fleet clean

# Every package at the version constraints.txt pins: a later release changes nothing until
# `make lock` moves the pins (docs/getting-started.md#versions).
$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# The newest releases pyproject.toml allows, installed into .venv and pinned in constraints.txt;
# run `make test` before committing the new pins.
lock: $(STAMP)
	$(PY) -m pip install -q --upgrade --upgrade-strategy eager -e '.[test]'
	{ grep '^#' constraints.txt; $(PY) -m pip freeze --exclude-editable; } > constraints.txt.new
	mv constraints.txt.new constraints.txt
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m demo --serve --port $(PORT)

# Redis, the store, the operator's home, two gateway hosts and the edge in front of them on one
# machine (docs/operating/fleet.md#make-fleet); Ctrl-C stops every process it started.
# make fleet FLEET_PORTS=9001,9002 EDGE_PORT=9080
fleet: $(STAMP)
	bash tests/fleet/install-redis.sh
	bash tests/edge/install-nginx.sh
	$(PY) -m builder.fleet --root $(FLEET_ROOT) --ports $(FLEET_PORTS) --edge-port $(EDGE_PORT)

test: $(STAMP)
	bash tests/browser/install-chromium.sh
	bash tests/fleet/install-redis.sh
	bash tests/edge/install-nginx.sh
	bash tests/interop/install-go.sh
	$(PY) -m pytest -q -p no:cacheprovider

lint: $(STAMP)
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

fmt: $(STAMP)
	$(VENV)/bin/ruff check --fix . && $(VENV)/bin/ruff format .

bench: bench-gateway bench-edge bench-fleet
	$(PY) -m bench

# wrk and nginx from Debian's packages (installed if missing); the gateway beside nginx.
bench-gateway: $(STAMP)
	sh bench/install-tools.sh && $(PY) -m bench.gateway_load

# The shipped edge (nginx, `fxev edge config`) in front of the gateway, beside nginx's files
# and the gateway alone, at 32 and 64 connections.
bench-edge: $(STAMP)
	sh bench/install-tools.sh && $(PY) -m bench.edge_load

# One gateway in fleet mode (Redis) against the same gateway on one host, in one run.
bench-fleet: $(STAMP)
	sh bench/install-tools.sh && bash tests/fleet/install-redis.sh && $(PY) -m bench.fleet_gateway

# The demo's home and its tree go together (a tree belongs to one registry); site_out's
# tracked .gitignore stays.
clean:
	rm -rf $(VENV) var .site_out.rebuild .site_out.rebuild.old
	[ ! -d site_out ] || find site_out -mindepth 1 -maxdepth 1 ! -name .gitignore -exec rm -rf {} +
