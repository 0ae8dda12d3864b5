//===- NpyWriter.h - Writing .npy files in tests ----------------*- C++ -*-===//
//
// A minimal .npy writer (format 1.0) so tests can feed meshrun inputs and
// build malformed files on purpose.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_TESTS_UNIT_RUNTIME_NPYWRITER_H
#define MESHC_TESTS_UNIT_RUNTIME_NPYWRITER_H

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace meshc::runtime::testing {

/// The bytes of a version 1.0 .npy file with header dict `dict` (e.g.
/// "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }") and data
/// `values`.
template <typename T>
std::string npyBytes(const std::string &dict, const std::vector<T> &values) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0)
    header += ' ';
  header += '\n';
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  std::string data(values.size() * sizeof(T), '\0');
  std::memcpy(data.data(), values.data(), data.size());
  return bytes + data;
}

/// Writes `bytes` to `path`.
inline void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

} // namespace meshc::runtime::testing

#endif // MESHC_TESTS_UNIT_RUNTIME_NPYWRITER_H
