//===- FuzzLayout.cpp - libFuzzer target: meshes, layouts, weights, specs -===//
//
// The strings and files a user hands meshc for a layout: the first byte
// picks the reader, the rest is its text. Mesh::parse, LayoutRules::parse,
// AxisWeights::parse (on the mesh "b:4;m:3", and on the mesh the same input
// gives when it is one), parseSpecJson and parseMemorySize return a value
// or an error; they never throw. A parsed mesh, layout or weights prints
// text that parses back to the same thing.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/cost/CostModel.h"
#include "runtime/core/layout/AxisWeights.h"
#include "runtime/core/layout/LayoutRules.h"
#include "runtime/core/layout/Mesh.h"
#include "runtime/core/layout/Spec.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

using namespace meshc;

namespace {

void check(bool ok) {
  if (!ok)
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  std::string_view text(reinterpret_cast<const char *>(data) + 1, size - 1);
  switch (data[0] % 5) {
  case 0: {
    layout::Result<layout::Mesh> mesh = layout::Mesh::parse(text);
    if (mesh.ok()) {
      layout::Result<layout::Mesh> again = layout::Mesh::parse(mesh->str());
      check(again.ok() && again->str() == mesh->str());
    }
    break;
  }
  case 1: {
    layout::Result<layout::LayoutRules> rules =
        layout::LayoutRules::parse(text);
    if (rules.ok()) {
      layout::Result<layout::LayoutRules> again =
          layout::LayoutRules::parse(rules->str());
      check(again.ok() && again->str() == rules->str());
    }
    break;
  }
  case 2: {
    layout::Result<layout::Mesh> mesh = layout::Mesh::parse("b:4;m:3");
    layout::Result<layout::AxisWeights> weights =
        layout::AxisWeights::parse(text, *mesh);
    if (weights.ok() && !weights->isEven()) {
      layout::Result<layout::AxisWeights> again =
          layout::AxisWeights::parse(weights->str(*mesh), *mesh);
      check(again.ok() && again->str(*mesh) == weights->str(*mesh));
    }
    break;
  }
  case 3:
    (void)layout::parseSpecJson(text, "fuzz-spec.json");
    break;
  case 4:
    (void)cost::parseMemorySize(text);
    break;
  }
  return 0;
}
