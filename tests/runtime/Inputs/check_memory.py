# Reads meshrun's output and checks its summary line: the device memory
# resident after the run must lie within TOLERANCE (a fraction) of the plan.
#   check_memory.py TOLERANCE < meshrun-output
# Prints "memory: R of P planned (x.xx%): within" or exits 1 saying by how
# much it is off.
import re
import sys

UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def size(number, unit):
    return float(number) * UNITS[unit]


tolerance = float(sys.argv[1])
text = sys.stdin.read()
match = re.search(r"device memory ([0-9.]+) (\w+) resident of ([0-9.]+) (\w+) "
                  r"planned", text)
if not match:
    sys.exit("check_memory.py: no 'device memory' in meshrun's output:\n" + text)
resident = size(match.group(1), match.group(2))
planned = size(match.group(3), match.group(4))
off = abs(resident - planned) / planned
verdict = "within" if off <= tolerance else "OFF"
print(f"memory: {match.group(1)} {match.group(2)} of {match.group(3)} "
      f"{match.group(4)} planned ({off:.2%}): {verdict}")
sys.exit(0 if off <= tolerance else 1)
