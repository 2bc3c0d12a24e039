#!/usr/bin/env python3
"""Inputs of the rebuild's bench scripts, written in one place.

  inputs.py calib MODEL N SEQ SEED OUT.npy
      N rows of SEQ random token ids below MODEL's vocabulary (int32 .npy),
      from Python's random.Random(SEED).
  inputs.py recipe MODEL DEPTH OUT.json
      The published plan (Anemll/anemll-forge scripts/qwen38_gptq_27b.py,
      mix25in_mixr.json for 64 layers) scaled to DEPTH layers and cut to
      MODEL's: MLPs `LUT4 per-tensor + pcs` in the layers whose share of the
      64 mostly has LUT4 MLPs there, mixers `vector 2x16 + pcs` in the
      layers standing for 0-23; everything else the quantizer's defaults
      (MLPs and mixers there `vector 2x16 + pcs` / `LUT4 per-tensor + pcs`,
      k/v INT8 per-channel, head LUT4 + pcs, the online basis).
"""
import json
import os
import random
import struct
import sys


def text_config(model):
    c = json.load(open(os.path.join(model, "config.json")))
    return c.get("text_config", c)


def calib(model, n, seq, seed, out):
    vocab = text_config(model)["vocab_size"]
    rng = random.Random(int(seed))
    n, seq = int(n), int(seq)
    ids = [rng.randrange(vocab) for _ in range(n * seq)]
    hdr = "{'descr': '<i4', 'fortran_order': False, 'shape': (%d, %d), }" % (n, seq)
    hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
    with open(out, "wb") as fh:
        fh.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
        fh.write(struct.pack("<%di" % len(ids), *ids))


# mix25in_mixr.json: the MLP layers in LUT4, of 64.
LUT4_OF_64 = {23, 24, 25, 27, 28, 30, 32, 35, 36, 37, 39, 40, 41, 42, 44, 45, 49, 51, 53, 54, 55, 58, 60, 61, 62, 63}


def recipe(model, depth, out):
    depth = int(depth)
    layers = text_config(model)["num_hidden_layers"]
    per = 64 / depth  # published layers each of ours stands for
    plan = {}
    for i in range(min(depth, layers)):
        span = range(round(i * per), round((i + 1) * per))
        if sum(j in LUT4_OF_64 for j in span) * 2 >= len(span):
            for m in ("gate", "up", "down"):
                plan["%d.%s" % (i, m)] = "LUT4 per-tensor + pcs"
        if span.start <= 23:
            plan["%d.mixer" % i] = "vector 2x16 + pcs"
    with open(out, "w") as fh:
        json.dump(plan, fh, indent=1, sort_keys=True)


if __name__ == "__main__":
    cmds = {"calib": (calib, 5), "recipe": (recipe, 3)}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds or len(sys.argv) - 2 != cmds[sys.argv[1]][1]:
        sys.exit(__doc__)
    fn, _ = cmds[sys.argv[1]]
    fn(*sys.argv[2:])
