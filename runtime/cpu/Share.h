//===- Share.h - One chunk of a range shared by threads --------*- C++ -*-===//
//
// The one formula for cutting a range into contiguous chunks: the WorkerPool
// cuts steps with it, and the kernels that threads share (CpuKernels.h) take
// their chunk as a Share.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_CPU_SHARE_H
#define MESHC_RUNTIME_CPU_SHARE_H

#include <cstdint>

namespace meshc::runtime {

/// Part `part` of `parts` of a kernel's work, for kernels that threads share
/// (WorkerPool.h): the parts of one call write disjoint elements, so they
/// may run at once, and together they do what the whole call does.
struct Share {
  int64_t part = 0;
  int64_t parts = 1;
  /// The contiguous range [first, last) of `units` that this part takes:
  /// the first `units % parts` parts take one unit more than the others.
  void range(int64_t units, int64_t &first, int64_t &last) const {
    int64_t each = units / parts, extra = units % parts;
    first = part * each + (part < extra ? part : extra);
    last = first + each + (part < extra ? 1 : 0);
  }
};

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_CPU_SHARE_H
