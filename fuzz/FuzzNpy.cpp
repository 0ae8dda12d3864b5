//===- FuzzNpy.cpp - libFuzzer target: .npy input files -------------------===//
//
// Any bytes as a .npy file (meshrun --input): parseNpy returns an array
// whose data holds exactly the elements its shape names, or throws
// RuntimeError.
//
//===----------------------------------------------------------------------===//

#include "runtime/Error.h"
#include "runtime/Npy.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    meshc::runtime::NpyArray array = meshc::runtime::parseNpy(
        std::string_view(reinterpret_cast<const char *>(data), size),
        "fuzz.npy");
    size_t elements = 1;
    for (int64_t extent : array.shape)
      elements *= static_cast<size_t>(extent);
    if (array.data.size() != elements * 4)
      std::abort(); // the shape and the bytes disagree
  } catch (const meshc::runtime::RuntimeError &) {
  }
  return 0;
}
