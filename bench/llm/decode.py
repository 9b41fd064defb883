#!/usr/bin/env python3
"""Greedy LLM decoding through compiled models, against PyTorch.

    python3 bench/llm/decode.py [--tools DIR] [--work DIR] [--tokens N] [--ir pt2|core.pt2]

A LLaMA-style decoder (RMSNorm, rotary positions, grouped-query attention,
SiLU MLP; seeded random weights) with a static key/value cache that is an
input and an output of every call, written at the call's positions by
index_copy as transformers' StaticCache does. It is exported twice with
torch.export: prefill (the 8-token prompt) and one decode step (one token).
Both go through texport and tcompile; then N tokens (default 32) are
generated greedily twice, by eager PyTorch and by the two .so files (loaded
with ctypes through the tgraph_model(3) ABI, the caches handed from one call
to the next), and the tokens and logits are compared. Exit 1 unless the
tokens are the same.
"""
import argparse
import ctypes
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, DIM, LAYERS, HEADS, KV_HEADS, MAX_LEN, PROMPT = 256, 64, 2, 4, 2, 64, 8
HEAD = DIM // HEADS


class RMSNorm(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.w = nn.Parameter(torch.rand(n) + 0.5)

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w


def rotate(x, cos, sin):
    a, b = x[..., :HEAD // 2], x[..., HEAD // 2:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], -1)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.n1, self.n2 = RMSNorm(DIM), RMSNorm(DIM)
        self.q = nn.Linear(DIM, HEADS * HEAD, bias=False)
        self.k = nn.Linear(DIM, KV_HEADS * HEAD, bias=False)
        self.v = nn.Linear(DIM, KV_HEADS * HEAD, bias=False)
        self.o = nn.Linear(HEADS * HEAD, DIM, bias=False)
        self.gate = nn.Linear(DIM, 4 * DIM, bias=False)
        self.up = nn.Linear(DIM, 4 * DIM, bias=False)
        self.down = nn.Linear(4 * DIM, DIM, bias=False)

    def forward(self, x, pos, cos, sin, mask, kc, vc):
        b, t, _ = x.shape
        h = self.n1(x)
        q = rotate(self.q(h).view(b, t, HEADS, HEAD).transpose(1, 2), cos, sin)
        k = rotate(self.k(h).view(b, t, KV_HEADS, HEAD).transpose(1, 2), cos, sin)
        v = self.v(h).view(b, t, KV_HEADS, HEAD).transpose(1, 2)
        kc = kc.index_copy(2, pos, k)
        vc = vc.index_copy(2, pos, v)
        a = F.scaled_dot_product_attention(q, kc, vc, attn_mask=mask, enable_gqa=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, DIM))
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h)), kc, vc


class TinyLlama(nn.Module):
    """forward(ids [1, T], pos [T], k0, v0, k1, v1 ...) -> logits [1, T, VOCAB],
    then the caches [1, KV_HEADS, MAX_LEN, HEAD] with positions pos written."""
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.norm = RMSNorm(DIM)
        self.head = nn.Linear(DIM, VOCAB, bias=False)
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, HEAD, 2).float() / HEAD))

    def forward(self, ids, pos, *caches):
        x = self.emb(ids)
        ang = pos[:, None].float() * self.inv_freq[None, :]
        cos, sin = torch.cos(ang), torch.sin(ang)
        mask = torch.arange(MAX_LEN)[None, :] <= pos[:, None]      # [T, MAX_LEN]
        out = []
        for i, blk in enumerate(self.blocks):
            x, kc, vc = blk(x, pos, cos, sin, mask, caches[2 * i], caches[2 * i + 1])
            out += [kc, vc]
        return (self.head(self.norm(x)), *out)


def empty_caches():
    return [torch.zeros(1, KV_HEADS, MAX_LEN, HEAD) for _ in range(2 * LAYERS)]


def step_args(ids, start):
    ids = torch.tensor([ids], dtype=torch.int64)
    return ids, torch.arange(start, start + ids.shape[1])


# ---- the compiled models through the tgraph_model ABI ----

class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("dims", ctypes.c_int64 * 8), ("nbytes", ctypes.c_size_t)]


DTYPES = {np.dtype(np.float32): 1, np.dtype(np.int64): 11}


