# Entry points: `make demo`, `make check` and `make fuzz`. Each creates .venv on first use.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo check check-memory lit pytest lint fuzz conformance zoo bench-zoo e2e matrix combinations docs clean

$(STAMP): pyproject.toml constraints.txt
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found (accel needs Python 3.11-3.13: make PYTHON=python3.X)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py

check: $(STAMP) lint lit pytest

lint: $(STAMP)
	$(BIN)/ruff check $(wildcard python dialects passes tools test benchmarks examples)

lit: $(STAMP)
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/lit -sv test

# One worker process per core (PYTEST_JOBS=0: in this process); a file's tests stay in one
# worker so the models its fixtures compile are compiled once. A worker that crashes is not
# replaced: the run fails naming the test (xdist's loadfile scheduling hung forever after
# replacing one, pytest-xdist#784).
PYTEST_JOBS ?= auto
XDIST := -n $(PYTEST_JOBS) --dist loadfile --max-worker-restart=0
pytest: $(STAMP)
	$(BIN)/python -m pytest -q -ra -m "not long" $(XDIST) test/unit

# lit and pytest with glibc overwriting every freed block at once (its thread cache off), so
# a pass that reads an erased op's memory crashes on every run, not once in a while (docs/
# passes.md, "Adding a pass"); about 1.2x `make check`'s time.
POISON := MALLOC_PERTURB_=165 GLIBC_TUNABLES=glibc.malloc.tcache_count=0
check-memory: $(STAMP)
	$(POISON) PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/lit -s test
	$(POISON) $(BIN)/python -m pytest -q -ra -m "not long" $(XDIST) test/unit

# accel-opt against upstream MLIR test files (test/Conformance): a table of RUN lines passed
# by accel-opt, the bare bindings and the bundled mlir-opt; fails on any regression.
conformance: $(STAMP)
	$(BIN)/python test/Conformance/run_conformance.py --json conformance.json

# The whole model zoo (docs/model-zoo.md): every model of test/unit/test_zoo.py (make check
# runs a subset) and the other `long` tests.
zoo: $(STAMP)
	$(BIN)/python -m pytest -q -ra -m "long or not long" test/unit/test_zoo.py
	$(BIN)/python -m pytest -q -ra -m long test/unit --ignore=test/unit/test_zoo.py \
	    --ignore=test/unit/test_combinations.py

# The zoo benchmark at published sizes (accel vs eager, inductor, onnxruntime; 1 thread and
# all cores): table on stdout, benchmarks/results/zoo.json. Needs the `bench` extra.
bench-zoo: $(STAMP)
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[bench]'
	$(BIN)/python benchmarks/zoo.py

# torch-mlir's e2e suite (all 1828 tests) through accel (compile_mlir and accel.compile) and
# torch-mlir's RefBackend: per-stage counts and failures by reason on stdout and in
# e2e-report.txt, every result in e2e.json (docs/e2e.md). E2E_SUITE_DIR: a torch-mlir
# checkout (or extracted suite) at the pinned commit; unset, test/e2e/get_suite.sh fetches
# one into ~/.cache/accel (or says it cannot). E2E_SHARDS: worker processes (default: cores).
# `make check` runs a fixed 100-test sample of the suite instead (test/unit/test_e2e_sample.py).
E2E_SHARDS ?= $(shell nproc 2>/dev/null || echo 2)
e2e: $(STAMP)
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[e2e]'
	suite="$${E2E_SUITE_DIR:-}"; [ -n "$$suite" ] || suite=$$(test/e2e/get_suite.sh) || exit 1; \
	$(BIN)/python test/e2e/run_e2e.py --suite "$$suite" --shards $(E2E_SHARDS) \
	    --config accel-mlir accel-torch refbackend --json e2e.json --report e2e-report.txt

# The wheel on every supported interpreter present (python3.11, 3.12, 3.13: PATH or pyenv):
# a fresh venv, an isolated build (no warnings, every file), a full install, a smoke test
# (docs/install.md). Needs the network for the dependencies; an interpreter whose
# dependencies cannot be installed is SKIP, not a failure. MATRIX_PIP_ARGS: e.g. an --index-url.
matrix: $(STAMP)
	$(BIN)/python test/install/matrix.py

# Every target x preset x entry point x AOT off/on x model (docs/matrix.md): runs and matches
# eager or is refused in one documented line. `make check` runs a 10-cell sample of it.
combinations: $(STAMP)
	$(BIN)/python -m pytest -q -ra -m "long or not long" test/unit/test_combinations.py

# Every example of README.md and docs/ run as written (about 5 minutes on 2 cores; also part
# of `make zoo`, as pytest's `long` tests); `make check` checks that each block is run or
# marked `<!-- not run: REASON -->` (test/unit/test_docs_examples.py).
docs: $(STAMP)
	$(BIN)/python -m pytest -q -ra -m "long or not long" test/unit/test_docs_examples.py

# The fuzz harness (docs/fuzzing.md): FUZZ_COUNT inputs, table on stdout, report and
# replayable defects in fuzz-out/. `make check` runs a 300-input slice of it (pytest).
FUZZ_COUNT ?= 10000
FUZZ_SEED  ?= 1
fuzz: $(STAMP)
	$(BIN)/python test/fuzz/fuzz.py --count $(FUZZ_COUNT) --seed $(FUZZ_SEED) --out fuzz-out

clean:
	rm -rf $(VENV) build *.egg-info python/*.egg-info fuzz-out
