#!/usr/bin/env bash
# Copies what a runtime-only build needs besides CMake, a compiler and CUDA
# into DIR, for a GPU machine that has no package manager access (no
# nlohmann-json3-dev, libgtest-dev, libopenblas-dev or libhwy-dev there):
#   DIR/include/nlohmann, DIR/cmake/nlohmann_json   the header-only JSON library
#   DIR/src/googletest                              GoogleTest's sources
#   DIR/lib, DIR/include/openblas                   OpenBLAS (libopenblas.so.0
#                                                   and its libgfortran and
#                                                   libquadmath; glibc >= 2.34)
#   DIR/include/hwy, DIR/lib/libhwy.so.1,           Highway (the CPU's SIMD
#   DIR/cmake/hwy                                   math)
# run_all.sh gpu uses them only where the GPU machine lacks its own.
#
# usage: bench/gpu/stage_deps.sh DIR     (on a Debian/Ubuntu machine with the
#                                         four -dev packages installed)
set -euo pipefail
deps="${1:?usage: stage_deps.sh DIR}"
mkdir -p "$deps/include" "$deps/cmake/nlohmann_json" "$deps/src" "$deps/lib" \
         "$deps/include/openblas"
cp -r /usr/include/nlohmann "$deps/include/"
version="$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")/\1/p' \
  /usr/share/cmake/nlohmann_json/nlohmann_jsonConfigVersion.cmake)"
cat > "$deps/cmake/nlohmann_json/nlohmann_jsonConfig.cmake" <<CONFIG
# Staged by bench/gpu/stage_deps.sh: nlohmann/json $version, header only.
if(NOT TARGET nlohmann_json::nlohmann_json)
  add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
  set_target_properties(nlohmann_json::nlohmann_json PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "\${CMAKE_CURRENT_LIST_DIR}/../../include")
endif()
CONFIG
cp /usr/share/cmake/nlohmann_json/nlohmann_jsonConfigVersion.cmake \
   "$deps/cmake/nlohmann_json/"
cp -r /usr/src/googletest "$deps/src/"
multiarch="$(gcc -print-multiarch)"
openblas="$(readlink -f "/usr/lib/$multiarch/libopenblas.so.0")"
cp "$openblas" "$deps/lib/libopenblas.so.0"
ln -sf libopenblas.so.0 "$deps/lib/libopenblas.so"
for lib in libgfortran.so.5 libquadmath.so.0; do
  cp "$(readlink -f "/lib/$multiarch/$lib")" "$deps/lib/$lib"
done
cp /usr/include/"$multiarch"/openblas-pthread/*.h "$deps/include/openblas/"
cp -r /usr/include/hwy "$deps/include/"
hwy="$(readlink -f "/usr/lib/$multiarch/libhwy.so")"
cp "$hwy" "$deps/lib/libhwy.so.1"
mkdir -p "$deps/cmake/hwy"
cp "/usr/lib/$multiarch/cmake/hwy/hwy-config-version.cmake" "$deps/cmake/hwy/"
cat > "$deps/cmake/hwy/hwy-config.cmake" <<CONFIG
# Staged by bench/gpu/stage_deps.sh: Highway $(basename "$hwy").
if(NOT TARGET hwy::hwy)
  add_library(hwy::hwy SHARED IMPORTED)
  set_target_properties(hwy::hwy PROPERTIES
    IMPORTED_LOCATION "\${CMAKE_CURRENT_LIST_DIR}/../../lib/libhwy.so.1"
    INTERFACE_INCLUDE_DIRECTORIES "\${CMAKE_CURRENT_LIST_DIR}/../../include")
endif()
CONFIG
echo "stage_deps: nlohmann/json $version, googletest, $(basename "$openblas"), $(basename "$hwy") in $deps"
