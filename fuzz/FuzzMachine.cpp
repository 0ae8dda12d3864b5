//===- FuzzMachine.cpp - libFuzzer target: machine profiles ---------------===//
//
// Any bytes as a machine profile (meshc --machine FILE.json):
// parseMachineProfile returns a checked profile or an error, never throws.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/cost/MachineProfile.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  (void)meshc::cost::parseMachineProfile(
      std::string_view(reinterpret_cast<const char *>(data), size),
      "fuzz-machine.json");
  return 0;
}
