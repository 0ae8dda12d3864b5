"""Writes the overlap benchmark's program (bench/overlap/run.sh): on mesh m:2,
a gradient G of GRAD f32 elements all-reduced over m beside an N x N x N
einsum C = A B that does not touch it. With --started the all-reduce starts
before the einsum and is waited for after it (docs/mprog.md#overlapped-
collectives); without, it runs to completion first.

usage: program.py N GRAD OUT.mprog [--started]
"""
import json
import sys


def main():
    if len(sys.argv) not in (4, 5) or (len(sys.argv) == 5 and sys.argv[4] != "--started"):
        sys.exit(__doc__)
    n, grad, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    started = len(sys.argv) == 5
    square = n * n * 4
    offsets = [0, square, 2 * square, 3 * square]
    buffers = [
        {"id": 0, "dtype": "f32", "shape": [n, n], "offset": offsets[0], "bytes": square},
        {"id": 1, "dtype": "f32", "shape": [n, n], "offset": offsets[1], "bytes": square},
        {"id": 2, "dtype": "f32", "shape": [n, n], "offset": offsets[2], "bytes": square},
        {"id": 3, "dtype": "f32", "shape": [grad], "offset": offsets[3], "bytes": grad * 4},
    ]
    dims = lambda *names: [{"name": name, "size": n} for name in names]
    reduce = {"op": "all_reduce", "buf": 3, "axes": ["m"], "reduction": "sum"}
    einsum = {"op": "einsum",
              "in": [{"buf": 0, "dims": ["i", "k"]}, {"buf": 1, "dims": ["k", "j"]}],
              "out": {"buf": 2, "dims": ["i", "j"]},
              "sizes": {"i": n, "j": n, "k": n}}
    if started:
        reduce["start"] = 0
        steps = [reduce, einsum, {"op": "wait", "tickets": [0]}]
    else:
        steps = [reduce, einsum]
    program = {
        "format": "meshc-mprog", "version": 1,
        "program": "overlap-started" if started else "overlap-blocking",
        "source": "bench/overlap/program.py",
        "mesh": [{"name": "m", "size": 2}], "seed": 1,
        "arena_bytes": offsets[3] + grad * 4, "buffers": buffers,
        "tensors": [
            {"role": "input", "name": "a", "buffer": 0, "dtype": "f32", "dims": dims("i", "k")},
            {"role": "input", "name": "b", "buffer": 1, "dtype": "f32", "dims": dims("k", "j")},
            {"role": "input", "name": "g", "buffer": 3, "dtype": "f32",
             "dims": [{"name": "e", "size": grad}]},
            {"role": "output", "name": "c", "buffer": 2, "dtype": "f32", "dims": dims("i", "j")},
        ],
        "steps": steps,
    }
    with open(out, "w") as f:
        json.dump(program, f, indent=1)


if __name__ == "__main__":
    main()
