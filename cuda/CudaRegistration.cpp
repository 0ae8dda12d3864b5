//===- CudaRegistration.cpp - "cuda" in every program that links it -------===//
//
// The object library MeshcCudaRegistration: its static initialiser adds the
// "cuda" backend to the registry. Linked as an object (not an archive
// member), it is always part of the program, so nothing needs to call it.
//
//===----------------------------------------------------------------------===//

#include "cuda/CudaBackend.h"

namespace {

const bool cudaBackendRegistered =
    (meshc::runtime::cuda::registerCudaBackend(), true);

} // namespace
