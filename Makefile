# mechgen: generate, compile, run, test, benchmark. Everything runs in a local virtualenv.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
DEMO_SPEC := generator/mechanisms/gough_stewart_docking.toml generator/mechanisms/apas_interface.toml

.PHONY: all install generate demo test bench clean

all: generate

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# Regenerate the committed kernels of every bundled mechanism (generator/mechanisms/*.toml);
# progress per mechanism and kernel on stderr; unchanged files are not rewritten.
generate: $(STAMP)
	$(PY) -m mechgen generate

# The main job: install, generate the demo mechanism and docking interface only if their
# kernels are stale (the committed ones are current), compile (cached), simulate one docking
# of two spacecraft through the bundled Gough-Stewart mechanism, then a Monte-Carlo campaign
# over the initial-contact envelope on all cores; prints summaries, writes results/.
demo: $(STAMP)
	$(PY) -m mechgen generate --if-stale --out generated $(DEMO_SPEC)
	$(PY) -m mechgen dock --out results

# The test files spread over one worker process per logical CPU (pytest-xdist; a file's tests stay
# in one worker, so its module fixtures are built once); TEST_JOBS=0 runs them in this process.
# The workers fill the cores already, so each generates its kernels serially (MECHGEN_JOBS=1).
TEST_JOBS ?= logical
test: $(STAMP)
	MECHGEN_JOBS=1 $(PY) -m pytest -n $(TEST_JOBS) --dist loadfile

# Benchmarks (not tests); installs MuJoCo for the race on the parallel mechanisms.
bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,bench]'
	$(PY) bench/run.py
	$(PY) bench/docking.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache bench/results results
