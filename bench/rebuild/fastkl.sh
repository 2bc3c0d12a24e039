#!/usr/bin/env bash
# The fast numeric mode's bound (issue #21, item 2) on an export the rebuild
# made, where ane/ref's other KL benchmarks use the quick export
# (round-to-nearest, fixed codebooks): synth PRESET → GPTQ quantize under
# the published recipe scaled to the preset's depth (inputs.py recipe; the
# online basis) → BenchmarkFastNumericsKLExport: the fast mode against the
# exact one on 2,048 held-out positions, one at a time, in Verify blocks
# and in prefill blocks; it fails outside mean KL ≤ 1e-3 nats, top-1 ≥ 99%.
#   NCAL=32 SEQ=128   calibration rows × tokens (random ids)
#   WORK=DIR          reuse a work directory (the export is kept there)
#   LOWRANK=1         also fit rank-64 factors to the export's mixers
#                     (forgectl rebuild lowrank: gdn and attn) and measure
#                     that export (both modes run the branches in float32)
# Usage: bench/rebuild/fastkl.sh [preset]   (default small; heavy: run alone)
set -euo pipefail
preset=${1:-small}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${WORK:-$(mktemp -d /tmp/rebuild-fastkl-XXXXXX)}
bin="$work/forgectl"
(cd "$root" && go build -o "$bin" ./cmd/forgectl)
[ -f "$work/model/config.json" ] || "$bin" rebuild synth --preset "$preset" --seed 1 --out "$work/model" >/dev/null
layers=$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); print(c.get("text_config", c)["num_hidden_layers"])' "$work/model/config.json")
python3 "$root/bench/rebuild/inputs.py" recipe "$work/model" "$layers" "$work/plan.json"
python3 "$root/bench/rebuild/inputs.py" calib "$work/model" "${NCAL:-32}" "${SEQ:-128}" 5 "$work/calib.npy"
t0=$(date +%s)
if [ ! -f "$work/export/lm_head.safetensors" ]; then
  rm -rf "$work/export"
  "$bin" rebuild quantize --model "$work/model" --out "$work/export" --calib "$work/calib.npy" \
    --plan "$work/plan.json" --method gptq --seed 1 >"$work/quantize.log"
fi
echo "$preset: plan $(tr -d ' \n' <"$work/plan.json"), export in $(( $(date +%s) - t0 ))s"
export_dir="$work/export"
if [ "${LOWRANK:-0}" = 1 ]; then
  if [ ! -f "$work/export_lr/lm_head.safetensors" ]; then
    rm -rf "$work/export_lr"
    "$bin" rebuild lowrank --model "$work/model" --export "$work/export" --out "$work/export_lr" --seed 1 >"$work/lowrank.log"
  fi
  export_dir="$work/export_lr"
  echo "$preset: rank-64 factors fitted into $export_dir"
fi
cd "$root"
FORGED_BENCH_MODEL="$work/model" FORGED_BENCH_EXPORT="$export_dir" \
  go test -run '^$' -bench FastNumericsKLExport -benchtime 1x -timeout 0 ./ane/ref
echo "(work dir $work)"
