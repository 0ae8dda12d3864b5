# .npy files for the training tests, without numpy, and checks of what
# meshrun wrote. Subcommands:
#   linreg OUT_X OUT_Y N SEED   N examples x ~ normal(0, 1) (3 features),
#                               y = x . [1, -2, 0.5]
#   falls CSV COLUMN            the column's last value is < 1/10 of its first
#   csv CSV STEPS               the header and one row per step
#   svg FILE                    a well-formed SVG with a polyline
#   same DIR1 DIR2              both hold the same .npy files, byte for byte
#   close CSV1 CSV2 COLUMN TOL  the column agrees within TOL (relative)
#   replicas OUT.json NAME      whether the rows of output NAME are identical
import csv
import json
import os
import struct
import sys
import xml.etree.ElementTree as ElementTree

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(__file__))
from random_reference import normal  # noqa: E402


def write_npy(path, descr, shape, values):
    shape_repr = "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_repr)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    code = {"<f4": "f", "<i4": "i"}[descr]
    data = b"".join(struct.pack("<" + code, v) for v in values)
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data)


def linreg(out_x, out_y, n, seed):
    x = normal(seed, "x", n * 3)
    y = [x[3 * i] - 2 * x[3 * i + 1] + 0.5 * x[3 * i + 2] for i in range(n)]
    write_npy(out_x, "<f4", (n, 3), x)
    write_npy(out_y, "<f4", (n,), y)


def column(path, name):
    with open(path) as f:
        return [float(row[name]) for row in csv.DictReader(f)]


def main(command, *args):
    if command == "linreg":
        linreg(args[0], args[1], int(args[2]), int(args[3]))
    elif command == "falls":
        values = column(args[0], args[1])
        if not values[-1] < values[0] / 10:
            sys.exit(f"{args[1]} does not fall: {values[0]} -> {values[-1]}")
        print(f"{args[1]} falls over {len(values)} steps")
    elif command == "csv":
        with open(args[0]) as f:
            rows = list(csv.reader(f))
        print("header: " + ",".join(rows[0]))
        print(f"rows: {len(rows) - 1}, steps {rows[1][0]}..{rows[-1][0]}")
        evals = [row[0] for row in rows[1:] if row[-1] != ""]
        print("eval rows: " + " ".join(evals))
    elif command == "svg":
        root = ElementTree.parse(args[0]).getroot()
        ns = "{http://www.w3.org/2000/svg}"
        lines = root.findall(f".//{ns}polyline")
        points = len(lines[0].get("points").split()) if lines else 0
        markers = len(root.findall(f"{ns}circle"))
        texts = [t.text for t in root.findall(f"{ns}text")]
        print(f"svg: {root.tag[len(ns):]}, {points} points, {markers} markers, "
              f"labels {texts[0]!r} ... {texts[-1]!r}")
    elif command == "same":
        names = sorted(os.listdir(args[0]))
        if names != sorted(os.listdir(args[1])):
            sys.exit(f"different files: {names} vs {sorted(os.listdir(args[1]))}")
        for name in names:
            with open(os.path.join(args[0], name), "rb") as a, \
                    open(os.path.join(args[1], name), "rb") as b:
                if a.read() != b.read():
                    sys.exit(f"{name} differs")
        print("same params: " + " ".join(names))
    elif command == "close":
        a, b = column(args[0], args[2]), column(args[1], args[2])
        tolerance = float(args[3])
        assert len(a) == len(b), (len(a), len(b))
        for i, (u, v) in enumerate(zip(a, b)):
            if abs(u - v) > tolerance * max(abs(u), abs(v), 1e-3):
                sys.exit(f"row {i}: {u} != {v}")
        print(f"{args[2]} agrees on {len(a)} rows")
    elif command == "replicas":
        output = json.load(open(args[0]))["outputs"][args[1]]
        width = output["shape"][1]
        data = output["data"]
        rows = [data[i:i + width] for i in range(0, len(data), width)]
        print("replicas " + ("identical" if all(r == rows[0] for r in rows) else "differ"))
    else:
        sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    main(*sys.argv[1:])
