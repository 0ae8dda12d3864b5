"""Reads meshrun's last "eval after step S: ... accuracy A" line and checks
A >= the given bound; exits 1 (with the line) otherwise."""
import re
import sys

path, bound = sys.argv[1], float(sys.argv[2])
evals = [line for line in open(path) if line.startswith("eval after step")]
if not evals:
    sys.exit(f"check_accuracy: no eval line in {path}")
match = re.search(r"accuracy ([0-9.]+)", evals[-1])
if not match:
    sys.exit(f"check_accuracy: no accuracy in: {evals[-1].strip()}")
accuracy = float(match.group(1))
if accuracy < bound:
    sys.exit(f"check_accuracy: held-out accuracy {accuracy} < {bound}: {evals[-1].strip()}")
print(f"held-out accuracy {accuracy} >= {bound}: OK")
