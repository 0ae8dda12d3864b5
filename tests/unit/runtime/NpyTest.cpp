//===- NpyTest.cpp - Reading .npy files
//------------------------------------===//
//
// Valid f32/i32 arrays of several ranks and format versions, and every
// rejection with its message.
//
//===----------------------------------------------------------------------===//

#include "NpyWriter.h"

#include "runtime/Error.h"
#include "runtime/Npy.h"

#include <gtest/gtest.h>

using namespace meshc::runtime;
using namespace meshc::runtime::testing;

namespace {

std::string errorOf(const std::string &bytes) {
  try {
    parseNpy(bytes, "a.npy");
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "";
}

TEST(NpyTest, ReadsFloatAndIntArrays) {
  NpyArray f = parseNpy(
      npyBytes<float>("{'descr': '<f4', 'fortran_order': False, 'shape': "
                      "(2, 3), }",
                      {1, 2, 3, 4, 5, 6}),
      "a.npy");
  EXPECT_EQ(f.dtype, DType::F32);
  EXPECT_EQ(f.shape, (std::vector<int64_t>{2, 3}));
  float last;
  std::memcpy(&last, f.data.data() + 20, 4);
  EXPECT_EQ(last, 6.0f);
  NpyArray i =
      parseNpy(npyBytes<int32_t>(
                   "{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }",
                   {7, 8, 9, 10}),
               "a.npy");
  EXPECT_EQ(i.dtype, DType::I32);
  EXPECT_EQ(i.shape, (std::vector<int64_t>{4}));
  NpyArray scalar = parseNpy(
      npyBytes<float>("{'descr': '<f4', 'fortran_order': False, 'shape': (), }",
                      {2.5f}),
      "a.npy");
  EXPECT_TRUE(scalar.shape.empty());
}

TEST(NpyTest, ReadsVersionTwoHeaders) {
  std::string v1 = npyBytes<float>(
      "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", {3.0f});
  // Version 2.0 has a 4-byte header length.
  std::string v2 = std::string("\x93NUMPY\x02\x00", 8) + v1.substr(8, 2) +
                   std::string(2, '\0') + v1.substr(10);
  EXPECT_EQ(parseNpy(v2, "a.npy").shape, (std::vector<int64_t>{1}));
}

TEST(NpyTest, Errors) {
  EXPECT_EQ(errorOf("hello"), "a.npy: not a .npy file (no \\x93NUMPY magic)");
  EXPECT_EQ(errorOf(std::string("\x93NUMPY\x04\x00\x10\x00", 10)),
            "a.npy: unsupported .npy version 4.0 (supported: 1.0, 2.0, 3.0)");
  EXPECT_EQ(errorOf(std::string("\x93NUMPY\x01\x00\x50\x00{}", 12)),
            "a.npy: truncated .npy header");
  EXPECT_EQ(
      errorOf(npyBytes<double>(
          "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", {1.0})),
      "a.npy: unsupported .npy dtype '<f8' (supported: '<f4' for f32, "
      "'<i4' for i32)");
  EXPECT_EQ(
      errorOf(npyBytes<float>(
          "{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", {1.0f})),
      "a.npy: .npy array is in Fortran order; save it in C order "
      "(numpy.ascontiguousarray)");
  EXPECT_EQ(errorOf(npyBytes<float>(
                "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
                {1.0f, 2.0f, 3.0f})),
            "a.npy: .npy data has 12 bytes but shape (2, 2) of f32 needs 16");
  EXPECT_EQ(errorOf(npyBytes<float>("{'descr': '<f4', 'fortran_order': False}",
                                    {1.0f})),
            "a.npy: malformed .npy header: no 'shape' entry");
}

} // namespace
