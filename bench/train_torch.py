#!/usr/bin/env python3
"""train_torch.py: the PyTorch CPU eager peer of bench/train_cpu.sh.

The same GPT-style model as gsched-train (tests/reference/gen_fixtures.py defines it: tied
LM head, GELU tanh, LayerNorm eps 1e-5, biases everywhere), trained the same way: micro-batches
of B x T tokens, AdamW with weight decay on matrices, gradient clipping at 1.0. Prints one line
"torch precision=P tokens_per_s=X ms_per_step=Y threads=N blas=KIND blas_threads=M blas_lib=PATH"
with the median over the timed steps. KIND is the threading of the OpenBLAS this process
mapped (openblas_get_parallel(): "openmp", "pthread" or "sequential"; "none" without
OpenBLAS), PATH the libopenblas file from /proc/self/maps. Debian picks the OpenBLAS build
with update-alternatives (libopenblas.so.0, libblas.so.3, liblapack.so.3; with both installed
the pthread build wins, priority 100 against 95); one process gets the OpenMP build with
LD_LIBRARY_PATH=/usr/lib/<multiarch>/openblas-openmp. --require-blas openmp (or pthread)
exits with status 3 before timing anything when the mapped build is another.

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp \\
        /usr/bin/python3 bench/train_torch.py --precision fp32 --steps 8 --threads 2 \\
        --require-blas openmp
"""
import argparse
import ctypes
import math
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, C, NH):
        super().__init__()
        self.NH = NH
        self.ln1 = nn.LayerNorm(C, eps=1e-5)
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.ln2 = nn.LayerNorm(C, eps=1e-5)
        self.fc = nn.Linear(C, 4 * C)
        self.fcproj = nn.Linear(4 * C, C)

    def forward(self, x, mask):
        B, T, C = x.shape
        hs = C // self.NH
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, self.NH, hs).transpose(1, 2)
        k = k.view(B, T, self.NH, hs).transpose(1, 2)
        v = v.view(B, T, self.NH, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        att = att.masked_fill(~mask[:T, :T], float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + self.proj(y)
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, L, NH, C, T, Vp):
        super().__init__()
        self.wte = nn.Embedding(Vp, C)
        self.wpe = nn.Embedding(T, C)
        self.blocks = nn.ModuleList(Block(C, NH) for _ in range(L))
        self.lnf = nn.LayerNorm(C, eps=1e-5)
        self.register_buffer("mask", torch.tril(torch.ones(T, T, dtype=torch.bool)))

    def forward(self, idx, targets, V):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for b in self.blocks:
            x = b(x, self.mask)
        logits = (self.lnf(x) @ self.wte.weight.T)[:, :, :V]
        return F.cross_entropy(logits.float().reshape(-1, V), targets.reshape(-1))


def blas_info():
    """(kind, threads, path) of the OpenBLAS mapped into this process."""
    libs = [l.split()[-1] for l in open("/proc/self/maps") if "libopenblas" in l.split()[-1]]
    if not libs:
        return "none", 0, "-"
    lib = ctypes.CDLL(libs[0])
    kind = {0: "sequential", 1: "pthread", 2: "openmp"}.get(lib.openblas_get_parallel(), "unknown")
    return kind, lib.openblas_get_num_threads(), libs[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--heads", type=int, default=6)
    ap.add_argument("--channels", type=int, default=384)
    ap.add_argument("--context", type=int, default=256)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--micro", type=int, default=8)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--require-blas", choices=["openmp", "pthread"])
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    blas, blas_threads, blas_lib = blas_info()
    if a.require_blas and blas != a.require_blas:
        print("train_torch: wanted the %s OpenBLAS, this process mapped %s (%s)" %
              (a.require_blas, blas_lib, blas), file=sys.stderr)
        sys.exit(3)
    Vp = (a.vocab + 63) // 64 * 64
    model = GPT(a.layers, a.heads, a.channels, a.context, Vp)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": rest, "weight_decay": 0.0}], lr=3e-4, betas=(0.9, 0.95))
    times = []
    for step in range(a.warmup + a.steps):
        idx = torch.randint(0, a.vocab, (a.micro, a.context))
        tgt = torch.randint(0, a.vocab, (a.micro, a.context))
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            loss = model(idx, tgt, a.vocab)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step >= a.warmup:
            times.append(time.perf_counter() - t0)
    ms = statistics.median(times) * 1e3
    print("torch precision=%s tokens_per_s=%.0f ms_per_step=%.1f threads=%d blas=%s "
          "blas_threads=%d blas_lib=%s" % (a.precision, a.micro * a.context / (ms / 1e3), ms,
                                           torch.get_num_threads(), blas, blas_threads, blas_lib))


if __name__ == "__main__":
    main()
