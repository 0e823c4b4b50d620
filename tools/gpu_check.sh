#!/usr/bin/env bash
# GPU check, for a machine with an NVIDIA GPU: builds with the CUDA backend, runs the `gpu`
# tests, then a short throughput benchmark, and prints a table last. Budget: under 8 minutes.
#
#   tools/gpu_check.sh [BUILD_DIR]        (default: build-gpu)
#
# Benchmark cases (OPT dummy weights, prompt 512, gen 32):
#   opt-6.7b-gpu    OPT-6.7B with weights, cache and activations all on the GPU (batch 32)
#   opt-30b-full    OPT-30B, device_mem 16GiB (a T4), 90% of the weights and the cache on host,
#                   cpu_cache_compute, full KV, block 32 x 1 (its cache: ~24 GiB of host RAM;
#                   the device plan, f32 activations of 32 x 512 prompt rows included, ~14 GB)
#   opt-30b-h2o20   the same with H2O keeping 20% (heavy 10% + recent 10% of the prompt), block
#                   32 x 4: the 4x larger block needs less host RAM than the full cache's
# Every case sets compute_device: cuda, so a machine without a usable GPU fails the case instead
# of reporting CPU numbers.
# The 30B runs are projected (decode steps timed and extrapolated). A case's config is read from
# $GPU_CHECK_CONFIG_DIR/<case>.yaml, else experiments/gpu_check/<case>.yaml, else the built-in
# one below. A missing binary, a failing run or a run past its time slot becomes a table entry,
# not an abort.
#
# Environment: GPU_CHECK_BUDGET_S (default 470), GPU_CHECK_RUN_TIMEOUT_S (default 120).
set -uo pipefail
cd "$(dirname "$0")/.."

build_dir=${1:-build-gpu}
budget_s=${GPU_CHECK_BUDGET_S:-470}
run_timeout_s=${GPU_CHECK_RUN_TIMEOUT_S:-120}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start=$SECONDS
elapsed() { echo $((SECONDS - start)); }
log() { echo "[gpu_check $(elapsed)s] $*" >&2; }

log "device: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo 'nvidia-smi unavailable')"

# 1. Build.
build_status=ok
if ! tools/install_deps.sh; then
  log "dependency installation failed; trying to build with what is installed"
fi
if ! cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DH2OFLEX_CUDA=ON >"$work/configure.log" 2>&1; then
  build_status="configure failed"
  tail -n 30 "$work/configure.log" >&2
elif ! cmake --build "$build_dir" -j "$(nproc)" >"$work/build.log" 2>&1; then
  build_status="build failed"
  grep -E "error|Error" "$work/build.log" | head -n 30 >&2
fi
log "build: $build_status"

# 2. The gpu tests.
tests_status="not run"
if [ "$build_status" = ok ]; then
  if (cd "$build_dir" && timeout 180 ctest -L gpu --output-on-failure >"$work/ctest.log" 2>&1); then
    tests_status="passed"
  else
    tests_status="FAILED"
  fi
  tail -n 40 "$work/ctest.log" >&2
  skipped=$(grep -c "(Skipped)" "$work/ctest.log" || true)
  summary=$(grep -E "tests passed|tests failed" "$work/ctest.log" | tail -n 1)
  tests_status="$tests_status: ${summary:-no summary} ($skipped skipped)"
fi
log "gpu tests: $tests_status"

# 3. Benchmark configs.
write_builtin_config() {  # case name, output path
  local common="dummy: true
prompt_len: 512
gen_len: 32
compute_dtype: bf16
compute_device: cuda"
  case "$1" in
    opt-6.7b-gpu)
      cat >"$2" <<EOF
name: OPT-6.7B 512+32 fully on GPU
model: opt-6.7b
$common
projected_steps: 4
policy:
  gpu_batch_size: 32
  num_gpu_batches: 1
  weights: {gpu: 100, cpu: 0}
  cache: {gpu: 100, cpu: 0}
  activations: {gpu: 100, cpu: 0}
hardware:
  device_mem: 100GiB
