# lit configuration for meshc: parsing/printing round trips, pass tests,
# -verify-diagnostics error tests and driver tests.
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "meshc"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".mtf", ".test"]
config.excludes = ["Inputs", "unit", "CMakeLists.txt", "lit.cfg.py",
                   "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.meshc_obj_root, "tests")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(["meshc", "meshc-opt", "meshrun", "meshc-calibrate"],
                                   [config.meshc_tools_dir])
config.substitutions.append(("%examples",
                             os.path.join(config.meshc_src_root, "examples")))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%scripts",
                             os.path.join(config.meshc_src_root, "scripts")))
config.environment["FILECHECK_OPTS"] = "-enable-var-scope"

# Runtime tests need meshrun, which a compiler-only build
# (-DMESHC_BUILD_RUNTIME=OFF) does not have.
if os.path.exists(os.path.join(config.meshc_tools_dir, "meshrun")):
    config.available_features.add("meshrun")
    # MPI runtime tests need mpirun and a meshrun built with the MPI transport.
    import shutil
    # meshrun built with the CUDA backend (cuda/): "cuda" is registered.
    if getattr(config, "meshc_cuda", "OFF") == "ON":
        config.available_features.add("cuda")
    if config.meshc_runtime_mpi == "ON" and shutil.which("mpirun"):
        config.available_features.add("mpi")

# The outside oracle (tests/oracle/, docs/testing.md): JAX in the venv that
# scripts/setup_python.sh makes at .venv/. %jaxpython is its interpreter; the
# feature `jax` says it has jax and jaxlib. (Looked up with find_spec, ~40 ms:
# a full `import jax` takes ~1.5 s, and ctest starts lit once per test file.)
jax_python = os.path.join(config.meshc_src_root, ".venv", "bin", "python")
config.substitutions.append(("%jaxpython", jax_python))
if os.path.exists(jax_python):
    import subprocess
    try:
        has_jax = subprocess.run(
            [jax_python, "-c",
             "import importlib.util as u, sys; "
             "sys.exit(not all(u.find_spec(m) for m in ('jax', 'jaxlib', 'numpy')))"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        has_jax = False
    if has_jax:
        config.available_features.add("jax")

# The real data sets of scripts/fetch_data.sh (docs/data.md); %data is their
# folder.
data_dir = os.path.join(config.meshc_src_root, "data")
config.substitutions.append(("%data", data_dir))
if os.path.exists(os.path.join(data_dir, "digits", "train_x.npy")):
    config.available_features.add("digits")
if os.path.exists(os.path.join(data_dir, "fortunes", "train_tokens.npy")):
    config.available_features.add("fortunes")
