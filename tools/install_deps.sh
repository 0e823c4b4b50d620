#!/usr/bin/env bash
# Installs the Debian packages h2oflex builds with, skipping those already present (clang and
# its runtime libraries build the fuzz targets, tools/fuzz.sh; python3-venv holds the converter of
# tools/fetch_smollm2.sh; python3-dev, pybind11-dev and python3-pytest build and test the Python
# package).
set -euo pipefail
packages=(build-essential cmake pkg-config libdnnl-dev libyaml-cpp-dev liburing-dev
  libpcre2-dev nlohmann-json3-dev libcli11-dev libgtest-dev libomp-dev python3 python3-matplotlib fio
  clang libclang-rt-14-dev openmpi-bin libopenmpi-dev python3-venv python3-dev pybind11-dev
  python3-pytest)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
