# What `cmake --install` puts where (docs/runtime.md#embedding-the-runtime):
# the tools (meshc, meshc-opt, meshrun), the runtime's static libraries and
# their public headers under include/meshc/ with the paths the source tree
# spells ("runtime/Session.h"), and the CMake package `meshc`
# (meshcConfig.cmake: targets meshc::runtime, meshc::program, meshc::core,
# meshc::cuda, meshc::meshc, meshc::meshc-opt, meshc::meshrun).
#
# Included at the end of the top-level CMakeLists.txt, and by
# runtime/CMakeLists.txt when the runtime is configured alone; it installs whichever of the targets
# below the build has. Moving a library or a header means editing the tables
# here: the header lists and the target table. The compiler's own libraries
# (add_mlir_library ... DISABLE_INSTALL) live inside meshc and stay out.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The package version (meshcConfigVersion.cmake); the .mprog format has its
# own (kMprogVersion).
set(MESHC_PACKAGE_VERSION 0.1.0)
set(MESHC_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/meshc)
set(MESHC_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/meshc)

# The headers a program embedding the runtime includes, and every project
# header those include (tests/install compiles them all against the installed
# tree alone), relative to the repository root.
set(MESHC_PUBLIC_HEADERS
  runtime/Attention.h
  runtime/core/layout/AxisWeights.h
  runtime/core/layout/Error.h
  runtime/core/layout/LayoutRules.h
  runtime/core/layout/Mesh.h
  runtime/core/layout/TensorLayout.h
  runtime/Collectives.h
  runtime/Dataset.h
  runtime/Device.h
  runtime/ElementFunctions.h
  runtime/DType.h
  runtime/FusedStep.h
  runtime/Error.h
  runtime/Loader.h
  runtime/Meshrun.h
  runtime/Npy.h
  runtime/ProcessGroup.h
  runtime/Program.h
  runtime/core/ElementFunctions.def
  runtime/core/Random.h
  runtime/core/StepKinds.def
  runtime/core/StepKinds.h
  runtime/Session.h
  runtime/Trace.h
)
# With the compiler: its compile API (meshc::compile, CompileOptions,
# CompileResult; docs/architecture.md) and what those headers include. They
# include MLIR's headers too, which meshcConfig.cmake finds.
set(MESHC_COMPILER_PUBLIC_HEADERS
  compiler/driver/Compile.h
  compiler/driver/Registration.h
  compiler/passes/Choices.h
  compiler/passes/Remat.h
  compiler/passes/Schedule.h
)
# With the CUDA backend: registerCudaBackend() and what its header includes.
set(MESHC_CUDA_PUBLIC_HEADERS
  cuda/CudaBackend.h
  cuda/CudaCollectives.h
  runtime/cpu/CpuCollectives.h
)

# Build target -> exported name (meshc::<name>). Executables are exported
# too, so a consumer can run $<TARGET_FILE:meshc::meshc> in its build.
set(MESHC_INSTALL_TARGETS
  MeshcCore=core
  MeshcProgram=program
  MeshcRuntime=runtime
  MeshcCuda=cuda
  MeshcDriver=compiler
  MeshcInterpreter=compiler-interpreter
  MeshcRegistration=compiler-registration
  MeshcLowering=compiler-lowering
  MeshcFrontend=compiler-frontend
  MeshcPasses=compiler-passes
  MeshcMtfDialect=compiler-dialect
  meshrun=meshrun
  meshc-calibrate=meshc-calibrate
  meshc=meshc
  meshc-opt=meshc-opt
)

get_filename_component(meshc_root ${CMAKE_CURRENT_LIST_DIR}/.. ABSOLUTE)
set(meshc_libraries)
set(meshc_executables)
foreach(entry ${MESHC_INSTALL_TARGETS})
  string(REPLACE "=" ";" pair ${entry})
  list(GET pair 0 target)
  list(GET pair 1 export_name)
  if(NOT TARGET ${target})
    continue()
  endif()
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${export_name})
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "EXECUTABLE")
    list(APPEND meshc_executables ${target})
  else()
    list(APPEND meshc_libraries ${target})
  endif()
endforeach()

# meshc and meshc-opt load libMLIR/libLLVM from LLVM's own directory, which
# Debian does not put on the loader's path.
foreach(tool meshc meshc-opt)
  if(TARGET ${tool})
    set_property(TARGET ${tool} APPEND PROPERTY INSTALL_RPATH
                 ${LLVM_LIBRARY_DIR})
  endif()
endforeach()

install(TARGETS ${meshc_libraries}
  EXPORT meshcTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${MESHC_INSTALL_INCLUDEDIR})
install(TARGETS ${meshc_executables}
  EXPORT meshcTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(meshc_headers ${MESHC_PUBLIC_HEADERS})
set(MESHC_INSTALL_COMPILER OFF)
if(TARGET MeshcDriver)
  set(MESHC_INSTALL_COMPILER ON)
  list(APPEND meshc_headers ${MESHC_COMPILER_PUBLIC_HEADERS})
  # The compiler's libraries take their include folders from their
  # directories (include_directories): the installed ones get meshc's.
  target_include_directories(MeshcDriver INTERFACE
    $<INSTALL_INTERFACE:${MESHC_INSTALL_INCLUDEDIR}>)
endif()
set(MESHC_INSTALL_CUDA OFF)
set(MESHC_INSTALL_NCCL OFF)
if(TARGET MeshcCuda)
  set(MESHC_INSTALL_CUDA ON)
  list(APPEND meshc_headers ${MESHC_CUDA_PUBLIC_HEADERS})
  if(MESHC_NCCL_LIBRARY AND MESHC_NCCL_INCLUDE_DIR)
    set(MESHC_INSTALL_NCCL ON)
    # Hints for meshcConfig.cmake's search.
    get_filename_component(MESHC_NCCL_LIBRARY_DIR ${MESHC_NCCL_LIBRARY}
                           DIRECTORY)
  endif()
endif()
list(REMOVE_DUPLICATES meshc_headers)
foreach(header ${meshc_headers})
  get_filename_component(dir ${header} DIRECTORY)
  install(FILES ${meshc_root}/${header}
          DESTINATION ${MESHC_INSTALL_INCLUDEDIR}/${dir})
endforeach()

if(NOT DEFINED MESHC_RUNTIME_MPI)
  set(MESHC_RUNTIME_MPI OFF)
endif()
if(NOT DEFINED MESHC_RUNTIME_DNNL)
  set(MESHC_RUNTIME_DNNL OFF)
endif()
install(EXPORT meshcTargets
  NAMESPACE meshc::
  FILE meshcTargets.cmake
  DESTINATION ${MESHC_INSTALL_CMAKEDIR})
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/meshcConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/meshcConfig.cmake
  INSTALL_DESTINATION ${MESHC_INSTALL_CMAKEDIR})
write_basic_package_version_file(
  ${CMAKE_CURRENT_BINARY_DIR}/meshcConfigVersion.cmake
  VERSION ${MESHC_PACKAGE_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/meshcConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/meshcConfigVersion.cmake
  DESTINATION ${MESHC_INSTALL_CMAKEDIR})
