//===- CudaCheck.cpp - Never dropping a CUDA, cuBLAS or NCCL status -------===//
//
// The error strings come from the libraries: cudaGetErrorString,
// cublasGetStatusName/cublasGetStatusString and ncclGetErrorString (plus
// ncclGetLastError, which often says which peer or resource failed).
//
//===----------------------------------------------------------------------===//

#include "cuda/CudaCheck.h"

#include "runtime/Error.h"

#include <iostream>

namespace meshc::runtime::cuda {

std::string failureMessage(const char *call, const char *file, int line,
                           const std::string &what) {
  return std::string(call) + " failed at " + file + ":" + std::to_string(line) +
         ": " + what;
}

std::string cublasStatusText(cublasStatus_t status) {
  return std::string(cublasGetStatusName(status)) + " (" +
         cublasGetStatusString(status) + ")";
}

static std::string cudaText(cudaError_t status) {
  return std::string(cudaGetErrorString(status)) + " (" +
         cudaGetErrorName(status) + ")";
}

void checkCuda(cudaError_t status, const char *call, const char *file,
               int line) {
  if (status != cudaSuccess)
    throw RuntimeError(failureMessage(call, file, line, cudaText(status)));
}

void checkCublas(cublasStatus_t status, const char *call, const char *file,
                 int line) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw RuntimeError(
        failureMessage(call, file, line, cublasStatusText(status)));
}

void warnCuda(cudaError_t status, const char *call, const char *file,
              int line) {
  if (status != cudaSuccess)
    std::cerr << "meshrun: warning: "
              << failureMessage(call, file, line, cudaText(status)) << "\n";
}

void warnCublas(cublasStatus_t status, const char *call, const char *file,
                int line) {
  if (status != CUBLAS_STATUS_SUCCESS)
    std::cerr << "meshrun: warning: "
              << failureMessage(call, file, line, cublasStatusText(status))
              << "\n";
}

#ifdef MESHC_HAVE_NCCL
static std::string ncclText(ncclResult_t status) {
  std::string text = ncclGetErrorString(status);
  const char *last = ncclGetLastError(nullptr);
  if (last && *last)
    text += ": " + std::string(last);
  return text;
}

void checkNccl(ncclResult_t status, const char *call, const char *file,
               int line) {
  if (status != ncclSuccess)
    throw RuntimeError(failureMessage(call, file, line, ncclText(status)));
}

void warnNccl(ncclResult_t status, const char *call, const char *file,
              int line) {
  if (status != ncclSuccess)
    std::cerr << "meshrun: warning: "
              << failureMessage(call, file, line, ncclText(status)) << "\n";
}
#endif

} // namespace meshc::runtime::cuda
