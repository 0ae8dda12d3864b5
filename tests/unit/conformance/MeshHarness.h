//===- MeshHarness.h - One-step programs on every device of a mesh -*- C++ -*-//
//
// StepHarness's counterpart for the steps that need a group (collectives and
// slice): a program of one step on a small mesh, loaded through the real
// loader (per-device programs under unequal blocks included), run on every
// device of the backend under test at once, one thread per device, with the
// backend's own communicators. Every device has its own contents of each
// buffer; values go in and come out as f32 whatever the buffer's dtype.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_TESTS_UNIT_CONFORMANCE_MESHHARNESS_H
#define MESHC_TESTS_UNIT_CONFORMANCE_MESHHARNESS_H

#include "runtime/Device.h"
#include "runtime/Loader.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace meshc::runtime::testing {

/// Builds, loads and runs a one-step program on every device of a mesh.
class MeshHarness {
public:
  /// A mesh of `axes` (name and size, outermost first) on the backend
  /// called `backend`; run() adds the kind of its step to `ran` when given.
  MeshHarness(std::string backend,
              std::vector<std::pair<std::string, int64_t>> axes,
              std::set<OpKind> *ran = nullptr);

  /// The number of devices.
  int64_t devices() const { return deviceCount; }
  /// Device `device`'s coordinate along mesh axis `axis` (row-major ids).
  int64_t coordinate(int64_t device, const std::string &axis) const;

  /// Declares a buffer of `dtype` (f32, i32, bf16, f16) of `elements`
  /// elements on every device, zero-filled; returns its id.
  int64_t buffer(const std::string &dtype, int64_t elements);
  /// Sets device `device`'s contents of buffer `id` (at most its elements;
  /// converted to its dtype: i32 truncates, bf16/f16 round).
  void set(int64_t id, int64_t device, const std::vector<float> &values);

  /// Loads the program made of `step` alone, or of the steps of `step`
  /// when it is an array (throws the loader's errors).
  Program load(const nlohmann::json &step) const;
  /// Loads the program made of `step` (or the array of steps) and runs it
  /// on every device at once, each device's steps in order on its thread.
  /// Throws the first device's RuntimeError (after aborting the others).
  void run(const nlohmann::json &step);

  /// Device `device`'s contents of buffer `id` after run(), as f32.
  std::vector<float> get(int64_t id, int64_t device) const;

private:
  struct Buffer {
    std::string dtype;
    int64_t elements = 0;
    int64_t offset = 0;
    /// Per device: the bytes.
    std::vector<std::vector<char>> data;
  };

  std::string backendName;
  std::vector<std::pair<std::string, int64_t>> meshAxes;
  int64_t deviceCount = 1;
  std::set<OpKind> *ranKinds;
  std::vector<Buffer> buffers;
  int64_t arenaBytes = 0;
};

} // namespace meshc::runtime::testing

#endif // MESHC_TESTS_UNIT_CONFORMANCE_MESHHARNESS_H
