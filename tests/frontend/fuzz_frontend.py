#!/usr/bin/env python3
"""Robustness check of the .mtf frontend (run by robustness.test).

Feeds meshc inputs that no one would write on purpose: random bytes, random
token soup, truncations of the examples, a ~10 MB file, 100k nested
parentheses, 100k unary minus signs, a multi-megabyte line, NUL bytes and
invalid UTF-8. Every run must end within a timeout with exit status 0 (a
valid program, printed) or 1 with a located diagnostic `FILE:LINE:COL: error:`
on stderr; inputs known to be invalid must give 1. A signal (crash, stack
overflow), a timeout or an unlocated error fails the check.

Usage: fuzz_frontend.py MESHC EXAMPLES_DIR WORK_DIR
Standard library only; the random inputs come from a fixed seed.
"""

import concurrent.futures
import os
import random
import re
import subprocess
import sys

SEED = 20240611
TIMEOUT_S = 120
RANDOM_BYTE_CASES = 100
TOKEN_SOUP_CASES = 200

# Tokens the language knows, and a few it does not, for the token soup.
TOKENS = (
    "dim input param output train with def return repeat batch seq d x y w "
    "f32 bf16 i32 f16 einsum relu gelu exp sum mean max maximum softmax "
    "softmax_cross_entropy rename constrain cast normal zeros adam lr "
    "= : , ( ) [ ] { } -> + - * / 0 1 64 2.5 1e-3 # \n \n \n @ $"
).split(" ")


def located_error(path):
    """The pattern every failing run must print: 'PATH:LINE:COL: error: '."""
    return re.compile(r"^" + re.escape(path) + r":\d+:\d+: error: ", re.M)


class Case:
    """One input file and what its run may end with."""

    def __init__(self, name, data, must_fail):
        self.name = name
        self.data = data
        self.must_fail = must_fail


def run_case(meshc, work_dir, case):
    """Runs meshc on one case; returns None when it behaved, else why not."""
    path = os.path.join(work_dir, case.name + ".mtf")
    with open(path, "wb") as f:
        f.write(case.data)
    try:
        result = subprocess.run([meshc, path, "--emit=mtf"],
                                stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"{case.name}: no answer within {TIMEOUT_S} s"
    stderr = result.stderr.decode("utf-8", "replace")
    if result.returncode < 0:
        return f"{case.name}: killed by signal {-result.returncode}\n{stderr[-2000:]}"
    if result.returncode == 0:
        if case.must_fail:
            return f"{case.name}: accepted an invalid input"
        return None
    if result.returncode != 1:
        return f"{case.name}: exit status {result.returncode}\n{stderr[-2000:]}"
    if not located_error(path).search(stderr):
        return f"{case.name}: no 'file:line:col: error:' in\n{stderr[-2000:]}"
    return None


def make_cases(examples_dir, rng):
    cases = []
    for i in range(RANDOM_BYTE_CASES):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 2000)))
        # Random bytes are valid only by a miracle; do not assert either way.
        cases.append(Case(f"random-bytes-{i}", data, must_fail=False))
    for i in range(TOKEN_SOUP_CASES):
        words = [rng.choice(TOKENS) for _ in range(rng.randrange(1, 300))]
        cases.append(Case(f"token-soup-{i}", " ".join(words).encode(),
                          must_fail=False))

    for example in ("mlp/mlp.mtf", "transformer/block.mtf"):
        with open(os.path.join(examples_dir, example), "rb") as f:
            text = f.read()
        stem = example.split("/")[0]
        # Every prefix would cost a process start each (~3,000); a stride of
        # 7 plus the last 64 (the end of file inside the final statements)
        # keeps every kind of truncation point at a fraction of the time.
        lengths = sorted(set(range(0, len(text) + 1, 7)) |
                         set(range(max(0, len(text) - 64), len(text) + 1)))
        for length in lengths:
            cases.append(Case(f"prefix-{stem}-{length}", text[:length],
                              must_fail=False))

    # ~10 MB of valid statements, then one invalid line at the very end.
    block = ("dim d{0} = 4\ninput x{0} : f32[d{0}]\n"
             "y{0} = relu(x{0}) * 2 + x{0}   # a comment to make it longer\n")
    lines, size, i = [], 0, 0
    while size < 10 * 1024 * 1024:
        lines.append(block.format(i))
        size += len(lines[-1])
        i += 1
    lines.append("y0 = x0 @ x0\n")
    cases.append(Case("ten-megabytes", "".join(lines).encode(), must_fail=True))

    prelude = "dim a = 2\ninput x : f32[a]\n"
    depth = 100000
    cases.append(Case("nested-parentheses",
                      (prelude + "y = " + "(" * depth + "x" + ")" * depth +
                       "\n").encode(), must_fail=True))
    cases.append(Case("unclosed-parentheses",
                      (prelude + "y = " + "(" * depth).encode(), must_fail=True))
    cases.append(Case("unary-minus",
                      (prelude + "y = " + "-" * depth + "x\n").encode(),
                      must_fail=True))
    cases.append(Case("nested-calls",
                      (prelude + "y = " + "relu(" * depth + "x" + ")" * depth +
                       "\n").encode(), must_fail=True))
    cases.append(Case("binary-chain",
                      (prelude + "y = x" + " + x" * depth + "\n").encode(),
                      must_fail=True))
    # A 1.5 MB line: a type listing one dimension 500k times.
    cases.append(Case("long-line",
                      (prelude + "input z : f32[" + "a, " * 500000 + "b]\n")
                      .encode(), must_fail=True))
    cases.append(Case("long-name",
                      (prelude + "y = " + "n" * 1000000 + "\n").encode(),
                      must_fail=True))
    cases.append(Case("nul-bytes", prelude.encode() + b"y = x\0 + x\n\0\0",
                      must_fail=True))
    cases.append(Case("only-nul", b"\0" * 1000, must_fail=True))
    cases.append(Case("invalid-utf8",
                      prelude.encode() + b"y = \xc3\x28 + \xff\xfe\n",
                      must_fail=True))
    cases.append(Case("truncated-utf8", prelude.encode() + b"y = \xe2\x82",
                      must_fail=True))
    return cases


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    meshc, examples_dir, work_dir = sys.argv[1:]
    os.makedirs(work_dir, exist_ok=True)
    cases = make_cases(examples_dir, random.Random(SEED))
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        problems = [p for p in pool.map(
            lambda case: run_case(meshc, work_dir, case), cases) if p]
    for problem in problems:
        print("FAIL:", problem)
    print(f"fuzz_frontend: {len(cases)} inputs, {len(problems)} problems")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
