#!/usr/bin/env bash
# Peak RSS of `forgectl rebuild quantize` on the synthetic medium
# checkpoint at 8 and at 16 layers (the same weights; the 8-layer model is
# the first half, by config.json), printing the ratio. Memory must be
# bounded by one layer, so the ratio should be ≤ 1.1.
# The plan is INT8 per-channel with round-to-nearest so the run measures
# the pipeline's memory (shards, capture, Hessians, writer), not k-means
# time; set PLAN/METHOD to measure another recipe.
# Usage: bench/rebuild/peak_rss.sh   (needs /usr/bin/time; heavy: run alone)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${WORK:-$(mktemp -d /tmp/rebuild-rss-XXXXXX)}
bin="$work/forgectl"
(cd "$root" && go build -o "$bin" ./cmd/forgectl)
[ -f "$work/m16/config.json" ] || "$bin" rebuild synth --preset medium --seed 1 --out "$work/m16" >/dev/null
mkdir -p "$work/m8"
for f in "$work"/m16/*; do ln -sf "$f" "$work/m8/$(basename "$f")"; done
rm -f "$work/m8/config.json"
python3 - "$work" <<'PY'
import json, sys, os
w = sys.argv[1]
c = json.load(open(os.path.join(w, "m16", "config.json")))
t = c.get("text_config", c)
t["num_hidden_layers"] = 8
t["layer_types"] = t["layer_types"][:8]
json.dump(c, open(os.path.join(w, "m8", "config.json"), "w"), indent=2)
# Calibration: NCAL rows of SEQ ids (default 4 × 128).
import random, struct
rng = random.Random(1)
n, seq, vocab = int(os.environ.get('NCAL', 4)), int(os.environ.get('SEQ', 128)), t["vocab_size"]
ids = [rng.randrange(vocab) for _ in range(n * seq)]
hdr = "{'descr': '<i4', 'fortran_order': False, 'shape': (%d, %d), }" % (n, seq)
hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
with open(os.path.join(w, "calib.npy"), "wb") as fh:
    fh.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    fh.write(struct.pack("<%di" % len(ids), *ids))
PY
plan=${PLAN:-'{".*": "INT8 per-channel"}'}
echo "$plan" > "$work/plan.json"
rss() { # layers
  rm -rf "$work/out$1"
  /usr/bin/time -v "$bin" rebuild quantize --model "$work/m$1" --out "$work/out$1" --calib "$work/calib.npy" \
    --plan "$work/plan.json" --method "${METHOD:-rtn}" --json >"$work/q$1.log" 2>"$work/time$1.log"
  awk -F: '/Maximum resident set size/ {gsub(/ /,"",$2); print $2}' "$work/time$1.log"
}
a=$(rss 8); b=$(rss 16)
echo "peak RSS: 8 layers $a KiB, 16 layers $b KiB, ratio 16/8 = $(python3 -c "print(round($b/$a, 3))") (target ≤ 1.1)"
echo "(shared, loaded machine; work dir $work)"
