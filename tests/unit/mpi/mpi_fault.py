#!/usr/bin/env python3
"""Injects a fault into one rank of an MPI job and checks that the job ends,
non-zero, in time (tests/runtime/mpi-fault.test):

    mpi_fault.py kill|stop|none RANK DELAY LIMIT -- COMMAND...

Starts COMMAND (an mpirun line) in its own session, waits DELAY seconds,
finds the process of MPI rank RANK among its children (by the
OMPI_COMM_WORLD_RANK or PMIX_RANK in /proc/PID/environ) and sends it SIGKILL
(kill) or SIGSTOP (stop), or nothing (none: the job must fail by itself).
Then waits up to LIMIT seconds for the job. The job's output passes through;
the last line says what happened:

    fault: job exited with code 1 within 30 s of the fault (5.1 s)
    fault: HANG: job still running 30 s after the fault

and the exit code is 0 only for the first. Every process the job started is
killed on the way out, whatever happened (a stopped one is continued first).
"""
import os
import signal
import subprocess
import sys
import time


def children(pid):
    """The pids of every descendant of `pid`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if parent == pid:
            found.append(int(entry))
    return found + [d for c in found for d in children(c)]


def mpi_rank(pid):
    """The MPI rank of process `pid`, or None."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            variables = f.read().split(b"\0")
    except OSError:
        return None
    for variable in variables:
        for name in (b"OMPI_COMM_WORLD_RANK=", b"PMIX_RANK="):
            if variable.startswith(name):
                return int(variable[len(name):])
    return None


def find_rank(job, rank, deadline):
    """The pid of rank `rank` of `job`, polling until `deadline`."""
    while time.monotonic() < deadline and job.poll() is None:
        for pid in children(job.pid):
            if mpi_rank(pid) == rank:
                return pid
        time.sleep(0.05)
    return None


def main(argv):
    if len(argv) < 7 or argv[5] != "--" or argv[1] not in ("kill", "stop",
                                                            "none"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, rank, delay, limit = argv[1], int(argv[2]), float(argv[3]), \
        float(argv[4])
    job = subprocess.Popen(argv[6:], start_new_session=True)
    started = []
    try:
        victim = None
        if mode != "none":
            victim = find_rank(job, rank, time.monotonic() + 20)
            if victim is None:
                print(f"fault: no process of rank {rank} found")
                return 1
            time.sleep(delay)
            if job.poll() is not None:
                print(f"fault: the job ended before the fault "
                      f"(code {job.returncode})")
                return 1
            started = children(job.pid)
            os.kill(victim, signal.SIGKILL if mode == "kill"
                    else signal.SIGSTOP)
        fault = time.monotonic()
        try:
            code = job.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            sys.stdout.flush()
            print(f"fault: HANG: job still running {limit:g} s after the fault")
            return 1
        sys.stdout.flush()
        print(f"fault: job exited with code {code} within {limit:g} s of "
              f"the fault ({time.monotonic() - fault:.1f} s)")
        return 0 if code != 0 else 1
    finally:
        for pid in started + children(job.pid):
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
        try:
            os.killpg(job.pid, signal.SIGKILL)
        except OSError:
            pass
        job.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
