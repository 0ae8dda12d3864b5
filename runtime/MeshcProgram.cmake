# MeshcProgram: the .mprog loader on its own (parsing, validation and each
# step's scratch plan: einsum plans, fused-step programs), with no BLAS,
# threads or devices. MeshcRuntime builds on it, and meshc links it so that
# --explain reports the scratch the runtime will size. Included by
# runtime/CMakeLists.txt, and by the top level in a compiler-only build
# (-DMESHC_BUILD_RUNTIME=OFF).
set(meshc_program_dir ${CMAKE_CURRENT_LIST_DIR})
add_library(MeshcProgram STATIC
  ${meshc_program_dir}/Attention.cpp
  ${meshc_program_dir}/EinsumPlan.cpp
  ${meshc_program_dir}/FusedStep.cpp
  ${meshc_program_dir}/JsonNode.cpp
  ${meshc_program_dir}/Loader.cpp
  ${meshc_program_dir}/PerDeviceSizes.cpp
  ${meshc_program_dir}/Program.cpp
  ${meshc_program_dir}/StartedCollectives.cpp
  ${meshc_program_dir}/StepLoader.cpp
)
target_compile_features(MeshcProgram PUBLIC cxx_std_17)
# -fexceptions: the loader reports through RuntimeError even where the
# including build (LLVM's options) turns exceptions off by default.
target_compile_options(MeshcProgram PRIVATE -Werror=switch -fexceptions)
target_include_directories(MeshcProgram PUBLIC
  $<BUILD_INTERFACE:${meshc_program_dir}/..>)
set_target_properties(MeshcProgram PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_link_libraries(MeshcProgram
  PUBLIC MeshcCore
  PRIVATE $<BUILD_INTERFACE:nlohmann_json::nlohmann_json>)
