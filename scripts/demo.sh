#!/usr/bin/env bash
# The main job: build Blackbox, check the machine, and show what it reports on this machine's Vulkan device
# (lavapipe where there is no GPU): a NaN's origin, a failing shader assert, a GPU hang.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --workspace --locked
target/release/blackbox doctor || true
echo
exec target/release/blackbox demo
