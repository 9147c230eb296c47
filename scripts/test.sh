#!/usr/bin/env bash
# The test command: builds the workspace (the layer, the CLI and the test app that the end-to-end tests
# drive) and runs every test on lavapipe. Installs missing system packages first (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
cargo build --workspace --locked
cargo test --workspace --locked

# The engine over the 656 real modules of the shared corpus, which lives beside this checkout (CI has it).
corpus=${BLACKBOX_SHARED_CORPUS:-../shared/corpus/spv}
if [ -d "$corpus" ]; then
  cargo test --locked -p blackbox-engine --test shared_corpus
else
  echo "test.sh: no shared corpus at $corpus: the opt-in check of the engine over it did not run"
fi
