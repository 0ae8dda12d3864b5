#!/usr/bin/env python3
"""The FLOP count of the benchmark block (block_large.mtf) and the peaks MFU
is measured against.

usage: flops.py STEP_MS [PRECISION]   prints TFLOP/s and MFU of a step time

Model FLOPs of one training step: 3 x the forward's (backward = 2 x forward),
the forward being its GEMMs (q, k, v, o projections: 4 x 2 T d^2; MLP:
2 x 2 T d f) and attention matmuls (scores and context: 2 x 2 T s d), with
T = batch x seq tokens. Element-wise work, softmax, layer norm and Adam are
not counted (the usual convention).
"""
import sys

BLOCK = {"batch": 8, "seq": 1024, "d_model": 4096, "heads": 32, "d_k": 128,
         "d_ff": 16384}

# H100 SXM dense peaks (NVIDIA datasheet): TF32 tensor cores 494 TFLOP/s,
# BF16 989 TFLOP/s. Plain FP32 (no tensor cores) is 67 TFLOP/s.
PEAK_TFLOPS = {"tf32": 494.0, "bf16": 989.0, "fp32-simt": 67.0}


def training_step_flops(dims):
    tokens = dims["batch"] * dims["seq"]
    d, f, s = dims["d_model"], dims["d_ff"], dims["seq"]
    forward = 2 * tokens * (4 * d * d + 2 * d * f) + 4 * tokens * s * d
    return 3 * forward


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[3], file=sys.stderr)
        return 2
    step_ms = float(argv[1])
    precision = argv[2] if len(argv) > 2 else "tf32"
    peak = PEAK_TFLOPS["bf16" if precision == "bf16" else "tf32"]
    achieved = training_step_flops(BLOCK) / (step_ms * 1e-3) / 1e12
    print(f"{achieved:.1f} TFLOP/s, MFU {100 * achieved / peak:.1f}% "
          f"(of {peak} TFLOP/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
