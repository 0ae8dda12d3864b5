//===- CudaCheck.h - Never dropping a CUDA, cuBLAS or NCCL status -*- C++ -*-=//
//
// Every call into the CUDA runtime, cuBLAS or NCCL goes through one of these
// macros. A failure throws RuntimeError with the call's text, file:line and
// the library's own error string:
//
//   cudaMalloc(&base, bytes) failed at cuda/CudaDevice.cpp:88: out of memory
//
// The *_WARN variants are for cleanup paths (destructors), which must not
// throw: they print the same message to stderr and go on.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_CUDA_CUDACHECK_H
#define MESHC_CUDA_CUDACHECK_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#ifdef MESHC_HAVE_NCCL
#include <nccl.h>
#endif

#include <string>

namespace meshc::runtime::cuda {

/// The message of a failed call: "<call> failed at <file>:<line>: <what>".
std::string failureMessage(const char *call, const char *file, int line,
                           const std::string &what);

/// cuBLAS's name for `status` ("CUBLAS_STATUS_NOT_SUPPORTED") and, where
/// the library has one, its description.
std::string cublasStatusText(cublasStatus_t status);

/// Throws RuntimeError(failureMessage(...)) when `status` is not success.
void checkCuda(cudaError_t status, const char *call, const char *file,
               int line);
void checkCublas(cublasStatus_t status, const char *call, const char *file,
                 int line);
/// Prints failureMessage(...) to stderr when `status` is not success.
void warnCuda(cudaError_t status, const char *call, const char *file, int line);
void warnCublas(cublasStatus_t status, const char *call, const char *file,
                int line);
#ifdef MESHC_HAVE_NCCL
void checkNccl(ncclResult_t status, const char *call, const char *file,
               int line);
void warnNccl(ncclResult_t status, const char *call, const char *file,
              int line);
#endif

} // namespace meshc::runtime::cuda

#define MESHC_CUDA_CHECK(call)                                                 \
  ::meshc::runtime::cuda::checkCuda((call), #call, __FILE__, __LINE__)
#define MESHC_CUBLAS_CHECK(call)                                               \
  ::meshc::runtime::cuda::checkCublas((call), #call, __FILE__, __LINE__)
#define MESHC_NCCL_CHECK(call)                                                 \
  ::meshc::runtime::cuda::checkNccl((call), #call, __FILE__, __LINE__)
#define MESHC_CUDA_WARN(call)                                                  \
  ::meshc::runtime::cuda::warnCuda((call), #call, __FILE__, __LINE__)
#define MESHC_CUBLAS_WARN(call)                                                \
  ::meshc::runtime::cuda::warnCublas((call), #call, __FILE__, __LINE__)
#define MESHC_NCCL_WARN(call)                                                  \
  ::meshc::runtime::cuda::warnNccl((call), #call, __FILE__, __LINE__)

#endif // MESHC_CUDA_CUDACHECK_H
