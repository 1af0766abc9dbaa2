# One command each: `make demo` runs the main job on the embedded default,
# `make test` runs the whole suite (real vLLM scheduler, real DuckDB, real
# Alertmanager, headless Chromium). Both set themselves up from a fresh clone.
VENV    ?= .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed-$(shell sha1sum pyproject.toml | cut -c1-12)
export SHADOWD_SHARED ?= $(abspath ../shared)
export HF_HUB_OFFLINE := 1

.PHONY: setup system-deps lint demo test bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[vllm,test]'
	touch $(STAMP)

setup: $(STAMP)

# Services and tools the tests use for real (Alertmanager, headless Chromium for the HTML
# report, systemd-analyze for the unit); installed once, as root, from Debian.
SYSTEM_PACKAGES := prometheus-alertmanager chromium systemd
system-deps:
	@command -v prometheus-alertmanager >/dev/null && command -v chromium >/dev/null && \
	  command -v systemd-analyze >/dev/null || { apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(SYSTEM_PACKAGES); }

demo: setup
	$(VENV)/bin/shadowd demo

# The layout rules: import contracts (pyproject.toml [tool.importlinter]) and ruff lint + format.
lint: setup
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

test: setup system-deps lint
	$(PY) -m pytest

bench: setup
	$(PY) -m benchmarks.run

clean:
	rm -rf $(VENV) build *.egg-info
