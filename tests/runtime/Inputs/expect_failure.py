"""Runs a command that must fail, and must fail in time (an MPI job that
hangs instead of failing is a bug): expect_failure.py SECONDS COMMAND...

The command's output passes through; then prints "failed with exit code N"
and exits 0 when it exited non-zero within SECONDS, else prints what went
wrong ("succeeded" or "timed out after S s", killing it) and exits 1.
"""
import subprocess
import sys


def main(argv):
    if len(argv) < 3:
        print("usage: expect_failure.py SECONDS COMMAND...", file=sys.stderr)
        return 2
    seconds = float(argv[1])
    process = subprocess.Popen(argv[2:], start_new_session=True)
    try:
        code = process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        sys.stdout.flush()
        print(f"timed out after {argv[1]} s")
        return 1
    sys.stdout.flush()
    if code == 0:
        print("succeeded")
        return 1
    print(f"failed with exit code {code}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
