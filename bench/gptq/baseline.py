#!/usr/bin/python3
"""Baseline for bench/gptq: the published GPTQ (gptq() in Anemll/anemll-forge scripts/qwen3_lut_common.py,
IST-DASLab/gptq fasterquant) in PyTorch on the CPU, with the same inputs and
the same fitted rounder (LUT4 per-tensor + pcs) as the Go run.

Usage: baseline.py DIR RUNS THREADS
  DIR holds w.npy (float32 Cout×Cin), h.f64 (raw little-endian float64 Cin×Cin), lut.npy
  (float32 K), scale.npy (float32 Cout); writes q.npy and prints one JSON
  line {"seconds": [...], "threads": N, "torch": version}.
"""
import json
import sys
import time

import numpy as np
import torch


def make_rnd(lut, scale):
    s = scale[:, None]

    def rnd(x):  # x: (Cout, 1) column block
        qn = x / s
        idx = (qn - lut[None, :]).abs().argmin(1)
        return lut[idx][:, None] * s

    return rnd


def chol_inv_upper(h):
    l = torch.linalg.cholesky(h)
    hinv = torch.cholesky_inverse(l)
    return torch.linalg.cholesky(hinv, upper=True)


def gptq(w, h, rnd, block=128, damp=0.01):
    h = h.clone()
    dead = torch.diag(h) == 0
    h[dead, dead] = 1
    perm = torch.argsort(torch.diag(h), descending=True)
    w = w[:, perm].clone()
    h = h[perm][:, perm]
    h += damp * torch.mean(torch.diag(h)) * torch.eye(h.shape[0], dtype=h.dtype)
    hinv = chol_inv_upper(h).float()
    q = torch.zeros_like(w)
    ncols = w.shape[1]
    for i1 in range(0, ncols, block):
        i2 = min(i1 + block, ncols)
        w1 = w[:, i1:i2].clone()
        err1 = torch.zeros_like(w1)
        hinv1 = hinv[i1:i2, i1:i2]
        for i in range(i2 - i1):
            qc = rnd(w1[:, i:i + 1])[:, 0]
            q[:, i1 + i] = qc
            err = (w1[:, i] - qc) / hinv1[i, i]
            w1[:, i:] -= err[:, None] @ hinv1[i, i:][None]
            err1[:, i] = err
        w[:, i2:] -= err1 @ hinv[i1:i2, i2:]
    return q[:, torch.argsort(perm)]


def main():
    d, runs, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    torch.set_num_threads(threads)
    w = torch.from_numpy(np.load(f"{d}/w.npy"))
    h = torch.from_numpy(np.fromfile(f"{d}/h.f64", dtype="<f8").reshape(w.shape[1], w.shape[1]))
    rnd = make_rnd(torch.from_numpy(np.load(f"{d}/lut.npy")), torch.from_numpy(np.load(f"{d}/scale.npy")))
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        q = gptq(w, h, rnd)
        times.append(time.perf_counter() - t0)
        print(f"baseline: run {len(times)}/{runs}: {times[-1]:.3f} s", file=sys.stderr, flush=True)
    np.save(f"{d}/q.npy", q.numpy())
    print(json.dumps({"seconds": times, "threads": torch.get_num_threads(), "torch": torch.__version__}))


if __name__ == "__main__":
    main()
