//===- Npy.h - Reading NumPy .npy files -------------------------*- C++ -*-===//
//
// meshrun --input name=file.npy feeds a global input tensor from a NumPy
// array file: format versions 1.0-3.0, little-endian float32 ('<f4') or
// int32 ('<i4'), C order. Anything else is an error naming the file and what
// was found. meshrun --dump-params writes parameters in the same format.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_NPY_H
#define MESHC_RUNTIME_NPY_H

#include "runtime/Program.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace meshc::runtime {

/// An array read from a .npy file, or one in memory.
struct NpyArray {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// The elements in C order, 4 bytes each.
  std::vector<char> data;
  /// Instead of `data`: elements held elsewhere (C order, 4 bytes each, as
  /// many as `shape` says), read in place and kept alive by `owner` (the
  /// Python package's numpy arrays).
  const char *view = nullptr;
  std::shared_ptr<const void> owner;

  /// The elements: the view's, else `data`'s.
  const char *bytes() const { return view ? view : data.data(); }
};

/// Parses the contents `bytes` of a .npy file; `fileName` names it in
/// messages. Throws RuntimeError.
NpyArray parseNpy(std::string_view bytes, const std::string &fileName);

/// Reads the .npy file at `path`. Throws RuntimeError.
NpyArray readNpy(const std::string &path);

/// The bytes of a version 1.0 .npy file holding `data` (C order, 4 bytes an
/// element) as little-endian `dtype` of shape `shape`.
std::string npyBytes(DType dtype, const std::vector<int64_t> &shape,
                     const char *data);

/// Writes `array` to `path` as a .npy file. Throws RuntimeError naming the
/// path when it cannot be written.
void writeNpy(const std::string &path, const NpyArray &array);

/// "(3, 4)", the way NumPy prints a shape.
std::string npyShapeStr(const std::vector<int64_t> &shape);

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_NPY_H
