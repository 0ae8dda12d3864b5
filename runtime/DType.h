//===- DType.h - The element types of .mprog buffers ------------*- C++ -*-===//

#ifndef MESHC_RUNTIME_DTYPE_H
#define MESHC_RUNTIME_DTYPE_H

#include <cstdint>

namespace meshc::runtime {

/// The element types the runtime executes. BF16 and F16 are storage types:
/// a kernel reads such a buffer widened to f32 and writes it rounded (to
/// nearest, ties to even), so it computes in f32 (runtime.md).
enum class DType { F32, I32, BF16, F16 };

/// The bytes of one element of `dtype`.
int64_t dtypeBytes(DType dtype);
/// "f32", "i32", "bf16", "f16".
const char *dtypeName(DType dtype);
/// True for f32, bf16 and f16.
bool isFloat(DType dtype);
/// True for bf16 and f16.
bool isHalf(DType dtype);

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_DTYPE_H
