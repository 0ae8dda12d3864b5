//===- StepKindsTest.cpp - The table of step kinds and its users ----------===//
//
// Walks StepKinds.def: every kind has one spelling the loader finds it by,
// attributes of its own, and a declaration in every backend built here (the
// CPU must run every kind), and docs/mprog.md's tables list exactly the kinds
// and the unary and binary functions. A session refuses a program with a kind
// its backend lacks before any step runs, naming the step, kind and backend.
//
//===----------------------------------------------------------------------===//

#include "StepHarness.h"

#include "runtime/Error.h"
#include "runtime/Session.h"
#include "runtime/cpu/CpuDevice.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>

using namespace meshc::runtime;
using namespace meshc::runtime::testing;
using nlohmann::json;

namespace {

std::vector<OpKind> allKinds() {
  std::vector<OpKind> kinds;
  for (size_t kind = 0; kind < kStepKindCount; ++kind)
    kinds.push_back(static_cast<OpKind>(kind));
  return kinds;
}

// Kind K's attributes are KAttrs, at K's position in StepAttrs.
static_assert(std::variant_size_v<StepAttrs> == kStepKindCount);
#define MESHC_STEP_KIND(Kind, Spelling, Group, Category)                       \
  static_assert(                                                               \
      std::is_same_v<std::variant_alternative_t<                               \
                         static_cast<size_t>(OpKind::Kind), StepAttrs>,        \
                     Kind##Attrs>);
#include "runtime/core/StepKinds.def"

TEST(StepKindsTest, EveryKindHasOneSpelling) {
  std::set<std::string> spellings;
  for (OpKind kind : allKinds()) {
    EXPECT_TRUE(spellings.insert(opName(kind)).second) << opName(kind);
    EXPECT_EQ(opKindNamed(opName(kind)), kind) << opName(kind);
  }
  EXPECT_EQ(opKindNamed("conv"), std::nullopt);
  EXPECT_EQ(spellings.size(), kStepKindCount);
}

TEST(StepKindsTest, GroupsComeFromTheTable) {
  Step step;
  step.attrs = SliceAttrs{{3}, "batch"};
  EXPECT_EQ(step.op(), OpKind::Slice);
  EXPECT_EQ(step.group(), 3u);
  EXPECT_TRUE(usesGroup(OpKind::Slice));
  EXPECT_EQ(stepGroup(OpKind::Slice), StepGroup::Rank);
  EXPECT_EQ(stepGroup(OpKind::AllToAll), StepGroup::Collective);
  // A slice uses its group's ranks but does not communicate.
  EXPECT_FALSE(communicates(OpKind::Slice));
  EXPECT_TRUE(communicates(OpKind::AllToAll));
  EXPECT_FALSE(communicates(OpKind::TopK));
  step.attrs = TopKAttrs{"experts", 2};
  EXPECT_EQ(step.group(), std::nullopt);
  EXPECT_FALSE(usesGroup(OpKind::TopK));
}

TEST(StepKindsTest, CpuSupportsEveryKind) {
  CpuBackend cpu;
  for (OpKind kind : allKinds())
    EXPECT_TRUE(cpu.supports(kind)) << opName(kind);
}

/// The names in the first column of the tables of docs/mprog.md whose
/// header's first cell is `column` ("op", "unary fn", "binary fn"), in
/// order.
std::vector<std::string> documented(const std::string &column) {
  std::ifstream file(MESHC_MPROG_DOC);
  EXPECT_TRUE(file) << "cannot open " MESHC_MPROG_DOC;
  std::vector<std::string> names;
  bool inTable = false;
  std::string line;
  while (std::getline(file, line)) {
    size_t bar = line.find_first_not_of(' ');
    if (bar == std::string::npos || line[bar] != '|') {
      inTable = false;
      continue;
    }
    size_t end = line.find('|', bar + 1);
    std::string cell = line.substr(bar + 1, end - bar - 1);
    cell.erase(0, cell.find_first_not_of(' '));
    cell.erase(cell.find_last_not_of(' ') + 1);
    if (cell == column) {
      inTable = true;
      continue;
    }
    if (inTable && cell.size() > 2 && cell.front() == '`' && cell.back() == '`')
      names.push_back(cell.substr(1, cell.size() - 2));
  }
  return names;
}

TEST(StepKindsTest, MprogDocsListExactlyTheKindsAndFunctions) {
  std::vector<std::string> kinds, unary, binary;
  for (OpKind kind : allKinds())
    kinds.push_back(opName(kind));
  for (size_t fn = 0; fn < kUnaryFnCount; ++fn)
    unary.push_back(unaryFnName(static_cast<UnaryFn>(fn)));
  for (size_t fn = 0; fn < kBinaryFnCount; ++fn)
    binary.push_back(binaryFnName(static_cast<BinaryFn>(fn)));
  auto sorted = [](std::vector<std::string> names) {
    std::sort(names.begin(), names.end());
    return names;
  };
  // Each listed once, and nothing else.
  EXPECT_EQ(sorted(documented("op")), sorted(kinds));
  EXPECT_EQ(documented("unary fn"), unary);
  EXPECT_EQ(documented("binary fn"), binary);
}

/// The kind the "lacking" backend does not run.
OpKind lackedKind = OpKind::TopK;

/// The CPU backend without `lackedKind`.
class LackingBackend : public CpuBackend {
public:
  std::string name() const override { return "lacking"; }
  bool supports(OpKind op) const override { return op != lackedKind; }
};

std::unique_ptr<Backend> makeLackingBackend() {
  return std::make_unique<LackingBackend>();
}

/// The message Session(program, {backend "lacking"}) fails with.
std::string refusal(const Program &program) {
  registerBackend("lacking", &makeLackingBackend);
  SessionOptions options;
  options.backend = "lacking";
  try {
    Session session(program, options);
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "";
}

TEST(StepKindsTest, SessionRefusesAKindItsBackendLacks) {
  StepHarness harness;
  int64_t in = harness.f32(testData("x", 8)),
          out = harness.f32(std::vector<float>(8));
  Program program =
      harness.load({{"op", "top_k"},
                    {"in", {{"buf", in}, {"dims", {"row", "experts"}}}},
                    {"out", {{"buf", out}, {"dims", {"row", "experts"}}}},
                    {"dim", "experts"},
                    {"k", 2},
                    {"sizes", {{"row", 2}, {"experts", 4}}}});
  lackedKind = OpKind::TopK;
  EXPECT_EQ(refusal(program),
            "step 0 (top_k): the lacking backend does not support this step "
            "kind");
  lackedKind = OpKind::Window;
  EXPECT_EQ(refusal(program), "");
}

TEST(StepKindsTest, SessionRefusesALackedKindInTheSyncSteps) {
  Program program = loadProgram(MESHC_RUNTIME_INPUTS "/linreg-local-sgd.mprog");
  lackedKind = OpKind::AllReduce;
  size_t first = 0;
  while (program.steps[first].op() != OpKind::AllReduce)
    ++first;
  EXPECT_EQ(refusal(program),
            "step " + std::to_string(first) +
                " (all_reduce): the lacking backend does not support this "
                "step kind");
  program.steps.clear();
  EXPECT_EQ(refusal(program), "training.sync (all_reduce): the lacking "
                              "backend does not support this step kind");
}

} // namespace
