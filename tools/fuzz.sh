#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, with ASan and UBSan) into build-fuzz/ and runs each one for
# SECONDS (default 60) starting from its seed corpus in tools/fuzz/corpus/<target>/. A crash input
# lands in build-fuzz/crashes/<target>/ and makes the script exit 1: fix the bug, then commit the
# input under tools/fuzz/crashes/<target>/ so the replay test (tests/fuzz) keeps running it.
# Prints the CPU seconds each target ran.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
targets=(safetensors_header hf_config run_config request_line tokenizer_files chat_template)
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DH2OFLEX_CUDA=OFF -DH2OFLEX_FUZZ=ON -DBUILD_TESTING=OFF -DCMAKE_CXX_FLAGS="$flags" >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target "${targets[@]/#/fuzz_}"

status=0
TIMEFORMAT='%U %S'
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/crashes/$t"
  log="build-fuzz/fuzz_$t.log"
  # Leaks are not findings here: a loader that throws mid-way is checked by the ASan test run.
  cpu=$( { time ASAN_OPTIONS=detect_leaks=0 "build-fuzz/fuzz/fuzz_$t" \
    -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=4096 -timeout=20 \
    -artifact_prefix="build-fuzz/crashes/$t/" "build-fuzz/corpus/$t" "tools/fuzz/corpus/$t" \
    >"$log" 2>&1 || echo "FAILED" >>"$log"; } 2>&1 )
  runs=$(grep -o 'Done [0-9]* runs' "$log" | tail -1 || true)
  if grep -q FAILED "$log"; then
    echo "fuzz $t: FOUND A CRASH (see $log and build-fuzz/crashes/$t/)"
    status=1
  else
    echo "fuzz $t: clean, cpu seconds (user sys): $cpu; ${runs:-no summary}"
  fi
done
exit $status
