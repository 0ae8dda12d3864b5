//===- Conformance.h - The kernel conformance suite of every backend -*- C++
//-*-//
//
// One suite for every backend, as IREE runs one conformance suite on every
// HAL backend: each case is a TEST_P of the fixture Conformance, whose
// parameter is a backend name. A case builds one-step programs (StepHarness
// for a device alone, MeshHarness for the steps over a group, a Session for
// loops), runs them on the backend under test and compares the buffers with
// a plain reference: a formula in double or a hand-worked result, never
// another backend.
//
// A case is named after the step kind it tests, by the kind's enumerator
// in StepKinds.def: `TEST_P(Conformance, Softmax_AlongMiddleDim)`. The
// fixture fails a case whose name starts with no kind and one that never
// handed a step of its kind to the backend; ConformanceCoverage fails when
// some kind of StepKinds.def has no case. Each backend instantiates the
// suite with MESHC_CONFORMANCE_BACKEND (the CPU in Conformance.cpp, CUDA in
// CudaConformance.cpp); a backend this machine cannot run (CUDA without a
// GPU) skips with the reason.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_TESTS_UNIT_CONFORMANCE_CONFORMANCE_H
#define MESHC_TESTS_UNIT_CONFORMANCE_CONFORMANCE_H

#include "MeshHarness.h"
#include "StepHarness.h"

#include "runtime/core/StepKinds.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace meshc::runtime::testing {

/// The float types of the steps that compute in f32 (bf16 and f16 operands
/// are widened, results rounded).
inline const std::vector<std::string> kFloatTypes = {"f32", "bf16", "f16"};

/// The relative tolerance of a result stored as `dtype` and computed in f32
/// from inputs already in `dtype`: f32 arithmetic and library functions
/// (1e-5), or one rounding of the result (2^-8 for bf16, 2^-11 for f16)
/// with room for the f32 error before it.
double storedTolerance(const std::string &dtype);

/// Expects |got - want| <= tolerance * max(1, |want|) element-wise, NaN
/// only where `want` is NaN.
void expectNear(const std::vector<float> &got, const std::vector<double> &want,
                double tolerance);

/// Says why backend `name` cannot run on this machine ("" when it can).
using BackendCheck = std::function<std::string()>;
/// Registers the check of backend `name`; returns true (for static
/// initialisers).
bool registerConformanceBackend(const std::string &name, BackendCheck check);

/// The fixture of every conformance case; the parameter is the backend.
class Conformance : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override;
  void TearDown() override;

  /// The backend under test.
  const std::string &backend() const { return GetParam(); }
  /// A one-device harness on the backend under test.
  StepHarness steps() { return StepHarness(backend(), &ran); }
  /// A harness on every device of the mesh `axes` on the backend under
  /// test.
  MeshHarness mesh(std::vector<std::pair<std::string, int64_t>> axes) {
    return MeshHarness(backend(), std::move(axes), &ran);
  }
  /// Notes that this case ran a step of kind `op` some other way (loops
  /// run through a Session).
  void ranKind(OpKind op) { ran.insert(op); }

private:
  /// The kinds handed to the backend so far.
  std::set<OpKind> ran;
  /// The kind the case is named after.
  OpKind kind = OpKind::Fill;
};

} // namespace meshc::runtime::testing

/// Instantiates the suite for backend `name` (an identifier), skipped when
/// `check` (a BackendCheck) says the backend cannot run here.
#define MESHC_CONFORMANCE_BACKEND(name, check)                                 \
  static const bool meshcConformanceBackend_##name =                           \
      ::meshc::runtime::testing::registerConformanceBackend(#name, check);     \
  INSTANTIATE_TEST_SUITE_P(                                                    \
      name, Conformance, ::testing::Values(std::string(#name)),                \
      [](const ::testing::TestParamInfo<std::string> &info) {                  \
        return info.param;                                                     \
      })

#endif // MESHC_TESTS_UNIT_CONFORMANCE_CONFORMANCE_H
