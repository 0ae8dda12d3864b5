#!/usr/bin/env python3
"""The install test (docs/testing.md): install a meshc build into a fresh
prefix, build tests/install/consumer against it with find_package(meshc),
compile a model with the installed meshc and, through meshc::compile, with the
consumer (the same program), and run it through the consumer and through the
installed meshrun with the same seed and steps. The scalar outputs must agree. Everything it writes is under --work (in the build tree)."""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys

MESH, LAYOUT, STEPS, SEED = "b:2", "batch:b", 2, 7


def run(cmd, **kwargs):
    """Runs `cmd`; on failure prints its output and exits 1."""
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, **kwargs)
    if result.returncode != 0:
        sys.exit(f"embed_test: failed ({result.returncode}): {' '.join(cmd)}\n"
                 f"{result.stdout}")
    return result.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", required=True, help="the meshc build to install")
    parser.add_argument("--work", required=True, help="scratch folder (emptied)")
    parser.add_argument("--consumer", required=True, help="tests/install/consumer")
    parser.add_argument("--model", required=True, help="the .mtf to compile")
    parser.add_argument("--cmake", required=True)
    parser.add_argument("--generator", required=True)
    parser.add_argument("--cxx", required=True)
    parser.add_argument("--launcher", default="")
    # The build's own compile and link flags (a sanitizer build's
    # -fsanitize=..., which the installed static runtime needs at link time).
    parser.add_argument("--cxx-flags", default="")
    parser.add_argument("--linker-flags", default="")
    args = parser.parse_args()

    shutil.rmtree(args.work, ignore_errors=True)
    prefix = os.path.join(args.work, "prefix")
    consumer_build = os.path.join(args.work, "consumer")
    os.makedirs(args.work)

    run([args.cmake, "--install", args.build, "--prefix", prefix])
    for path in ["bin/meshc", "bin/meshc-opt", "bin/meshrun", "bin/meshc-calibrate",
                 "include/meshc/runtime/Session.h",
                 "include/meshc/compiler/driver/Compile.h",
                 "include/meshc/runtime/core/layout/Mesh.h"]:
        if not os.path.exists(os.path.join(prefix, path)):
            sys.exit(f"embed_test: not installed: {path}")

    configure = [args.cmake, "-G", args.generator, "-S", args.consumer,
                 "-B", consumer_build, "-DCMAKE_BUILD_TYPE=Release",
                 f"-DCMAKE_PREFIX_PATH={prefix}", f"-DCMAKE_CXX_COMPILER={args.cxx}"]
    if args.launcher:
        configure.append(f"-DCMAKE_CXX_COMPILER_LAUNCHER={args.launcher}")
    if args.cxx_flags:
        configure.append(f"-DCMAKE_CXX_FLAGS={args.cxx_flags}")
    if args.linker_flags:
        configure.append(f"-DCMAKE_EXE_LINKER_FLAGS={args.linker_flags}")
    run(configure)
    run([args.cmake, "--build", consumer_build])

    mprog = os.path.join(args.work, "model.mprog")
    run([os.path.join(prefix, "bin", "meshc"), args.model, "--mesh", MESH,
         "--layout", LAYOUT, "-o", mprog])

    # The compiler installed (find_package(meshc), meshc::compiler): a
    # program calling meshc::compile writes the same program.
    compiler = os.path.join(consumer_build, "compile")
    if not os.path.exists(compiler):
        sys.exit("embed_test: the consumer did not build 'compile' "
                 "(no meshc::compiler in the installed package)")
    embedded_mprog = os.path.join(args.work, "embedded.mprog")
    print(run([compiler, args.model, MESH, LAYOUT, embedded_mprog]), end="")
    with open(mprog) as f, open(embedded_mprog) as g:
        if json.load(f) != json.load(g):
            sys.exit("embed_test: meshc::compile wrote another program than "
                     "the installed meshc")
    print("meshc::compile == meshc -o")

    embedded = {}
    printed = run([os.path.join(consumer_build, "embed"), mprog, str(STEPS),
                   str(SEED)])
    print(printed, end="")
    for line in printed.splitlines():
        if " = " in line:
            name, value = line.split(" = ")
            embedded[name] = float(value)

    dump = os.path.join(args.work, "meshrun-outputs.json")
    run([os.path.join(prefix, "bin", "meshrun"), mprog, "--steps", str(STEPS),
         "--seed", str(SEED), "--quiet", "--dump-outputs", dump])
    with open(dump) as f:
        outputs = json.load(f)["outputs"]
    expected = {name: out["data"][0] if isinstance(out["data"], list) else out["data"]
                for name, out in outputs.items() if not out["shape"]}

    if not expected or sorted(expected) != sorted(embedded):
        sys.exit(f"embed_test: scalar outputs differ: embedded {sorted(embedded)}, "
                 f"meshrun {sorted(expected)}")
    for name, value in expected.items():
        if not math.isclose(embedded[name], value, rel_tol=1e-6, abs_tol=1e-7):
            sys.exit(f"embed_test: {name}: embedded {embedded[name]!r} != "
                     f"meshrun {value!r}")
        print(f"{name}: embedded {embedded[name]!r} == meshrun {value!r}")


if __name__ == "__main__":
    main()
