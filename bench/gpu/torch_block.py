#!/usr/bin/env python3
"""The transformer block training step of bench/gpu/block_large.mtf in
PyTorch (forward, backward, Adam), eager and with the model under
torch.compile (backward through the compiled graph; Adam eager), on one GPU.

usage: torch_block.py [--steps N] [--precision fp32|tf32|bf16]
                      [--modes eager,compile] [--meshc-ms MS ...]

Prints one line per mode: mean and min step time, achieved TFLOP/s and MFU.
The FLOP count is the model's (forward GEMMs and attention matmuls, times 3
for forward + backward; flops.py), the same count bench/gpu/run_all.sh uses
for meshc. MFU is against the H100 SXM dense peak of the precision's tensor
cores: 494 TFLOP/s for fp32 and tf32 runs (the TF32 peak; a strict fp32 run
cannot reach it, which is the point of showing it) and 989 TFLOP/s for bf16.
With --meshc-ms, also prints meshc's step time divided by each mode's.
"""
import argparse
import math
import time

import torch
import torch.nn.functional as F

from flops import BLOCK, PEAK_TFLOPS, training_step_flops


class Block(torch.nn.Module):
    """The block of block_large.mtf, op for op (tanh GELU, additive mask)."""

    def __init__(self, d_model, heads, d_k, d_ff):
        super().__init__()
        def normal(*shape, std):
            return torch.nn.Parameter(torch.randn(*shape) * std)
        self.ln1 = torch.nn.LayerNorm(d_model, eps=1e-5)
        self.ln2 = torch.nn.LayerNorm(d_model, eps=1e-5)
        self.wq = normal(d_model, heads * d_k, std=0.015625)
        self.wk = normal(d_model, heads * d_k, std=0.015625)
        self.wv = normal(d_model, heads * d_k, std=0.015625)
        self.wo = normal(heads * d_k, d_model, std=0.015625)
        self.w_in = normal(d_model, d_ff, std=0.015625)
        self.b_in = torch.nn.Parameter(torch.zeros(d_ff))
        self.w_out = normal(d_ff, d_model, std=0.0078125)
        self.heads, self.d_k = heads, d_k

    def attention(self, x, mask):
        b, s, _ = x.shape
        def split(t):
            return t.view(b, s, self.heads, self.d_k).transpose(1, 2)
        q, k, v = split(x @ self.wq), split(x @ self.wk), split(x @ self.wv)
        scores = q @ k.transpose(-1, -2) * (1.0 / math.sqrt(self.d_k)) + mask
        context = torch.softmax(scores, dim=-1) @ v
        return context.transpose(1, 2).reshape(b, s, -1) @ self.wo

    def forward(self, x, mask):
        a = x + self.attention(self.ln1(x), mask)
        h = F.gelu(self.ln2(a) @ self.w_in + self.b_in, approximate="tanh")
        return a + h @ self.w_out


def time_mode(mode, precision, steps):
    torch.manual_seed(0)
    dims = BLOCK
    model = Block(dims["d_model"], dims["heads"], dims["d_k"],
                  dims["d_ff"]).cuda()
    x = torch.randn(dims["batch"], dims["seq"], dims["d_model"], device="cuda")
    mask = torch.randn(dims["seq"], dims["seq"], device="cuda")
    # PyTorch's default Adam (the multi-tensor "foreach" implementation).
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    forward = torch.compile(model) if mode == "compile" else model

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16,
                            enabled=precision == "bf16"):
            y = forward(x, mask)
            loss = (y.float() * y.float()).mean()
        loss.backward()
        optimizer.step()
        return loss

    for _ in range(3):  # warm-up (and compilation)
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return sum(times) / len(times), min(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--precision", choices=["fp32", "tf32", "bf16"],
                        default="fp32")
    parser.add_argument("--modes", default="eager,compile")
    parser.add_argument("--meshc-ms", type=float, default=None)
    args = parser.parse_args()
    tf32 = args.precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    flops = training_step_flops(BLOCK)
    peak = PEAK_TFLOPS["bf16" if args.precision == "bf16" else "tf32"]
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}, "
          f"{args.precision}, {flops / 1e12:.2f} TFLOP per step, MFU against "
          f"{peak} TFLOP/s")
    for mode in args.modes.split(","):
        mean, best = time_mode(mode, args.precision, args.steps)
        achieved = flops / best / 1e12
        line = (f"pytorch {mode} {args.precision}: mean {mean * 1e3:.2f} ms, "
                f"min {best * 1e3:.2f} ms, {achieved:.1f} TFLOP/s, "
                f"MFU {100 * achieved / peak:.1f}%")
        if args.meshc_ms:
            line += f", meshc/pytorch time {args.meshc_ms / (best * 1e3):.2f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
