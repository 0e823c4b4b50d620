#!/usr/bin/env bash
# Set-up, build, and run every test through ctest.
set -euo pipefail
cd "$(dirname "$0")"
tools/install_deps.sh
tools/build.sh
cd build
ctest --output-on-failure -j "$(nproc)" "$@"
