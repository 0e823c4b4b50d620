#!/usr/bin/env bash
# GPU check in two halves, for a GPU machine that has a CUDA toolkit but none of the project's
# other dependencies and no package registry:
#
#   tools/gpu_check.sh --bundle DIR        on a build machine: builds h2oflex and gpu_tests for
#                                          the GPU (sm_90 machine code only, no -march=native),
#                                          packs them with the shared libraries a bare CUDA image
#                                          lacks into DIR/h2oflex-gpu.tar.xz, and prints what the
#                                          GPU machine receives (fails above 58 MiB in all)
#   tools/gpu_check.sh --from-bundle DIR   on the GPU machine, from the repository root: unpacks
#                                          the bundle and runs the check; installs nothing
#
# The check runs a preflight (nvidia-smi, versions, ldd of both binaries, free memory and disk;
# it stops there naming any library the loader cannot find), the gpu tests, then the benchmark
# cases (OPT dummy weights, prompt 512, gen 32) of experiments/gpu_check/<case>.yaml, each
# planned first (run --plan-only: over budget, it stops before loading), and prints one table
# last. Every part has its own time cap, taken out of one budget, so a slow part cannot
# eat the rest.
#   opt-6.7b-gpu    OPT-6.7B with weights, cache and activations all on the GPU (batch 32)
#   opt-30b-full    OPT-30B, device_mem 16GiB (a T4), 90% of the weights and the cache on host,
#                   cpu_cache_compute, full KV, block 32 x 1 (its cache: ~24 GiB of host RAM)
#   opt-30b-h2o20   the same with H2O keeping 20% (heavy 10% + recent 10% of the prompt)
# Every case sets compute_device: cuda, so a machine without a usable GPU reports "no CUDA
# device" for the case instead of CPU numbers. The 30B runs are projected (decode steps timed
# and extrapolated). A case's config is read from $GPU_CHECK_CONFIG_DIR/<case>.yaml when there,
# else experiments/gpu_check/<case>.yaml.
#
# When gpu tests fail, the failing ones run again with CUDA_LAUNCH_BLOCKING=1 and
# H2OFLEX_CUDA_SYNC=1 (every launch waited for, errors named by kernel), then under
# compute-sanitizer when it is installed, with what is left of the budget.
#
# Evidence: with OUT set, every part writes there as it goes (at most 8 files): gpu_check.log
# (all the check prints), gpu_tests.log and gpu_tests.json, cases.log (every case's output),
# <case>.json for each case, rerun.log (the reruns and compute-sanitizer). A case whose JSON was
# written counts as run even when its teardown passed the cap.
#
# Environment: GPU_CHECK_BUDGET_S (whole check, default 450), GPU_CHECK_TESTS_S (gpu tests, 120),
# GPU_CHECK_CASES (the cases and each one's cap in seconds, default "opt-6.7b-gpu:60
# opt-30b-full:120 opt-30b-h2o20:120"), GPU_CHECK_RERUN_S (each rerun, 60), OUT (evidence),
# GPU_CHECK_BUILD_DIR (--bundle's build folder, default build-gpu-bundle), GPU_CHECK_JOBS
# (--bundle's parallel jobs, default all cores), GPU_CHECK_MAX_MIB (--bundle's limit on the whole
# transfer, default 58).
set -uo pipefail

