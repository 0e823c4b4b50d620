#!/usr/bin/env bash
# Weights on disk, one format at a time: a disk-bound decode's step time and bytes read per step
# for each storage format, on OPT-6.7B's shapes (dummy weights, packed at load) and on a
# Llama-7B-shaped GGUF in each of its types (tools/write_random_gguf.py; q4_g64 packed at load
# from the f16 file). Rounds are interleaved (the disk swings); each run's layout is deleted
# after it, so the disk holds one layout at a time (the GGUF files stay: ~29 GB). Compute is
# bf16 (the 16-bit type with native kernels on most CPUs; an f16 decode GEMM without one is
# CPU-bound, not disk-bound); the GGUF blocks' few-row kernels run in f32 whatever the type.
#
#   tools/bench_weight_formats.sh OUT_DIR [ROUNDS] [ROW_PATTERN]
#
# ROW_PATTERN (a grep -E pattern, default all) picks rows by name, e.g. 'llama'.
# Needs build/h2oflex (or $H2OFLEX), ~45 GB free in OUT_DIR, and $PY: a Python with `gguf` and
# `numpy` (to write the GGUF files once). Writes OUT_DIR/<round>-<row>.json (run --json) and OUT_DIR/table.md.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: tools/bench_weight_formats.sh OUT_DIR [ROUNDS]}"
rounds="${2:-2}"
mkdir -p "$out/disk"
out="$(cd "$out" && pwd)"
tokenizer="$(tools/fetch_smollm2.sh --print-gguf)"

for t in f16 q8_0 q4_1 q4_k_m; do
  f="$out/llama7b-$t.gguf"
  [ -f "$f" ] || "${PY:?set PY to a python with gguf and numpy}" tools/write_random_gguf.py \
    --shape llama-7b --type "$t" --out "$f" --tokenizer-from "$tokenizer"
done

# row name, model, weight_format, dummy (OPT: random weights of its shapes; a GGUF: its blocks)
all_rows=(
  "opt-6.7b-bf16 opt-6.7b plain true"
  "opt-6.7b-q8_0 opt-6.7b q8_0 true"
  "opt-6.7b-q4_1 opt-6.7b q4_1 true"
  "opt-6.7b-q4_g64 opt-6.7b q4_g64 true"
  "llama-7b-f16 $out/llama7b-f16.gguf stored false"
  "llama-7b-q8_0 $out/llama7b-q8_0.gguf stored false"
  "llama-7b-q4_1 $out/llama7b-q4_1.gguf stored false"
  "llama-7b-q4_k_m $out/llama7b-q4_k_m.gguf stored false"
  "llama-7b-q4_g64 $out/llama7b-f16.gguf q4_g64 false"
)
rows=()
for row in "${all_rows[@]}"; do
  if grep -Eq -- "${3:-.}" <<<"${row%% *}"; then rows+=("$row"); fi
done

config="$out/config.yaml"
cat >"$config" <<EOF
prompt_len: 32
gen_len: 4
batch_size: 1
compute_dtype: bf16
policy:
  gpu_batch_size: 1
  num_gpu_batches: 1
  weights: {gpu: 0, cpu: 0}
  cache: {gpu: 0, cpu: 100}
  activations: {gpu: 100, cpu: 0}
hardware: {host_mem: 8GiB, device_mem: 4GiB, disk_path: $out/disk}
EOF

for r in $(seq 1 "$rounds"); do
  for row in "${rows[@]}"; do
    read -r name model format dummy <<<"$row"
    echo "round $r: $name"
    "${H2OFLEX:-build/h2oflex}" run "$config" --set "model=$model" --set "dummy=$dummy" \
      --set "policy.weight_format=$format" \
      --json "$out/$r-$name.json" >"$out/$r-$name.log" 2>&1 || { tail -5 "$out/$r-$name.log"; exit 1; }
    rm -rf "$out/disk/h2oflex-weights"
  done
done

python3 - "$out" "$rounds" "${rows[@]}" <<'EOF'
import json, statistics, sys
out, rounds, rows = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
lines = ["| row | decode step s (min / median / max) | bytes read per decode step | x the 16-bit row's |",
         "|---|---|---|---|"]
base = {}
for row in rows:
    name = row.split()[0]
    steps, per_step = [], None
    for r in range(1, rounds + 1):
        d = json.load(open(f"{out}/{r}-{name}.json"))
        n = d["gen_len"] - 1
        steps.append(d["decode"]["latency_s"] / n)
        moved = sum(m["bytes"] for m in d["bytes_moved"]
                    if m["phase"] == "decode" and m["src"] == "disk" and m["kind"] == "weight")
        per_step = moved / n
    family = name.rsplit("-", 1)[0]
    base.setdefault(family, per_step)
    lines.append(f"| {name} | {min(steps):.2f} / {statistics.median(steps):.2f} / {max(steps):.2f} "
                 f"| {per_step:,.0f} | {per_step / base[family]:.3f} |")
open(f"{out}/table.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
