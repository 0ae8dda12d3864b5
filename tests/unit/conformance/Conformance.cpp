//===- Conformance.cpp - The suite's fixture, coverage and the CPU --------===//
//
// The fixture's checks (a case is named after a step kind and runs a step of
// it), the coverage test (every kind of StepKinds.def has a case on every
// backend instantiated here), and the CPU's instantiation.
//
//===----------------------------------------------------------------------===//

#include "Conformance.h"

#include <cmath>
#include <map>

namespace meshc::runtime::testing {

namespace {

/// The enumerators of StepKinds.def, in enum order.
constexpr const char *kKindNames[] = {
#define MESHC_STEP_KIND(Kind, Spelling, Group, Category) #Kind,
#include "runtime/core/StepKinds.def"
};

/// The kind a case called `name` ("Softmax_AlongMiddleDim/cpu") is named
/// after, if any.
std::optional<OpKind> kindOfCase(const std::string &name) {
  std::string prefix = name.substr(0, name.find_first_of("_/"));
  for (size_t kind = 0; kind < std::size(kKindNames); ++kind)
    if (prefix == kKindNames[kind])
      return static_cast<OpKind>(kind);
  return std::nullopt;
}

std::map<std::string, BackendCheck> &backendChecks() {
  static std::map<std::string, BackendCheck> checks;
  return checks;
}

} // namespace

double storedTolerance(const std::string &dtype) {
  if (dtype == "bf16")
    return 1.0 / 128;
  if (dtype == "f16")
    return 1.0 / 1024;
  return 1e-5;
}

void expectNear(const std::vector<float> &got, const std::vector<double> &want,
                double tolerance) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      ASSERT_TRUE(std::isnan(got[i])) << "element " << i << " is " << got[i];
      continue;
    }
    ASSERT_NEAR(got[i], want[i], tolerance * std::max(1.0, std::abs(want[i])))
        << "element " << i;
  }
}

bool registerConformanceBackend(const std::string &name, BackendCheck check) {
  backendChecks()[name] = std::move(check);
  return true;
}

void Conformance::SetUp() {
  const ::testing::TestInfo &info =
      *::testing::UnitTest::GetInstance()->current_test_info();
  std::optional<OpKind> named = kindOfCase(info.name());
  ASSERT_TRUE(named) << "a conformance case is named after the step kind it "
                        "tests (its StepKinds.def enumerator, then '_'): "
                     << info.name();
  kind = *named;
  auto check = backendChecks().find(backend());
  ASSERT_NE(check, backendChecks().end())
      << "backend '" << backend() << "' has no MESHC_CONFORMANCE_BACKEND";
  std::string reason = check->second();
  if (!reason.empty())
    GTEST_SKIP() << "the " << backend()
                 << " backend cannot run here: " << reason;
}

void Conformance::TearDown() {
  if (IsSkipped() || HasFatalFailure())
    return;
  EXPECT_TRUE(ran.count(kind))
      << "the case is named after step kind '" << opName(kind)
      << "' but ran no step of it on " << backend();
}

namespace {

TEST(ConformanceCoverage, EveryStepKindHasACaseOnEveryBackend) {
  const ::testing::UnitTest &unit = *::testing::UnitTest::GetInstance();
  std::map<std::string, std::set<OpKind>> covered;
  for (int s = 0; s < unit.total_test_suite_count(); ++s) {
    const ::testing::TestSuite &suite = *unit.GetTestSuite(s);
    std::string name = suite.name();
    size_t slash = name.find('/');
    if (slash == std::string::npos || name.substr(slash) != "/Conformance")
      continue;
    std::set<OpKind> &kinds = covered[name.substr(0, slash)];
    for (int t = 0; t < suite.total_test_count(); ++t)
      if (std::optional<OpKind> kind = kindOfCase(suite.GetTestInfo(t)->name()))
        kinds.insert(*kind);
  }
  ASSERT_TRUE(covered.count("cpu")) << "the suite is not instantiated for cpu";
  for (const auto &[backend, kinds] : covered)
    for (size_t kind = 0; kind < std::size(kKindNames); ++kind)
      EXPECT_TRUE(kinds.count(static_cast<OpKind>(kind)))
          << "step kind '" << opName(static_cast<OpKind>(kind)) << "' ("
          << kKindNames[kind] << ") has no conformance case on " << backend;
}

} // namespace

MESHC_CONFORMANCE_BACKEND(cpu, [] { return std::string(); });

} // namespace meshc::runtime::testing
