"""Checks the outputs of Inputs/permute.mprog (meshrun --dump-outputs):
stage s's `shifted` row is stage s-1's `h` (stage 0's is the fill, -1), and
its `rotated` row is twice stage s+1's `h` (stage 3's: twice stage 0's)."""
import json
import sys

outputs = json.load(open(sys.argv[1]))["outputs"]


def rows(name):
    data = outputs[name]["data"]
    return [data[s * 8:(s + 1) * 8] for s in range(4)]


h, shifted, rotated = rows("h"), rows("shifted"), rows("rotated")
assert shifted[0] == [-1.0] * 8, shifted[0]
for s in range(1, 4):
    assert shifted[s] == h[s - 1], (s, shifted[s], h[s - 1])
for s in range(4):
    assert rotated[s] == [2 * v for v in h[(s + 1) % 4]], s
assert len({tuple(r) for r in h}) == 4, "the stages' rows must differ"
print("permutations match: shifted, rotated")
