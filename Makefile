# agenttrail — every target sets up what it needs on a fresh machine.
#   make demo   run the offline example agent, analyze its bundle, write the HTML report
#   make test   the whole test suite (installs the test-only system parts it needs)
#   make lint   ruff + pyright (strict) on src/
#   make bench  benchmarks, as ratios against baselines measured in the same run

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
DEMO_WS := build/demo-workspace

.PHONY: venv test-deps demo test test-fast lint bench dashboards collector clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

demo: venv
	$(PY) examples/custom_harness.py --workspace $(DEMO_WS)
	@echo
	$(VENV)/bin/agenttrail analyze $(DEMO_WS)/_debug
	@echo
	$(VENV)/bin/agenttrail report $(DEMO_WS)/_debug -o build/report.html
	@echo
	@echo "bundle:   $(CURDIR)/$(DEMO_WS)/_debug"
	@echo "findings: agenttrail analyze $(DEMO_WS)/_debug --format json"
	@echo "report:   $(CURDIR)/build/report.html"

# System parts the tests use for real (collector, Prometheus, Chromium, PostgreSQL): each
# scripts/install-*.sh is idempotent and cheap when everything is already there.
test-deps:
	@for s in scripts/install-*.sh; do [ -f "$$s" ] && bash "$$s" || exit 1; done

test: venv test-deps
	$(PY) -m pytest

test-fast: venv
	$(PY) -m pytest -m "not stack and not browser and not slow"

lint: venv
	$(VENV)/bin/ruff check src tests examples bench
	$(VENV)/bin/pyright src

bench: venv
	$(PY) bench/run.py

# Regenerate the committed Grafana dashboards from code (tests fail when they disagree).
dashboards: venv
	$(PY) -m agenttrail.grafana.dashboards --write dashboards/

# Build (or reuse the cached) OpenTelemetry Collector the stack tests run.
collector:
	bash scripts/build-collector.sh

clean:
	rm -rf build .pytest_cache
