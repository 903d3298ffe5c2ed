# mechgen: generate, compile, run, test, benchmark. Everything runs in a local virtualenv.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: all install generate demo test bench clean check-generated

all: generate

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# Regenerate the committed kernels of the bundled mechanisms (generator/mechanisms/*.toml).
generate: $(STAMP)
	$(PY) -m generator generate

# The main job: install, generate, compile (cached), simulate a docking capture on the
# bundled Gough-Stewart mechanism; prints a summary, writes plots to results/.
demo: generate
	$(PY) -m runtime --out results

test: $(STAMP)
	$(PY) -m pytest

# Benchmarks (not tests); installs MuJoCo for the race on the parallel mechanisms.
bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,bench]'
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache bench/results results
