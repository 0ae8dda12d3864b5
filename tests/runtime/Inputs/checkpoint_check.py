"""Checks for the checkpoint and trace lit tests (no numpy needed).

  checkpoint_check.py data X.npy LABELS.npy N SEED
      a dataset for examples/mlp: N random 64-pixel images (f32 [N, 64]) and
      labels (i32 [N], 10 classes) that depend on the pixels
  checkpoint_check.py same A.csv B.csv FIRST LAST
      the rows of steps FIRST..LAST of two meshrun --csv logs agree exactly
      in every column but time_s
  checkpoint_check.py close A.csv B.csv STEP RTOL
      the loss of step STEP agrees to RTOL (relative)
  checkpoint_check.py flip FILE OFFSET
      flips one bit of byte OFFSET of FILE (a corrupt checkpoint)
  checkpoint_check.py trace TRACE.json MODEL.mprog RUNS DEVICES
      a meshrun --trace file: one complete event per step per device per run,
      its categories, and bytes on every collective
"""
import json
import random
import struct
import sys


def write_npy(path, code, descr, shape, values):
    shape_repr = "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_repr)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), code), *values))


def data(out_x, out_labels, n, seed):
    rng = random.Random(int(seed))
    n = int(n)
    pixels, labels = [], []
    for _ in range(n):
        image = [rng.random() for _ in range(64)]
        labels.append(max(range(10), key=lambda c: sum(image[c * 6:c * 6 + 6])))
        pixels.extend(image)
    write_npy(out_x, "f", "<f4", [n, 64], pixels)
    write_npy(out_labels, "i", "<i4", [n], labels)
    return 0


def rows(path):
    with open(path) as f:
        lines = f.read().splitlines()
    header = lines[0].split(",")
    keep = [i for i, name in enumerate(header) if name != "time_s"]
    table = {}
    for line in lines[1:]:
        cells = line.split(",")
        table[int(cells[0])] = [cells[i] for i in keep]
    return header, table


def same(a, b, first, last):
    _, rows_a = rows(a)
    _, rows_b = rows(b)
    for step in range(int(first), int(last) + 1):
        if rows_a.get(step) != rows_b.get(step):
            print(f"step {step} differs: {rows_a.get(step)} vs {rows_b.get(step)}")
            return 1
    print(f"identical on steps {first}..{last}")
    return 0


def close(a, b, step, rtol):
    header, rows_a = rows(a)
    _, rows_b = rows(b)
    column = [name for name in header if name != "time_s"].index("loss")
    x = float(rows_a[int(step)][column])
    y = float(rows_b[int(step)][column])
    if abs(x - y) > float(rtol) * abs(x):
        print(f"step {step} loss {x} vs {y}")
        return 1
    print(f"step {step} loss agrees to {rtol}")
    return 0


def flip(path, offset):
    with open(path, "r+b") as f:
        f.seek(int(offset))
        byte = f.read(1)
        f.seek(int(offset))
        f.write(bytes([byte[0] ^ 0x01]))
    return 0


def trace(path, model, runs, devices):
    with open(path) as f:
        document = json.load(f)
    with open(model) as f:
        steps = len(json.load(f)["steps"])
    runs, devices = int(runs), int(devices)
    events = [e for e in document["traceEvents"] if e["ph"] == "X"]
    expected = runs * steps * devices
    print(f"events: {len(events)} (expected {expected})")
    per_device = {}
    for event in events:
        per_device[event["tid"]] = per_device.get(event["tid"], 0) + 1
    print("tids:", " ".join(str(t) for t in sorted(per_device)))
    print("pids:", " ".join(str(p) for p in sorted({e["pid"] for e in events})))
    print("per device:", sorted(set(per_device.values())))
    categories = {}
    for event in events:
        categories[event["cat"]] = categories.get(event["cat"], 0) + 1
    print("categories:", " ".join(sorted(categories)))
    # (A wait completes a started collective; it moves no bytes itself.)
    collectives = [e for e in events
                   if e["cat"] == "collective" and e["name"] != "wait"]
    with_bytes = [e for e in collectives if e["args"].get("bytes", 0) > 0]
    print(f"collectives: {len(collectives)}, with bytes: {len(with_bytes)}")
    print("runs:", " ".join(str(r) for r in sorted({e["args"]["run"] for e in events})))
    names = sorted(e["args"]["name"] for e in document["traceEvents"]
                   if e["ph"] == "M" and e["name"] == "thread_name")
    print("threads:", "; ".join(names))
    return 0


if __name__ == "__main__":
    commands = {"data": data, "same": same, "close": close, "flip": flip, "trace": trace}
    sys.exit(commands[sys.argv[1]](*sys.argv[2:]))