def tensor(a):
    t = Tensor(a.ctypes.data, DTYPES[a.dtype], a.ndim, (ctypes.c_int64 * 8)(*a.shape), a.nbytes)
    return t


class Compiled:
    def __init__(self, path):
        self.lib = ctypes.CDLL(os.path.abspath(path))
        self.lib.tgraph_model_open.restype = ctypes.c_void_p
        self.lib.tgraph_model_open.argtypes = [ctypes.c_char_p]
        self.lib.tgraph_model_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(Tensor),
                                              ctypes.c_int, ctypes.POINTER(Tensor), ctypes.c_int]
        self.lib.tgraph_last_error.restype = ctypes.c_char_p
        self.m = self.lib.tgraph_model_open(None)
        if not self.m:
            sys.exit(f"decode: {path}: {self.lib.tgraph_last_error().decode()}")

    def __call__(self, ins, out_shapes):
        outs = [np.empty(s, np.float32) for s in out_shapes]
        ti = (Tensor * len(ins))(*[tensor(a) for a in ins])
        to = (Tensor * len(outs))(*[tensor(a) for a in outs])
        rc = self.lib.tgraph_model_run(self.m, ti, len(ins), to, len(outs))
        if rc:
            sys.exit(f"decode: run failed: {self.lib.tgraph_last_error().decode()}")
        return outs


def generate(run, prompt, n):
    """n tokens greedily; run(ids, start, caches) -> (logits [1, T, V], caches)."""
    caches = [np.zeros((1, KV_HEADS, MAX_LEN, HEAD), np.float32) for _ in range(2 * LAYERS)]
    tokens, logits = [], []
    ids, start = prompt, 0
    for _ in range(n):
        lg, caches = run(ids, start, caches)
        logits.append(lg[0, -1])
        tokens.append(int(np.argmax(lg[0, -1])))
        start += len(ids)
        ids = [tokens[-1]]
    return tokens, logits


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tools", default=os.path.join(here, "..", "..", "tools"))
    ap.add_argument("--work", default="llm-work")
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--ir", choices=["pt2", "core.pt2"], default="pt2")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    torch.manual_seed(0)
    model = TinyLlama().eval()
    g = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, VOCAB, (PROMPT,), generator=g).tolist()
    sos = {}
    for name, ids in (("prefill", prompt), ("decode", prompt[:1])):
        prog = torch.export.export(model, (*step_args(ids, 0), *empty_caches()))
        if args.ir == "core.pt2":
            prog = prog.run_decompositions()
        src = os.path.join(args.work, f"{name}.{args.ir}")
        torch.export.save(prog, src)
        tg, so = src + ".tg", os.path.join(args.work, f"{name}.so")
        for cmd in ([os.path.join(args.tools, "texport"), src, "-o", tg],
                    [os.path.join(args.tools, "tcompile"), tg, "-o", so]):
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode:
                sys.exit(p.stderr.strip())
        sos[name] = Compiled(so)

    def eager(ids, start, caches):
        with torch.no_grad():
            out = model(*step_args(ids, start), *[torch.from_numpy(c) for c in caches])
        return out[0].numpy(), [c.numpy() for c in out[1:]]

    def compiled(ids, start, caches):
        i, p = (a.numpy() for a in step_args(ids, start))
        lg_shape = (1, len(ids), VOCAB)
        out = sos["prefill" if len(ids) > 1 else "decode"](
            [i, p, *caches], [lg_shape] + [c.shape for c in caches])
        return out[0], out[1:]

    want, wl = generate(eager, prompt, args.tokens)
    got, gl = generate(compiled, prompt, args.tokens)
    err = max(float(np.abs(a - b).max() / np.abs(a).max()) for a, b in zip(wl, gl))
    same = sum(a == b for a, b in zip(want, got))
    print(f"PyTorch: {want}")
    print(f"tgraph:  {got}")
    print(f"{args.ir}: {same} of {args.tokens} tokens the same; logits max abs error / max|ref| "
          f"{err:.2g} over the steps (prefill of {PROMPT} tokens, then one token a step "
          f"through the KV cache)")
    return 0 if want == got else 1


if __name__ == "__main__":
    sys.exit(main())
