#!/usr/bin/env bash
# Configures and builds into build/ (Release). Extra arguments go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
# The Debian interpreter: tools/install_deps.sh installs pytest, pybind11 and matplotlib for it
# (another python3 earlier on PATH would lack them).
# The Python module is required here (H2OFLEX_PYTHON=ON): the package's tests are part of ./test.sh.
python=(-DH2OFLEX_PYTHON=ON)
[ -x /usr/bin/python3 ] && python+=(-DPython3_EXECUTABLE=/usr/bin/python3)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${python[@]}" "$@" >/dev/null
cmake --build build -j "$(nproc)"
