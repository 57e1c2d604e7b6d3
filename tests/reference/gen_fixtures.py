#!/usr/bin/env python3
"""gen_fixtures.py: reference values for gsched-train's model, from PyTorch on the CPU.

The C trainer (a GPT-style decoder, see docs/trainer.md) is checked against an independent
implementation: this script builds the same model in PyTorch, in float64, for a tiny config,
and writes one fixture file holding the weights, a batch, the logits, the loss, every
parameter gradient, and the losses of 10 AdamW steps with gradient clipping. The files are
committed; the C tests read them (tests/trainer/), so PyTorch is needed only to regenerate
them:

    apt-get install python3-torch        # Debian 12: PyTorch 1.13, CPU
    /usr/bin/python3 tests/reference/gen_fixtures.py tests/reference/fixtures

Model (the trainer must match it exactly):
  - token embedding wte [Vp, C] (vocabulary padded to a multiple of 64: rows >= V are zero
    and get zero gradient), position embedding wpe [T, C];
  - per block: x += proj(attn(ln1(x))); x += mlp(ln2(x)), where attn is causal multi-head
    self-attention from one qkv matmul ([3C, C] weight; output columns q | k | v, head h on
    channels h*hs .. (h+1)*hs - 1), scaled by 1/sqrt(hs); mlp is fc [4C, C], GELU (tanh
    approximation), proj [C, 4C]; every linear layer has a bias;
  - final LayerNorm, LM head tied to wte (logits = x . wte^T, first V columns used);
    LayerNorm eps 1e-5; loss = mean cross-entropy over the B*T positions.
  - AdamW (decoupled weight decay, as torch.optim.AdamW) with weight decay on tensors of two
    or more dimensions (matrices and embeddings) and none on biases and LayerNorm weights;
    gradients clipped to a global L2 norm before each step.

Fixture format (".gstf", little-endian): magic "GSTF", u32 version (1), u32 tensor count; each
tensor: u16 name length, name (UTF-8), u8 dtype (0 float32, 1 int32), u8 rank, u32 dims[rank],
then the data in row-major order. Values computed in float64 are stored rounded to float32.
"""
import math
import os
import struct
import sys

import torch
import torch.nn.functional as F

CONFIGS = {
    # name: layers, heads, channels, context, vocab, batch, seed
    "tiny": dict(L=2, NH=2, C=16, T=8, V=67, B=2, seed=1234),
}
ADAMW = dict(lr=1e-3, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1, clip=1.0, steps=10)


def padded_vocab(v):
    return (v + 63) // 64 * 64


def param_names(L):
    names = ["wte", "wpe"]
    for l in range(L):
        p = "h.%d." % l
        names += [p + n for n in ("ln1.w", "ln1.b", "attn.qkv.w", "attn.qkv.b", "attn.proj.w",
                                  "attn.proj.b", "ln2.w", "ln2.b", "mlp.fc.w", "mlp.fc.b",
                                  "mlp.proj.w", "mlp.proj.b")]
    return names + ["lnf.w", "lnf.b"]


def init_params(cfg, gen):
    """Random float32 values (exact in float64), not the usual init: nonzero biases and
    LayerNorm weights away from 1 so that every gradient path is exercised."""
    L, C, T, V = cfg["L"], cfg["C"], cfg["T"], cfg["V"]
    Vp = padded_vocab(V)

    def normal(*shape, std=0.02, mean=0.0):
        return (torch.randn(*shape, generator=gen, dtype=torch.float32) * std + mean).double()

    p = {}
    wte = normal(Vp, C, std=0.1)
    wte[V:] = 0.0
    p["wte"] = wte
    p["wpe"] = normal(T, C, std=0.1)
    for l in range(L):
        h = "h.%d." % l
        p[h + "ln1.w"] = normal(C, std=0.1, mean=1.0)
        p[h + "ln1.b"] = normal(C, std=0.1)
        p[h + "attn.qkv.w"] = normal(3 * C, C, std=0.2)
        p[h + "attn.qkv.b"] = normal(3 * C, std=0.1)
        p[h + "attn.proj.w"] = normal(C, C, std=0.2)
        p[h + "attn.proj.b"] = normal(C, std=0.1)
        p[h + "ln2.w"] = normal(C, std=0.1, mean=1.0)
        p[h + "ln2.b"] = normal(C, std=0.1)
        p[h + "mlp.fc.w"] = normal(4 * C, C, std=0.2)
        p[h + "mlp.fc.b"] = normal(4 * C, std=0.1)
        p[h + "mlp.proj.w"] = normal(C, 4 * C, std=0.1)
        p[h + "mlp.proj.b"] = normal(C, std=0.1)
    p["lnf.w"] = normal(C, std=0.1, mean=1.0)
    p["lnf.b"] = normal(C, std=0.1)
    return p


