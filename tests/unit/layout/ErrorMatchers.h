//===- ErrorMatchers.h - Assertions on layout errors ------------*- C++ -*-===//
//
// One assertion for the layout library's errors: the result failed, with
// exactly this message, hint and location. Every user-visible error of the
// library is pinned through it.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_TESTS_UNIT_LAYOUT_ERRORMATCHERS_H
#define MESHC_TESTS_UNIT_LAYOUT_ERRORMATCHERS_H

#include "runtime/core/layout/Error.h"

#include <gtest/gtest.h>

namespace meshc::layout {

template <typename T>
void expectError(const Result<T> &result, const std::string &message,
                 const std::string &hint, int line, int column) {
  ASSERT_FALSE(result.ok()) << "expected the error: " << message;
  EXPECT_EQ(result.error().message, message);
  EXPECT_EQ(result.error().hint, hint);
  EXPECT_EQ(result.error().line, line);
  EXPECT_EQ(result.error().column, column);
}

} // namespace meshc::layout

/// Expects `result` to hold the error (message, hint) at (line, column);
/// line 0 for command-line strings, both 0 when there is no location.
#define EXPECT_LAYOUT_ERROR(result, message, hint, line, column)               \
  do {                                                                         \
    SCOPED_TRACE(#result);                                                     \
    ::meshc::layout::expectError((result), (message), (hint), (line),          \
                                 (column));                                    \
  } while (false)

#endif // MESHC_TESTS_UNIT_LAYOUT_ERRORMATCHERS_H
