"""Prints a member of a .mprog (dotted path) as compact sorted JSON, or
"absent"."""
import json
import sys

value = json.load(open(sys.argv[1]))
for key in sys.argv[2].split("."):
    if not isinstance(value, dict) or key not in value:
        print("absent")
        sys.exit(0)
    value = value[key]
print(json.dumps(value, sort_keys=True))
