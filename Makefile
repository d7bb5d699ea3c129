# Entry points: `make demo`, `make check` and `make fuzz`. Each creates .venv on first use.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo check lit pytest lint fuzz clean

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
	$(BIN)/python -m pytest -q -ra test/unit

# The fuzz harness (docs/fuzzing.md): FUZZ_COUNT inputs, table on stdout, report and
# replayable defects in fuzz-out/. `make check` runs a 300-input slice of it (pytest).
FUZZ_COUNT ?= 10000
FUZZ_SEED  ?= 1
fuzz: $(STAMP)
	$(BIN)/python test/fuzz/fuzz.py --count $(FUZZ_COUNT) --seed $(FUZZ_SEED) --out fuzz-out

clean:
	rm -rf $(VENV) build *.egg-info python/*.egg-info fuzz-out
