#!/usr/bin/env bash
# Set-up, build, and run the main job: experiments/quickstart.yaml, or the config given.
set -euo pipefail
cd "$(dirname "$0")"
tools/install_deps.sh
tools/build.sh
config="${1:-experiments/quickstart.yaml}"
[ $# -gt 0 ] && shift
exec build/h2oflex run "$config" "$@"
