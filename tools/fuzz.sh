#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, with ASan and UBSan) into build-fuzz/ and runs each one for
# SECONDS (default 60) starting from its seed corpus in tools/fuzz/corpus/<target>/ (for
# tokenizer_json also the test fixtures' tokenizers and, when tools/fetch_smollm2.sh has made it,
# SmolLM2's 2 MB tokenizer, copied into build-fuzz/seeds/ rather than committed). A crash input
# lands in build-fuzz/crashes/<target>/ and makes the script exit 1: fix the bug, then commit the
# input under tools/fuzz/crashes/<target>/ so the replay test (tests/fuzz) keeps running it.
# Prints the CPU seconds each target ran.
#
#   tools/fuzz.sh [SECONDS] [TARGET ...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
targets=(safetensors_header hf_config run_config request_line tokenizer_files chat_template
  tokenizer_json gguf_header)
# Further arguments name the targets to build and run (CI: `tools/fuzz.sh 60 gguf_header`).
if [ $# -gt 1 ]; then targets=("${@:2}"); fi
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DH2OFLEX_CUDA=OFF -DH2OFLEX_MPI=OFF -DH2OFLEX_PYTHON=OFF -DH2OFLEX_FUZZ=ON -DBUILD_TESTING=OFF -DCMAKE_CXX_FLAGS="$flags" >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target "${targets[@]/#/fuzz_}"

# tokenizer_json's input: tokenizer.json, a NUL byte, tokenizer_config.json (may be absent).
seeds=build-fuzz/seeds/tokenizer_json
rm -rf "$seeds" && mkdir -p "$seeds"
tokenizer_dirs=(tests/fixtures/tokenizer*/ "$(tools/fetch_smollm2.sh --print-dir 2>/dev/null || true)")
for d in "${tokenizer_dirs[@]}"; do
  [ -f "$d/tokenizer.json" ] || continue
  { cat "$d/tokenizer.json"; printf '\0'; cat "$d/tokenizer_config.json" 2>/dev/null || true; } \
    >"$seeds/$(basename "$d").bin"
done
# Inputs as large as the largest seed (SmolLM2's), the others' as before.
largest=$(find "$seeds" -type f -printf '%s\n' | sort -n | tail -1)
max_len() { if [ "$1" = tokenizer_json ]; then echo $((${largest:-0} > 65536 ? largest : 65536)); else echo 65536; fi; }

status=0
TIMEFORMAT='%U %S'
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/crashes/$t" "build-fuzz/seeds/$t"
  log="build-fuzz/fuzz_$t.log"
  # Leaks are not findings here: a loader that throws mid-way is checked by the ASan test run.
  cpu=$( { time ASAN_OPTIONS=detect_leaks=0 "build-fuzz/fuzz/fuzz_$t" \
    -max_total_time="$seconds" -max_len="$(max_len "$t")" -rss_limit_mb=4096 -timeout=20 \
    -artifact_prefix="build-fuzz/crashes/$t/" "build-fuzz/corpus/$t" "tools/fuzz/corpus/$t" \
    "build-fuzz/seeds/$t" >"$log" 2>&1 || echo "FAILED" >>"$log"; } 2>&1 )
  runs=$(grep -o 'Done [0-9]* runs' "$log" | tail -1 || true)
  if grep -q FAILED "$log"; then
    echo "fuzz $t: FOUND A CRASH (see $log and build-fuzz/crashes/$t/)"
    status=1
  else
    echo "fuzz $t: clean, cpu seconds (user sys): $cpu; ${runs:-no summary}"
  fi
done
exit $status
