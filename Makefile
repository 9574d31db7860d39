# The two commands of the README: `make demo` (the main job) and `make test` (the whole suite).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: demo demo-countries demo-fast-or-right demo-agent test bench lint aider clean slurm-up slurm-down slurm-status

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The demo needs Ratchet and the examples' data libraries only; the test tools come with `make test`.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[examples]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/python examples/demo.py digits

demo-countries: $(VENV)/.installed
	$(BIN)/python examples/demo.py countries

demo-fast-or-right: $(VENV)/.installed
	$(BIN)/python examples/demo.py fast_or_right

demo-agent: $(VENV)/.installed
	$(BIN)/python examples/demo.py agent

# aider, pinned, in a venv of its own (neither the project's venv nor /usr): the tests that run it as a
# command agent in the sandbox skip without it; .ci/run installs it before `make test`.
# aider-chat 0.86.2 needs Python 3.10 to 3.12 (AIDER_PYTHON: another interpreter when python3 is newer).
AIDER_VERSION := 0.86.2
AIDER_PYTHON  ?= $(PYTHON)
VENV_AIDER    := .venv-aider

$(VENV_AIDER)/.installed-$(AIDER_VERSION):
	@$(AIDER_PYTHON) -c 'import sys; sys.exit(0 if (3, 10) <= sys.version_info[:2] <= (3, 12) else "aider-chat $(AIDER_VERSION) needs Python 3.10 to 3.12, not " + sys.version.split()[0] + ": make aider AIDER_PYTHON=python3.12")'
	rm -rf $(VENV_AIDER)
	$(AIDER_PYTHON) -m venv $(VENV_AIDER)
	$(VENV_AIDER)/bin/python -m pip install --quiet --upgrade pip
	$(VENV_AIDER)/bin/python -m pip install --quiet aider-chat==$(AIDER_VERSION)
	touch $@

aider: $(VENV_AIDER)/.installed-$(AIDER_VERSION)

test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q

bench: $(VENV)/.installed-dev
	$(BIN)/python benchmarks/run_all.py

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/mypy

# A one-node Slurm cluster on this machine (Debian packages, no systemd): the slurm-marked tests
# run against it, and `make test` includes them while it is up.
slurm-up:
	scripts/slurm-cluster.sh up

slurm-down:
	scripts/slurm-cluster.sh down

slurm-status:
	scripts/slurm-cluster.sh status

clean:
	rm -rf $(VENV) $(VENV_AIDER) build src/*.egg-info
