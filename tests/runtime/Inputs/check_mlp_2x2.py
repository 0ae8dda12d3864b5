# Recomputes mlp-2x2.mprog on the global tensors in double precision (seed
# from argv[2]) and compares with meshrun's --dump-outputs file (argv[1]).
import json
import math
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(__file__))
from random_reference import normal, uniform_int  # noqa: E402

seed = int(sys.argv[2])
batch, io, hidden = 4, 6, 4
x = normal(seed, "x", batch * io)
w = normal(seed, "w", io * hidden, 0.0, 0.5)
labels = uniform_int(seed, "labels", batch, 0, hidden)

h = [max(0.0, sum(x[b * io + i] * w[i * hidden + j] for i in range(io)))
     for b in range(batch) for j in range(hidden)]
probs, losses = [], []
for b in range(batch):
    row = h[b * hidden:(b + 1) * hidden]
    top = max(row)
    total = sum(math.exp(v - top) for v in row)
    probs += [math.exp(v - top) / total for v in row]
    losses.append(top + math.log(total) - row[labels[b]])
expected = {"h": h, "probs": probs, "loss": [sum(losses) / batch]}

outputs = json.load(open(sys.argv[1]))["outputs"]
for name, values in expected.items():
    got = outputs[name]["data"]
    assert len(got) == len(values), (name, len(got), len(values))
    for i, (a, b) in enumerate(zip(got, values)):
        if abs(a - b) > 1e-5 * max(1.0, abs(b)):
            sys.exit(f"{name}[{i}]: meshrun {a} != reference {b}")
print("outputs match the reference: " + ", ".join(sorted(expected)))
