//===- Npy.cpp - Reading NumPy .npy files ---------------------------------===//
//
// The .npy layout: magic "\x93NUMPY", a major and minor version byte, the
// header length (2 bytes little-endian in 1.0, 4 bytes in 2.0/3.0), then the
// header, a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// and the raw data.
//
//===----------------------------------------------------------------------===//

#include "runtime/Npy.h"

#include "runtime/Error.h"
#include "runtime/FileWrite.h"

#include <cctype>
#include <fstream>
#include <sstream>

namespace meshc::runtime {

std::string npyShapeStr(const std::vector<int64_t> &shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

std::string npyBytes(DType dtype, const std::vector<int64_t> &shape,
                     const char *data) {
  std::string header =
      std::string("{'descr': '") + (dtype == DType::F32 ? "<f4" : "<i4") +
      "', 'fortran_order': False, 'shape': " + npyShapeStr(shape) + ", }";
  // The data starts at a multiple of 64 bytes; the header ends with '\n'.
  while ((10 + header.size() + 1) % 64 != 0)
    header += ' ';
  header += '\n';
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  int64_t elements = 1;
  for (int64_t size : shape)
    elements *= size;
  bytes.append(data, static_cast<size_t>(elements * dtypeBytes(dtype)));
  return bytes;
}

void writeNpy(const std::string &path, const NpyArray &array) {
  writeFileAtomically(path, npyBytes(array.dtype, array.shape, array.bytes()));
}

namespace {

/// The text after key `key` and its colon in the header dict, or fails.
size_t valueStart(std::string_view header, std::string_view key,
                  const std::string &fileName) {
  size_t at = header.find("'" + std::string(key) + "'");
  if (at == std::string_view::npos)
    throw RuntimeError(fileName + ": malformed .npy header: no '" +
                       std::string(key) + "' entry");
  size_t colon = header.find(':', at);
  if (colon == std::string_view::npos)
    throw RuntimeError(fileName + ": malformed .npy header after '" +
                       std::string(key) + "'");
  size_t start = colon + 1;
  while (start < header.size() && header[start] == ' ')
    ++start;
  return start;
}

std::vector<int64_t> parseShape(std::string_view header,
                                const std::string &fileName) {
  size_t start = valueStart(header, "shape", fileName);
  size_t end = header.find(')', start);
  if (start >= header.size() || header[start] != '(' ||
      end == std::string_view::npos)
    throw RuntimeError(fileName + ": malformed .npy header: bad 'shape'");
  std::vector<int64_t> shape;
  int64_t value = -1;
  for (size_t i = start + 1; i <= end; ++i) {
    char c = header[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t digit = c - '0';
      if (value > (INT64_MAX - digit) / 10)
        throw RuntimeError(fileName + ": .npy shape is too large");
      value = (value < 0 ? 0 : value * 10) + digit;
    } else if (c == ',' || c == ')') {
      if (value >= 0)
        shape.push_back(value);
      value = -1;
    } else if (c != ' ' && c != 'L') {
      throw RuntimeError(fileName + ": malformed .npy header: bad 'shape'");
    }
  }
  return shape;
}

} // namespace

NpyArray parseNpy(std::string_view bytes, const std::string &fileName) {
  const std::string_view magic("\x93NUMPY", 6);
  if (bytes.substr(0, 6) != magic)
    throw RuntimeError(fileName + ": not a .npy file (no \\x93NUMPY magic)");
  if (bytes.size() < 10)
    throw RuntimeError(fileName + ": truncated .npy header");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  if (major < 1 || major > 3)
    throw RuntimeError(fileName + ": unsupported .npy version " +
                       std::to_string(major) + "." +
                       std::to_string(static_cast<unsigned char>(bytes[7])) +
                       " (supported: 1.0, 2.0, 3.0)");
  size_t lengthBytes = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + lengthBytes)
    throw RuntimeError(fileName + ": truncated .npy header");
  size_t headerLength = 0;
  for (size_t i = 0; i < lengthBytes; ++i)
    headerLength |=
        static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i]))
        << (8 * i);
  size_t dataStart = 8 + lengthBytes + headerLength;
  if (bytes.size() < dataStart)
    throw RuntimeError(fileName + ": truncated .npy header");
  std::string_view header = bytes.substr(8 + lengthBytes, headerLength);

  NpyArray array;
  size_t descrStart = valueStart(header, "descr", fileName);
  size_t descrEnd = header.find('\'', descrStart + 1);
  if (descrStart >= header.size() || header[descrStart] != '\'' ||
      descrEnd == std::string_view::npos)
    throw RuntimeError(fileName + ": malformed .npy header: bad 'descr'");
  std::string descr(header.substr(descrStart + 1, descrEnd - descrStart - 1));
  if (descr == "<f4")
    array.dtype = DType::F32;
  else if (descr == "<i4")
    array.dtype = DType::I32;
  else
    throw RuntimeError(fileName + ": unsupported .npy dtype '" + descr +
                       "' (supported: '<f4' for f32, '<i4' for i32)");
  size_t order = valueStart(header, "fortran_order", fileName);
  if (header.substr(order, 4) == "True")
    throw RuntimeError(fileName + ": .npy array is in Fortran order; save it "
                                  "in C order (numpy.ascontiguousarray)");
  array.shape = parseShape(header, fileName);

  int64_t elements = 1;
  for (int64_t size : array.shape)
    if (__builtin_mul_overflow(elements, size, &elements))
      throw RuntimeError(fileName + ": .npy shape is too large");
  uint64_t expected = static_cast<uint64_t>(elements) * 4;
  uint64_t present = bytes.size() - dataStart;
  if (present != expected)
    throw RuntimeError(fileName + ": .npy data has " + std::to_string(present) +
                       " bytes but shape " + npyShapeStr(array.shape) + " of " +
                       dtypeName(array.dtype) + " needs " +
                       std::to_string(expected));
  array.data.assign(bytes.begin() + dataStart, bytes.end());
  return array;
}

NpyArray readNpy(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw RuntimeError("cannot open '" + path + "'");
  std::ostringstream bytes;
  bytes << file.rdbuf();
  return parseNpy(bytes.str(), path);
}

} // namespace meshc::runtime
