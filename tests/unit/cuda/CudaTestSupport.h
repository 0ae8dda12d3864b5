//===- CudaTestSupport.h - Shared helpers of the CUDA tests -----*- C++ -*-===//
//
// MESHC_REQUIRE_GPU() registers the "cuda" backend and skips the test with
// the reason (cudaGetDeviceCount's error) when no GPU is usable, so the
// suites pass cleanly on machines without one and run in full on one.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_TESTS_UNIT_CUDA_CUDATESTSUPPORT_H
#define MESHC_TESTS_UNIT_CUDA_CUDATESTSUPPORT_H

#include "cuda/CudaBackend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#define MESHC_REQUIRE_GPU()                                                    \
  do {                                                                         \
    ::meshc::runtime::cuda::registerCudaBackend();                             \
    std::string reason = ::meshc::runtime::cuda::cudaUnavailableReason();      \
    if (!reason.empty())                                                       \
      GTEST_SKIP() << "no CUDA device: " << reason;                            \
  } while (false)

namespace meshc::runtime::testing {

/// Expects |got - want| <= tolerance * max(1, |want|) element-wise, NaNs
/// matching NaNs.
inline void expectClose(const std::vector<float> &got,
                        const std::vector<float> &want, double tolerance) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      ASSERT_TRUE(std::isnan(got[i])) << "element " << i;
      continue;
    }
    ASSERT_NEAR(got[i], want[i],
                tolerance * std::max(1.0, std::abs(double(want[i]))))
        << "element " << i;
  }
}

} // namespace meshc::runtime::testing

#endif // MESHC_TESTS_UNIT_CUDA_CUDATESTSUPPORT_H
