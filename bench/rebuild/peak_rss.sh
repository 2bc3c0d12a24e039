#!/usr/bin/env bash
# Peak RSS of `forgectl rebuild quantize` on a synthetic checkpoint at two
# depths (default: medium at 8 and 16 layers — the same weights; the
# shallower model is the first layers of the deeper one, by config.json),
# run one after the other, printing each run's peak RSS, wall and CPU time
# and the ratio. Memory must be bounded by one layer: ratio ≤ 1.1.
#
# The default recipe is the published one (Anemll/anemll-forge scripts/qwen38_gptq_27b.py) scaled to
# the depth: GPTQ; MLPs `vector 2x16 + pcs` except `LUT4 per-tensor + pcs`
# in the layers where mix25in_mixr.json (64 layers) puts LUT4 in most of
# the four layers they stand for (16-layer layers 6–13 and 15); mixers
# `vector 2x16 + pcs` in the first 6 layers (mix25in_mixr: 0–23 of 64),
# `LUT4 per-tensor + pcs` after; k/v `INT8 per-channel`; head LUT4 + pcs;
# online block-Hadamard basis everywhere. A shallower model gets the same
# plan cut to its layers.
#   PRESET=small LAYERS="4 8"  measure another preset / pair of depths
#   PLAN=FILE METHOD=rtn       measure another plan or method
#   NCAL=8 SEQ=128             calibration rows × tokens (random ids)
# Usage: bench/rebuild/peak_rss.sh   (needs /usr/bin/time; heavy: run alone)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${WORK:-$(mktemp -d /tmp/rebuild-rss-XXXXXX)}
preset=${PRESET:-medium}
read -r shallow deep <<<"${LAYERS:-8 16}"
bin="$work/forgectl"
(cd "$root" && go build -o "$bin" ./cmd/forgectl)
full="$work/$preset"
[ -f "$full/config.json" ] || "$bin" rebuild synth --preset "$preset" --seed 1 --out "$full" >/dev/null
python3 - "$work" "$full" "$shallow" "$deep" <<'PY'
import json, os, sys
work, full, depths = sys.argv[1], sys.argv[2], [int(sys.argv[3]), int(sys.argv[4])]
c = json.load(open(os.path.join(full, "config.json")))
t = c.get("text_config", c)
if max(depths) > t["num_hidden_layers"]:
    sys.exit("the %s checkpoint has %d layers, fewer than %d" % (full, t["num_hidden_layers"], max(depths)))
for n in depths:
    d = os.path.join(work, "m%d" % n)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(full):
        if f != "config.json" and not os.path.exists(os.path.join(d, f)):
            os.symlink(os.path.join(full, f), os.path.join(d, f))
    cn = json.loads(json.dumps(c))
    tn = cn.get("text_config", cn)
    tn["num_hidden_layers"] = n
    tn["layer_types"] = tn["layer_types"][:n]
    json.dump(cn, open(os.path.join(d, "config.json"), "w"), indent=2)
PY
for n in "$shallow" "$deep"; do
  if [ -n "${PLAN:-}" ]; then cp "$PLAN" "$work/plan$n.json"; else python3 "$root/bench/rebuild/inputs.py" recipe "$work/m$n" "$deep" "$work/plan$n.json"; fi
done
python3 "$root/bench/rebuild/inputs.py" calib "$full" "${NCAL:-8}" "${SEQ:-128}" 1 "$work/calib.npy"
run() { # layers → "peak_kib wall_s user_s"
  rm -rf "$work/out$1"
  /usr/bin/time -f "%M %e %U" -o "$work/time$1.txt" "$bin" rebuild quantize --model "$work/m$1" --out "$work/out$1" \
    --calib "$work/calib.npy" --plan "$work/plan$1.json" --method "${METHOD:-gptq}" --seed 1 --json >"$work/q$1.log"
  cat "$work/time$1.txt"
}
echo "plan ($deep layers): $(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' "$work/plan$deep.json")"
read -r a wa ua <<<"$(run "$shallow")"
echo "$preset, $shallow layers: peak RSS $a KiB, wall ${wa}s, user CPU ${ua}s"
read -r b wb ub <<<"$(run "$deep")"
echo "$preset, $deep layers: peak RSS $b KiB, wall ${wb}s, user CPU ${ub}s"
echo "ratio $deep/$shallow = $(python3 -c "print(round($b/$a, 3))") (target ≤ 1.1; method ${METHOD:-gptq}, $(python3 -c "import os; print(os.environ.get('NCAL', 8))")×${SEQ:-128} calibration rows)"
echo "(shared, loaded machine; work dir $work)"
