#!/usr/bin/env bash
# Fetches torch-mlir's e2e suite (projects/pt1/python/torch_mlir_e2e_test only) at the commit
# accel's e2e results are for (docs/e2e.md) into DIR, and prints DIR.
#   test/e2e/get_suite.sh [DIR]     (default: ~/.cache/accel/torch-mlir-e2e)
# E2E_SUITE_URL overrides where from (default: GitHub's llvm/torch-mlir); any git URL or
# path works, e.g. a local clone or mirror of torch-mlir that has the commit.
# `make e2e` calls this only when E2E_SUITE_DIR is unset; with a torch-mlir checkout at
# the commit already on disk, set E2E_SUITE_DIR to it instead, or extract the suite from
# a clone with `git --git-dir=CLONE/.git archive COMMIT projects/pt1/python/torch_mlir_e2e_test
# LICENSE | tar -x -C DIR` (docs/e2e.md).
set -euo pipefail
COMMIT=0029fc2e102c6d604696b33eb618116b4957a2e3
URL=${E2E_SUITE_URL:-https://github.com/llvm/torch-mlir.git}
DIR=${1:-${HOME}/.cache/accel/torch-mlir-e2e}
SUITE=projects/pt1/python/torch_mlir_e2e_test

if [ -f "$DIR/$SUITE/framework.py" ]; then
  echo "$DIR"
  exit 0
fi
mkdir -p "$DIR"
git -C "$DIR" init -q
git -C "$DIR" remote remove origin 2>/dev/null || true
git -C "$DIR" remote add origin "$URL"
git -C "$DIR" sparse-checkout set "$SUITE"
if ! git -C "$DIR" fetch -q --depth 1 --filter=blob:none origin "$COMMIT"; then
  echo "get_suite.sh: cannot fetch torch-mlir $COMMIT from $URL (no network to it?):" \
       "get a torch-mlir checkout at that commit another way and set E2E_SUITE_DIR to it" \
       "(docs/e2e.md)" >&2
  exit 1
fi
git -C "$DIR" -c advice.detachedHead=false checkout -q FETCH_HEAD
echo "$DIR"
