#!/usr/bin/env bash
# The main job, for now: build Blackbox, check the machine, and run the test app's scenarios under the layer
# with the validation layer below it.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --workspace
target/release/blackbox doctor || true
echo
echo "== bb-testapp under Blackbox (implicit manifest) and the validation layer =="
target/release/blackbox run --validation -- target/release/bb-testapp all
