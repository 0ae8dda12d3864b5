"""Runs a command with its file-size limit (RLIMIT_FSIZE) set to BYTES.

    with_file_limit.py BYTES COMMAND [ARGS...]

A write past the limit fails with EFBIG, as on a full disk. Python itself
ignores SIGXFSZ and an ignored signal stays ignored across exec, so the
default (terminate) is restored first: the command sees the limit as it
would from a shell, and must ignore the signal itself to report the error.
"""
import os
import resource
import signal
import sys

limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
os.execvp(sys.argv[2], sys.argv[2:])