usage() {
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
[ $# -eq 2 ] || usage
mode=$1
dir=$(realpath -m "$2")
cd "$(dirname "$0")/.."
root=$PWD
bundle_name=h2oflex-gpu.tar.xz
# The GPU machine receives the working tree (tracked files and untracked ones git does not
# ignore) plus the bundle: 64 MiB at most in all; 58 leaves room for files added after packing.
max_transfer_bytes=$((${GPU_CHECK_MAX_MIB:-58} << 20))

# Libraries every GPU machine provides, so never packed: the C and C++ runtimes and the loader
# (the CUDA image has a libstdc++ and libgcc_s; the preflight's ldd there names a missing
# symbol version), the driver, and the CUDA toolkit's runtime and cuBLAS (the GPU image has the
# toolkit; cuBLAS alone would not fit the size limit). Everything else ldd names goes in.
system_lib() {
  case "$1" in
    linux-vdso.so* | ld-linux*.so* | libc.so* | libm.so* | libpthread.so* | libdl.so* | \
      librt.so* | libresolv.so* | libstdc++.so* | libgcc_s.so* | libcuda.so* | libcudart.so* | \
      libcublas.so* | libcublasLt.so*)
      return 0
      ;;
  esac
  return 1
}

make_bundle() {
  local build=${GPU_CHECK_BUILD_DIR:-build-gpu-bundle}
  local jobs=${GPU_CHECK_JOBS:-$(nproc)}
  local stage
  stage=$(mktemp -d)
  trap "rm -rf '$stage'" RETURN
  echo "[bundle] configuring $build" >&2
  # Single process: the GPU machine has no mpirun to start stages with, and NCCL's library
  # alone (~200 MiB) would not fit the bundle. The NCCL link is checked by `ctest -R
  # dist_nccl_link` in a full build on a machine with two GPUs (runtime/dist/README.md).
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DH2OFLEX_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90-real -DH2OFLEX_NATIVE=OFF -DH2OFLEX_MPI=OFF -DH2OFLEX_NCCL=OFF \
    >"$stage/configure.log" 2>&1 || {
    tail -n 30 "$stage/configure.log" >&2
    echo "[bundle] configure failed" >&2
    return 1
  }
  echo "[bundle] building h2oflex and gpu_tests (-j $jobs)" >&2
  cmake --build "$build" -j "$jobs" --target h2oflex gpu_tests >"$stage/build.log" 2>&1 || {
    grep -E "error|Error" "$stage/build.log" | head -n 30 >&2
    echo "[bundle] build failed" >&2
    return 1
  }
  mkdir -p "$stage/h2oflex-gpu/bin" "$stage/h2oflex-gpu/lib"
  local bin name path
  for bin in h2oflex tests/gpu_tests; do
    cp "$build/$bin" "$stage/h2oflex-gpu/bin/"
  done
  strip --strip-unneeded "$stage"/h2oflex-gpu/bin/*
  # The architectures the kernels were built for, for the manifest: sm_90 SASS only (PTX for
  # newer GPUs would add megabytes the transfer limit cannot spare; the lent GPUs are H100/H200).
  local archs cuobjdump
  archs="CMAKE_CUDA_ARCHITECTURES=$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$build/CMakeCache.txt") (sm_90 machine code, no PTX)"
  cuobjdump=$(command -v cuobjdump || echo "$(dirname "$(command -v nvcc)")/cuobjdump")
  if [ -x "$cuobjdump" ]; then
    archs="$archs; cuobjdump: "$( ("$cuobjdump" --list-elf "$build/h2oflex" 2>/dev/null | grep -o 'sm_[0-9]*' | sort -u
      "$cuobjdump" --list-ptx "$build/h2oflex" 2>/dev/null | grep -o 'sm_[0-9]*' | sort -u |
        sed 's/sm_/compute_/') | tr '\n' ' ')
  fi
  local libs=()
  while read -r name path; do
    system_lib "$name" && continue
    [ -f "$path" ] || {
      echo "[bundle] $name: not found here" >&2
      return 1
    }
    cp -L "$path" "$stage/h2oflex-gpu/lib/$name"
    libs+=("$name")
  done < <(ldd "$build/h2oflex" "$build/tests/gpu_tests" |
    awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u)
  strip --strip-unneeded "$stage"/h2oflex-gpu/lib/* 2>/dev/null
  {
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) with $(nvcc --version | tail -n 1)"
    echo "kernels: $archs"
    echo "glibc needed: $(objdump -T "$stage"/h2oflex-gpu/bin/* "$stage"/h2oflex-gpu/lib/* 2>/dev/null |
      grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)"
    echo "packed libraries: ${libs[*]}"
    echo "expected on the GPU machine: the driver (libcuda), the CUDA toolkit's libcudart and libcublas, libstdc++ and libgcc_s"
  } >"$stage/h2oflex-gpu/MANIFEST"
  mkdir -p "$dir"
  # xz -6 in parallel blocks: -9 packs it 0.3 MB smaller (9.35 against 9.67 MB) in more than
  # twice the time on two cores.
  tar -C "$stage" -cf - h2oflex-gpu | xz -6 -T0 >"$dir/$bundle_name.tmp"
  # What travels: the tracked files, the untracked ones git does not ignore, and the bundle.
  local size tracked untracked total
  size=$(stat -c %s "$dir/$bundle_name.tmp")
  tracked=$(git ls-files -z | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
  untracked=$(git ls-files -z --others --exclude-standard |
    xargs -0 -r stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
  total=$((tracked + untracked + size))
  mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
  cat "$stage/h2oflex-gpu/MANIFEST"
  echo "transfer: tracked $(mib "$tracked") + untracked $(mib "$untracked") + bundle $(mib "$size") = $(mib "$total") (limit $(mib "$max_transfer_bytes"))"
  if [ "$total" -gt "$max_transfer_bytes" ]; then
    rm -f "$dir/$bundle_name.tmp"
    echo "[bundle] the transfer would be $(mib "$total"): over the limit, no bundle written" >&2
    return 1
  fi
  mv "$dir/$bundle_name.tmp" "$dir/$bundle_name"
  echo "bundle: $dir/$bundle_name ($((size / 1024)) KiB)"
}

# ---- the check ------------------------------------------------------------------------------

run_check() {
  local budget_s=${GPU_CHECK_BUDGET_S:-450}
  local tests_s=${GPU_CHECK_TESTS_S:-120} rerun_s=${GPU_CHECK_RERUN_S:-60}
  local case_list=${GPU_CHECK_CASES:-"opt-6.7b-gpu:60 opt-30b-full:120 opt-30b-h2o20:120"}
  local work start=$SECONDS
  work=$(mktemp -d)
  trap "rm -rf '$work'" EXIT
  # The evidence folder: $OUT when set (it comes back from the GPU machine), else scratch.
  local ev=$work
  if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT" || exit 2
    ev=$(realpath "$OUT")
    # All the check prints goes to gpu_check.log as well, line by line as it is printed; at
    # exit the check waits for tee to write its last lines.
    exec > >(tee -a "$ev/gpu_check.log") 2>&1
    tee_pid=$!
    trap "rm -rf '$work'; exec >&- 2>&-; wait $tee_pid" EXIT
  fi
  elapsed() { echo $((SECONDS - start)); }
  log() { echo "[gpu_check $(elapsed)s] $*" >&2; }
  # A part's cap: its own, but never more than leaves `reserve` seconds for the parts after it.
  cap_for() {  # own cap, seconds to keep for later parts
    local left=$((budget_s - $(elapsed) - $2))
    [ "$left" -lt "$1" ] && echo "$left" || echo "$1"
  }
  local rows="$work/rows.tsv"
  : >"$rows"
  row() { printf '%s\t%s\t%s\n' "$1" "$2" "${3:-}" >>"$rows"; }  # part, status, results json
  local names=() caps=() entry
  for entry in $case_list; do
    [[ "$entry" =~ ^[A-Za-z0-9._-]+:[0-9]+$ ]] || {
      echo "gpu_check: GPU_CHECK_CASES: '$entry' is not <case>:<seconds>" >&2
      exit 2
    }
    names+=("${entry%%:*}")
    caps+=("${entry##*:}")
  done
  local config configs=()
  for entry in "${names[@]}"; do
    config=""
    for d in "${GPU_CHECK_CONFIG_DIR:-}" experiments/gpu_check; do
      if [ -n "$d" ] && [ -f "$d/$entry.yaml" ]; then
        config="$d/$entry.yaml"
        break
      fi
    done
    [ -n "$config" ] || {
      echo "gpu_check: GPU_CHECK_CASES: no config for '$entry' (experiments/gpu_check/$entry.yaml)" >&2
      exit 2
    }
    configs+=("$config")
  done

  [ -f "$dir/$bundle_name" ] || {
    echo "gpu_check: no $bundle_name in $dir (make it with tools/gpu_check.sh --bundle $dir)" >&2
    exit 2
  }
  xz -dc "$dir/$bundle_name" | tar -C "$work" -xf - || {
    echo "gpu_check: cannot unpack $dir/$bundle_name" >&2
    exit 2
  }
  local b="$work/h2oflex-gpu"
  sed 's/^/[bundle] /' "$b/MANIFEST" >&2
  export LD_LIBRARY_PATH="$b/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # The toolkit's libraries where the loader does not look by itself.
  local d
  if ldd "$b/bin/gpu_tests" | grep -q "not found"; then
    for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
      $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null |
        xargs -n1 -I{} sh -c 'ls -d {}/nvidia/*/lib 2>/dev/null'); do
      [ -d "$d" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
    done
  fi
  export H2OFLEX_SOURCE_DIR=$root OMP_WAIT_POLICY=passive

  # 0. Preflight: what the machine is, and whether both binaries can start at all.
  log "preflight"
  {
    nvidia-smi 2>&1 || echo "nvidia-smi: unavailable"
    echo "driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)" \
      "CUDA (driver): $(nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' | head -n 1)"
    echo "toolkit: $( (nvcc --version 2>/dev/null || /usr/local/cuda/bin/nvcc --version 2>/dev/null) |
      tail -n 1)"
    local bin
    for bin in h2oflex gpu_tests; do
      echo "ldd $bin:"
      ldd "$b/bin/$bin" 2>&1 | sed 's/^/  /'
    done
    echo "memory:"
    free -g | sed 's/^/  /'
    echo "disk:"
    df -h "$root" "${TMPDIR:-/tmp}" | sed 's/^/  /'
  } >&2
  # A library not found, or one too old for a symbol version the binaries need.
  local missing
  missing=$(ldd "$b/bin/h2oflex" "$b/bin/gpu_tests" 2>&1 |
    sed -n -e 's/^\s*\(\S*\) => not found.*/\1/p' \
      -e "s/.*: \(\S*\): version \`\([^']*\)' not found.*/\1 (\2)/p" | sort -u | tr '\n' ' ')
  if [ -n "$missing" ]; then
    log "preflight: missing: $missing"
    row "preflight" "stopped: missing $missing"
  else
    row "preflight" "ok: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -n 1 || true)"
  fi

  local cap failed="" rc i name reserve
  if [ -z "$missing" ]; then
    # 1. The gpu tests. Parts after it: each case at least 20 s, and 2 reruns.
    reserve=$((${#names[@]} * 20 + 40))
    cap=$(cap_for "$tests_s" "$reserve")
    log "gpu tests (up to ${cap}s)"
    timeout --kill-after=10 "$cap" "$b/bin/gpu_tests" --gtest_output="json:$ev/gpu_tests.json" \
      >"$ev/gpu_tests.log" 2>&1
    rc=$?
    tail -n 25 "$ev/gpu_tests.log" >&2
    local summary
    summary=$(python3 - "$ev/gpu_tests.json" "$ev/gpu_tests.log" "$rc" "$work/failed.txt" <<'EOF'
import json, os, sys
path, log, rc, failed_out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
if not os.path.exists(path):
    text = open(log, errors="replace").read().strip().splitlines()
    last = text[-1][:80] if text else ""
    if rc in (124, 137):
        print("timed out, no report")
    elif rc == 127 or "error while loading shared libraries" in last:
        print("failed to start: " + last)
    else:
        print(f"no report (exit {rc}): {last}")
    sys.exit()
j = json.load(open(path))
total = passed = skipped = 0
failed, reasons = [], set()
for suite in j.get("testsuites", []):
    for t in suite.get("testsuite", []):
        total += 1
        name = f"{suite['name']}.{t['name']}"
        if t.get("failures"):
            failed.append(name)
        elif t.get("result") == "SKIPPED" or t.get("status") == "NOTRUN":
            skipped += 1
        else:
            passed += 1
open(failed_out, "w").write(":".join(failed))
counts = f"{passed} passed, {len(failed)} failed, {skipped} skipped of {total}"
if rc in (124, 137):
    counts += " (timed out)"
# The skip messages are in the log (gtest's JSON report leaves them out).
for line in open(log, errors="replace"):
    if line.startswith("no CUDA device"):
        reasons.add(line.strip()[:100])
absent = sorted(reasons) if skipped else []
# Without a device the tests that need one skip, saying why; those that need none still run.
print(f"{absent[0]}: {counts}" if absent else counts)
EOF
)
    [ -f "$work/failed.txt" ] && failed=$(cat "$work/failed.txt")
    log "gpu tests: $summary"
    row "gpu tests" "$summary"

    # 2. The benchmark cases, each under the cap its caller gave. Parts after each: the cases
    # left (20 s each) and 2 reruns.
    for i in "${!names[@]}"; do
      name=${names[$i]}
      config=${configs[$i]}
      cap=$(cap_for "${caps[$i]}" $(((${#names[@]} - i - 1) * 20 + 40)))
      if [ "$cap" -lt 10 ]; then
        row "$name" "skipped: time budget spent"
        continue
      fi
      rm -f "$ev/$name.json"
      local case_log="$work/$name.log" plan_start=$SECONDS
      # The engine's memory plan first (no device needed, a second or two): a case over its
      # budgets stops here, named, instead of after loading 60 GB of weights.
      timeout 30 "$b/bin/h2oflex" run "$config" --plan-only >"$case_log" 2>&1
      rc=$?
      log "plan $name: $(grep -o 'planned: .*' "$case_log" | head -n 1)"
      if [ "$rc" -ne 0 ]; then
        { echo "==== $name ($config), --plan-only exit $rc"; cat "$case_log"; } >>"$ev/cases.log"
        row "$name" "plan failed (exit $rc): $(grep -v '^\s*$' "$case_log" | tail -n 1 | cut -c1-90)"
        continue
      fi
      cap=$((cap - (SECONDS - plan_start)))
      log "run $name ($config, up to ${cap}s)"
      timeout --signal=INT --kill-after=10 "$cap" "$b/bin/h2oflex" run "$config" \
        --json "$ev/$name.json" >>"$case_log" 2>&1
      rc=$?
      { echo "==== $name ($config), exit $rc after at most ${cap}s"; cat "$case_log"; } >>"$ev/cases.log"
      # The results were written: the run is done even if its teardown then passed the cap.
      if [ -s "$ev/$name.json" ] && python3 -c 'import json, sys; json.load(open(sys.argv[1]))' \
        "$ev/$name.json" 2>/dev/null; then
        if [ "$rc" -eq 0 ]; then
          row "$name" ok "$ev/$name.json"
        else
          row "$name" "ok (exit $rc after the results: teardown past the cap)" "$ev/$name.json"
        fi
      elif [ "$rc" -eq 124 ] || [ "$rc" -eq 130 ] || [ "$rc" -eq 137 ]; then
        row "$name" "timeout after ${cap}s"
      elif grep -q "no CUDA device" "$case_log"; then
        row "$name" "no CUDA device: $(grep -o 'no CUDA device.*' "$case_log" | head -n 1 | cut -c17-100)"
      else
        row "$name" "failed (exit $rc): $(grep -v '^\s*$' "$case_log" | tail -n 1 | cut -c1-90)"
      fi
      tail -n 3 "$case_log" >&2
    done
  else
    for name in "gpu tests" "${names[@]}"; do row "$name" "not run: preflight stopped"; done
  fi

  # 3. Failing tests again: every launch synchronous and named, then under compute-sanitizer.
  if [ -n "$failed" ]; then
    cap=$(cap_for "$rerun_s" 20)
    log "rerun of the failing tests with CUDA_LAUNCH_BLOCKING=1 H2OFLEX_CUDA_SYNC=1 (up to ${cap}s)"
    echo "==== blocking rerun: $failed" >>"$ev/rerun.log"
    CUDA_LAUNCH_BLOCKING=1 H2OFLEX_CUDA_SYNC=1 timeout --kill-after=10 "$cap" \
      "$b/bin/gpu_tests" --gtest_filter="$failed" >"$work/rerun.log" 2>&1
    rc=$?
    cat "$work/rerun.log" >>"$ev/rerun.log"
    grep -E "Failure|failed|error|\[  FAILED" "$work/rerun.log" | head -n 40 >&2
    row "failing tests, blocking" "exit $rc: $(grep -E '^\[  (PASSED|FAILED)' "$work/rerun.log" | head -n 2 | tr '\n' ' ' | cut -c1-90)"
    if command -v compute-sanitizer >/dev/null; then
      cap=$(cap_for "$rerun_s" 0)
      if [ "$cap" -ge 10 ]; then
        log "rerun under compute-sanitizer (up to ${cap}s)"
        echo "==== compute-sanitizer: $failed" >>"$ev/rerun.log"
        CUDA_LAUNCH_BLOCKING=1 timeout --kill-after=10 "$cap" compute-sanitizer --tool memcheck \
          --error-exitcode 99 "$b/bin/gpu_tests" --gtest_filter="$failed" >"$work/sanitizer.log" 2>&1
        rc=$?
        cat "$work/sanitizer.log" >>"$ev/rerun.log"
        grep -E "=========" "$work/sanitizer.log" | head -n 40 >&2
        row "failing tests, compute-sanitizer" "exit $rc: $(grep -E '^========= (ERROR SUMMARY|Invalid|Program hit)' "$work/sanitizer.log" | head -n 2 | tr '\n' ' ' | cut -c1-90)"
      else
        row "failing tests, compute-sanitizer" "skipped: time budget spent"
      fi
    else
      row "failing tests, compute-sanitizer" "skipped: compute-sanitizer not installed"
    fi
  fi

  # 4. The table, last.
  echo
  echo "gpu check: $(head -n 1 "$b/MANIFEST") | total $(elapsed)s of ${budget_s}s"
  python3 - "$rows" <<'EOF'
import json, sys

head = ["part", "status", "batch", "KV", "prefill tok/s", "decode tok/s", "total tok/s",
        "tier peak GiB", "cuda used GiB", "projected"]
table = []
for line in open(sys.argv[1]):
    part, status, result = (line.rstrip("\n").split("\t") + ["", ""])[:3]
    if not result:
        table.append([part, status] + ["-"] * (len(head) - 2))
        continue
    j = json.load(open(result))
    kv = j.get("kv", {})
    kv_s = kv.get("policy", "?") + (f" B={kv['budget']}" if kv.get("policy") != "full" else "")
    mem = j.get("device_memory", {})
    used = f"{mem['cuda_used_peak_bytes'] / 2**30:.2f}" if mem else "-"
    where = f"{status} on {j.get('compute_device', '?')}"
    table.append([
        part, where, str(j.get("batch_size", "?")), kv_s,
        f"{j['prefill']['throughput_tok_s']:.2f}", f"{j['decode']['throughput_tok_s']:.2f}",
        f"{j['total']['throughput_tok_s']:.2f}", f"{j.get('peak_device_bytes', 0) / 2**30:.2f}",
        used, str(j.get("projected", "?"))])
widths = [max(len(x) for x in col) for col in zip(head, *table)]
fmt = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
print(fmt(head))
print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
for t in table:
    print(fmt(t))
EOF
  [ -z "$missing" ] || exit 1
}

case "$mode" in
  --bundle) make_bundle ;;
  --from-bundle) run_check ;;
  *) usage ;;
esac
