#!/usr/bin/env bash
# The test command: builds the workspace (the layer, the CLI and the test app that the end-to-end tests
# drive) and runs every test on lavapipe. Installs missing system packages first (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
cargo build --workspace --locked
cargo test --workspace --locked
