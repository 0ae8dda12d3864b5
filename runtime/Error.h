//===- Error.h - Errors of the meshc runtime --------------------*- C++ -*-===//
//
// Inside the runtime, problems travel as exceptions: a malformed .mprog, a bad
// input file or a label out of range throws RuntimeError with a lowercase
// message that names the offending values. The library entry points
// (meshrunMain) catch them and turn them into a message and exit code 1, so
// no error reaches the user as a crash.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_ERROR_H
#define MESHC_RUNTIME_ERROR_H

#include <stdexcept>
#include <string>
#include <vector>

namespace meshc::runtime {

/// A user-facing runtime error; what() is the complete message.
class RuntimeError : public std::runtime_error {
public:
  explicit RuntimeError(const std::string &message)
      : std::runtime_error(message) {}
};

/// Thrown inside a device thread whose collective was abandoned because
/// another device failed; the other device's error is the one reported.
class CollectiveAborted : public std::runtime_error {
public:
  CollectiveAborted() : std::runtime_error("collective aborted") {}
};

/// Names for a message, quoted and separated: "'a', 'b'".
inline std::string quoted(const std::vector<std::string> &names) {
  std::string text;
  for (const std::string &name : names)
    text += (text.empty() ? "'" : ", '") + name + "'";
  return text;
}

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_ERROR_H
