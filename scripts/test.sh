#!/usr/bin/env bash
# The test command: builds the workspace (the layer, the CLI and the test app that the end-to-end tests
# drive) and runs every test on lavapipe. Installs missing system packages first (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh

# The package test's clean Debian 12 root (debootstrap and lavapipe: a minute or two, mostly downloading and
# unpacking) is made while the workspace builds, not while timed tests run; where this fails, the test makes
# it itself and says why.
root_job=""
if [ "$(id -u)" -eq 0 ] && [ -z "${BLACKBOX_DEBIAN_ROOT:-}" ] && [ ! -f target/debian-root/bookworm/.blackbox-ready ]; then
  mkdir -p target
  setsid scripts/test-package.sh --prepare >target/debian-root.log 2>&1 &
  root_job=$!
  trap '[ -n "$root_job" ] && kill -- "-$root_job" 2>/dev/null' EXIT
fi
cargo build --workspace --locked
if [ -n "$root_job" ]; then
  wait "$root_job" || { echo "test.sh: making the Debian root failed:"; tail -20 target/debian-root.log; }
  root_job=""
fi

cargo test --workspace --locked

# The engine over the 656 real modules of the shared corpus, which lives beside this checkout (CI has it).
corpus=${BLACKBOX_SHARED_CORPUS:-../shared/corpus/spv}
if [ -d "$corpus" ]; then
  cargo test --locked -p blackbox-engine --test shared_corpus
else
  echo "test.sh: no shared corpus at $corpus: the opt-in check of the engine over it did not run"
fi
