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
llvm_config.add_tool_substitutions(["meshc", "meshc-opt", "meshrun"],
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
    if config.meshc_runtime_mpi == "ON" and shutil.which("mpirun"):
        config.available_features.add("mpi")
