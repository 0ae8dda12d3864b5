# Writes a .npy file (format 1.0) without numpy:
#   write_npy.py OUT DESCR SHAPE VALUE...
# DESCR is the dtype as numpy spells it ('<f4', '<i4', '<f8'), SHAPE is
# comma-separated ('2,3'; '' for a scalar), VALUEs are the elements in C order.
import struct
import sys

out, descr, shape_text, *values = sys.argv[1:]
shape = tuple(int(s) for s in shape_text.split(",") if s)
shape_repr = "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"
header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_repr)
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
code = {"<f4": "f", "<i4": "i", "<f8": "d"}[descr]
number = float if code in "fd" else int
data = b"".join(struct.pack("<" + code, number(v)) for v in values)
with open(out, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data)