def forward(cfg, p, idx, targets):
    L, NH, C, V = cfg["L"], cfg["NH"], cfg["C"], cfg["V"]
    B, T = idx.shape
    hs = C // NH
    x = p["wte"][idx] + p["wpe"][:T]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for l in range(L):
        h = "h.%d." % l
        a = F.layer_norm(x, (C,), p[h + "ln1.w"], p[h + "ln1.b"], eps=1e-5)
        qkv = a @ p[h + "attn.qkv.w"].T + p[h + "attn.qkv.b"]
        q, k, v = qkv.split(C, dim=2)
        q = q.view(B, T, NH, hs).transpose(1, 2)
        k = k.view(B, T, NH, hs).transpose(1, 2)
        v = v.view(B, T, NH, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ p[h + "attn.proj.w"].T + p[h + "attn.proj.b"]
        m = F.layer_norm(x, (C,), p[h + "ln2.w"], p[h + "ln2.b"], eps=1e-5)
        m = F.gelu(m @ p[h + "mlp.fc.w"].T + p[h + "mlp.fc.b"], approximate="tanh")
        x = x + m @ p[h + "mlp.proj.w"].T + p[h + "mlp.proj.b"]
    x = F.layer_norm(x, (C,), p["lnf.w"], p["lnf.b"], eps=1e-5)
    logits = (x @ p["wte"].T)[:, :, :V]
    loss = F.cross_entropy(logits.reshape(B * T, V), targets.reshape(B * T))
    return logits, loss


def write_gstf(path, tensors):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(b"GSTF" + struct.pack("<II", 1, len(tensors)))
        for name, t in tensors:
            t = t.detach().contiguous()
            is_int = t.dtype in (torch.int32, torch.int64)
            data = t.to(torch.int32 if is_int else torch.float32).numpy().astype("<i4" if is_int else "<f4")
            nb = name.encode()
            f.write(struct.pack("<H", len(nb)) + nb)
            f.write(struct.pack("<BB", 1 if is_int else 0, t.dim()))
            f.write(struct.pack("<%dI" % t.dim(), *t.shape))
            f.write(data.tobytes())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def make(name, cfg, outdir):
    gen = torch.Generator().manual_seed(cfg["seed"])
    params = init_params(cfg, gen)
    names = param_names(cfg["L"])
    B, T, V = cfg["B"], cfg["T"], cfg["V"]
    idx = torch.randint(0, V, (B, T), generator=gen)
    targets = torch.randint(0, V, (B, T), generator=gen)
    tensors = [("config", torch.tensor([cfg["L"], cfg["NH"], cfg["C"], T, V, padded_vocab(V), B],
                                       dtype=torch.int32)),
               ("inputs", idx.int()), ("targets", targets.int())]
    tensors += [(n, params[n]) for n in names]

    leaves = {n: params[n].clone().requires_grad_(True) for n in names}
    logits, loss = forward(cfg, leaves, idx, targets)
    loss.backward()
    tensors += [("logits", logits), ("loss", loss.reshape(1))]
    tensors += [("grad." + n, leaves[n].grad) for n in names]

    # 10 AdamW steps on the same batch, clipping the global gradient norm first.
    hp = ADAMW
    train = {n: params[n].clone().requires_grad_(True) for n in names}
    decay = [train[n] for n in names if train[n].dim() >= 2]
    no_decay = [train[n] for n in names if train[n].dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": hp["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=hp["lr"], betas=(hp["beta1"], hp["beta2"]), eps=hp["eps"])
    losses, norms = [], []
    for _ in range(hp["steps"]):
        opt.zero_grad(set_to_none=True)
        _, l = forward(cfg, train, idx, targets)
        l.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(list(train.values()), hp["clip"])))
        losses.append(float(l))
        opt.step()
    tensors += [("adamw.losses", torch.tensor(losses, dtype=torch.float64)),
                ("adamw.grad_norms", torch.tensor(norms, dtype=torch.float64)),
                ("adamw.hparams", torch.tensor([hp["lr"], hp["beta1"], hp["beta2"], hp["eps"],
                                                hp["weight_decay"], hp["clip"]],
                                               dtype=torch.float64))]
    tensors += [("adamw.final." + n, train[n]) for n in names]
    path = os.path.join(outdir, name + ".gstf")
    write_gstf(path, tensors)
    print("%s: loss=%.6f after %d AdamW steps %.6f -> %s" % (name, float(loss), hp["steps"],
                                                            losses[-1], path))


def main():
    torch.set_default_dtype(torch.float64)
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "fixtures")
    os.makedirs(outdir, exist_ok=True)
    for name, cfg in CONFIGS.items():
        make(name, cfg, outdir)


if __name__ == "__main__":
    main()
