"""Kills meshrun (SIGKILL) while it saves a checkpoint after every step, at
several moments, and checks that each time the checkpoint folder still
restores: the newest complete step is found, every shard matches its
checksum, and the run continues from it.

    kill_during_checkpoints.py MESHRUN PROGRAM DIR [--kills N]
"""
import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("meshrun")
parser.add_argument("program")
parser.add_argument("dir")
parser.add_argument("--kills", type=int, default=6)
args = parser.parse_args()

shutil.rmtree(args.dir, ignore_errors=True)
rng = random.Random(7)
restored = []
interrupted = 0
for kill in range(args.kills):
    run = subprocess.Popen(
        [args.meshrun, args.program, "--steps", "100000", "--quiet",
         "--checkpoint", args.dir, "--checkpoint-every", "1", "--keep-checkpoints", "2"]
        + (["--restore", args.dir] if restored else []),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # Wait for the first save of this run, then kill at a random moment.
    deadline = time.time() + 60
    while not os.path.exists(os.path.join(args.dir, "latest")):
        if time.time() > deadline or run.poll() is not None:
            sys.exit("kill_during_checkpoints.py: meshrun saved nothing")
        time.sleep(0.01)
    time.sleep(rng.uniform(0.05, 0.6))
    run.kill()
    run.wait()
    if any(name.endswith((".partial", ".tmp")) for name in os.listdir(args.dir)):
        interrupted += 1
    check = subprocess.run(
        [args.meshrun, args.program, "--steps", "0", "--restore", args.dir],
        capture_output=True, text=True)
    step = re.search(r"restored: .*step-(\d+) \(after step (\d+)", check.stdout)
    if check.returncode != 0 or not step:
        sys.exit(f"kill {kill + 1}: the checkpoint does not restore "
                 f"(exit {check.returncode}):\n{check.stdout}{check.stderr}")
    restored.append(int(step.group(1)))
print(f"{args.kills} kills: every checkpoint restored, steps never "
      f"decreasing: {restored == sorted(restored)}")
print(f"kills that left a save unfinished: {interrupted}", file=sys.stderr)
