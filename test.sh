#!/usr/bin/env bash
# Set-up (packages, the SmolLM2 model the real-model tests read), build, and run every test
# through ctest.
set -euo pipefail
cd "$(dirname "$0")"
tools/install_deps.sh
tools/fetch_smollm2.sh >/dev/null
tools/build.sh
cd build
ctest --output-on-failure -j "$(nproc)" "$@"