EOF
      ;;
    opt-30b-full | opt-30b-h2o20)
      local kv="kv: {policy: full}" batches=1
      if [ "$1" = opt-30b-h2o20 ]; then
        kv="kv: {policy: h2o, heavy_ratio: 0.1, recent_ratio: 0.1}"
        batches=4
      fi
      cat >"$2" <<EOF
name: OPT-30B 512+32, device_mem 16GiB, cache on host ($1)
model: opt-30b
$common
projected_steps: 1
policy:
  gpu_batch_size: 32
  num_gpu_batches: $batches
  weights: {gpu: 10, cpu: 90}
  cache: {gpu: 0, cpu: 100}
  activations: {gpu: 0, cpu: 100}
  cpu_cache_compute: true
hardware:
  device_mem: 16GiB
$kv
EOF
      ;;
  esac
}

cases=(opt-6.7b-gpu opt-30b-full opt-30b-h2o20)
results="$work/results.tsv"
: >"$results"
for i in "${!cases[@]}"; do
  name=${cases[$i]}
  config=""
  for dir in "${GPU_CHECK_CONFIG_DIR:-}" experiments/gpu_check; do
    if [ -n "$dir" ] && [ -f "$dir/$name.yaml" ]; then
      config="$dir/$name.yaml"
      break
    fi
  done
  if [ -z "$config" ]; then
    config="$work/$name.yaml"
    write_builtin_config "$name" "$config"
  fi
  left=$((budget_s - $(elapsed)))
  runs_left=$((${#cases[@]} - i))
  slot=$((left / runs_left))
  [ "$slot" -gt "$run_timeout_s" ] && slot=$run_timeout_s
  if [ ! -x "$build_dir/h2oflex" ]; then
    printf '%s\t%s\tno h2oflex binary\n' "$name" "$config" >>"$results"
    continue
  fi
  if [ "$left" -lt 10 ] || [ "$slot" -lt 1 ]; then
    printf '%s\t%s\tskipped: time budget spent\n' "$name" "$config" >>"$results"
    continue
  fi
  log "run $name ($config, up to ${slot}s)"
  timeout --signal=INT --kill-after=10 "$slot" "$build_dir/h2oflex" run "$config" \
    --json "$work/$name.json" >"$work/$name.log" 2>&1
  rc=$?
  if [ "$rc" -eq 0 ] && [ -f "$work/$name.json" ]; then
    printf '%s\t%s\tok\t%s\n' "$name" "$config" "$work/$name.json" >>"$results"
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 130 ] || [ "$rc" -eq 137 ]; then
    printf '%s\t%s\ttimeout after %ss\n' "$name" "$config" "$slot" >>"$results"
  else
    printf '%s\t%s\tfailed (exit %s): %s\n' "$name" "$config" "$rc" \
      "$(grep -v '^\s*$' "$work/$name.log" | tail -n 1 | cut -c1-70)" >>"$results"
  fi
done

# 4. The table, last.
echo
echo "build: $build_status | gpu tests: $tests_status | total $(elapsed)s"
python3 - "$results" <<'EOF'
import json, sys

rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1]) if line.strip()]
head = ["case", "device", "batch", "KV", "prefill tok/s", "decode tok/s", "total tok/s",
        "peak device GiB", "projected", "tokens_sha256", "status"]
table = []
for r in rows:
    name, status = r[0], r[2]
    if status != "ok":
        table.append([name] + ["-"] * 9 + [status])
        continue
    j = json.load(open(r[3]))
    kv = j.get("kv", {})
    kv_s = kv.get("policy", "?") + (f" B={kv['budget']}" if kv.get("policy") != "full" else "")
    table.append([
        name, j.get("compute_device", "?"), str(j.get("batch_size", "?")), kv_s,
        f"{j['prefill']['throughput_tok_s']:.2f}", f"{j['decode']['throughput_tok_s']:.2f}",
        f"{j['total']['throughput_tok_s']:.2f}",
        f"{j.get('peak_device_bytes', 0) / 2**30:.2f}", str(j.get("projected", "?")),
        j.get("tokens_sha256", "")[:12], "ok"])
widths = [max(len(x) for x in col) for col in zip(head, *table)]
fmt = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
print(fmt(head))
print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
for t in table:
    print(fmt(t))
EOF
