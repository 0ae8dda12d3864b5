//===- FuzzMprog.cpp - libFuzzer target: the .mprog loader ----------------===//
//
// Any bytes as a .mprog file: parseProgram either returns a checked program
// or throws RuntimeError with a message. Anything else (another exception,
// a sanitizer report, a hang, a large allocation) is a finding.
//
//===----------------------------------------------------------------------===//

#include "runtime/Error.h"
#include "runtime/Loader.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    meshc::runtime::parseProgram(
        std::string_view(reinterpret_cast<const char *>(data), size),
        "fuzz.mprog");
  } catch (const meshc::runtime::RuntimeError &) {
  }
  return 0;
}
