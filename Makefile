# Entry points: `make demo`, `make check` and `make fuzz`. Each creates .venv on first use.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo check lit pytest lint fuzz conformance zoo bench-zoo e2e clean

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found (accel needs Python 3.11)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py

check: $(STAMP) lint lit pytest

lint: $(STAMP)
	$(BIN)/ruff check $(wildcard python dialects passes tools test benchmarks examples)

lit: $(STAMP)
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/lit -sv test

pytest: $(STAMP)
	$(BIN)/python -m pytest -q -ra -m "not long" test/unit

# accel-opt against upstream MLIR test files (test/Conformance): a table of RUN lines passed
# by accel-opt, the bare bindings and the bundled mlir-opt; fails on any regression.
conformance: $(STAMP)
	$(BIN)/python test/Conformance/run_conformance.py --json conformance.json

# The whole model zoo (docs/model-zoo.md): every model of test/unit/test_zoo.py (make check
# runs a subset) and the other `long` tests.
zoo: $(STAMP)
	$(BIN)/python -m pytest -q -ra -m "long or not long" test/unit/test_zoo.py
	$(BIN)/python -m pytest -q -ra -m long test/unit --ignore=test/unit/test_zoo.py

# The zoo benchmark at published sizes (accel vs eager, inductor, onnxruntime; 1 thread and
# all cores): table on stdout, benchmarks/results/zoo.json. Needs the `bench` extra.
bench-zoo: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[bench]'
	$(BIN)/python benchmarks/zoo.py

# torch-mlir's e2e suite (all 1828 tests) through accel (compile_mlir and accel.compile) and
# torch-mlir's RefBackend: per-stage counts and failures by reason, e2e.json (docs/e2e.md).
# E2E_SUITE_DIR: a torch-mlir checkout at the pinned commit; unset, test/e2e/get_suite.sh
# fetches one into ~/.cache/accel (or says it cannot). `make check` runs a fixed 100-test
# sample of the suite instead (test/unit/test_e2e_sample.py).
e2e: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[e2e]'
	suite="$${E2E_SUITE_DIR:-}"; [ -n "$$suite" ] || suite=$$(test/e2e/get_suite.sh) || exit 1; \
	$(BIN)/python test/e2e/run_e2e.py --suite "$$suite" --json e2e.json

# The fuzz harness (docs/fuzzing.md): FUZZ_COUNT inputs, table on stdout, report and
# replayable defects in fuzz-out/. `make check` runs a 300-input slice of it (pytest).
FUZZ_COUNT ?= 10000
FUZZ_SEED  ?= 1
fuzz: $(STAMP)
	$(BIN)/python test/fuzz/fuzz.py --count $(FUZZ_COUNT) --seed $(FUZZ_SEED) --out fuzz-out

clean:
	rm -rf $(VENV) build *.egg-info python/*.egg-info fuzz-out
