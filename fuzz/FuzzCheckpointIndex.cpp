//===- FuzzCheckpointIndex.cpp - libFuzzer target: checkpoint index.json --===//
//
// Any bytes as a checkpoint's index.json (meshrun --restore):
// parseCheckpointIndex returns a checked index or throws RuntimeError.
//
//===----------------------------------------------------------------------===//

#include "runtime/Checkpoint.h"
#include "runtime/Error.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    meshc::runtime::parseCheckpointIndex(
        std::string_view(reinterpret_cast<const char *>(data), size),
        "ck/step-1/index.json", "ck/step-1");
  } catch (const meshc::runtime::RuntimeError &) {
  }
  return 0;
}
