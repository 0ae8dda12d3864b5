//===- CudaConformance.cpp - The conformance suite on CUDA ----------------===//
//
// Instantiates the suite for the CUDA backend (in a build with it); every
// case skips with the reason where no GPU is usable.
//
//===----------------------------------------------------------------------===//

#include "Conformance.h"

#include "cuda/CudaBackend.h"

namespace meshc::runtime::testing {

MESHC_CONFORMANCE_BACKEND(cuda, [] {
  cuda::registerCudaBackend();
  return cuda::cudaUnavailableReason();
});

} // namespace meshc::runtime::testing
