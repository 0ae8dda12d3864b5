//===- StepHarness.h - One-step programs for kernel tests -------*- C++ -*-===//
//
// Kernel tests describe a step in .mprog JSON and the buffers it reads; the
// harness wraps them in a one-device program, loads it through the real
// loader (so steps are validated and einsums planned as in production), runs
// the step on a device of the backend under test (through the Device
// interface, so another backend runs the same suites by naming itself) and
// reads the buffers back. Also: a naive einsum and deterministic test data.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_TESTS_UNIT_RUNTIME_STEPHARNESS_H
#define MESHC_TESTS_UNIT_RUNTIME_STEPHARNESS_H

#include "runtime/Device.h"
#include "runtime/Loader.h"
#include "runtime/core/HalfFloat.h"
#include "runtime/core/Random.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace meshc::runtime::testing {

/// `count` standard-normal test values, different for each `name`.
inline std::vector<float> testData(const std::string &name, int64_t count) {
  TensorRandom random(42, name);
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i)
    values[i] = static_cast<float>(random.normal(i));
  return values;
}

/// `values` as a buffer of float type `dtype` stores them (rounded to bf16
/// or f16; unchanged for f32).
inline std::vector<float> roundedTo(const std::string &dtype,
                                    std::vector<float> values) {
  for (float &v : values)
    if (dtype == "bf16")
      v = meshc::half::roundToBf16(v);
    else if (dtype == "f16")
      v = meshc::half::roundToF16(v);
  return values;
}

/// A step operand: buffer `buf` seen with `dims`.
inline nlohmann::json operand(int64_t buf, std::vector<std::string> dims) {
  return {{"buf", buf}, {"dims", dims}};
}
/// A fused step's output: buffer `buf` with `dims`, storing body value
/// `value`.
inline nlohmann::json output(int64_t buf, std::vector<std::string> dims,
                             int value) {
  return {{"buf", buf}, {"dims", dims}, {"value", value}};
}
/// A fused body instruction: `fn` of the values `args`.
inline nlohmann::json instr(const char *fn, std::vector<int> args) {
  return {{"fn", fn}, {"args", args}};
}

/// The body of y = layer_norm(gelu(x) + r) * g over a reduced dim of size
/// `d`, with inputs 0 x, 1 r, 2 g. Values: 3 gelu, 4 add, 5 sum, 6 mean,
/// 7 sub, 8 sq, 9 sum, 10 var, 11 eps, 12 var+eps, 13 rsqrt, 14 norm, 15 y.
inline nlohmann::json layerNormBody(int64_t d) {
  return {instr("gelu", {0}),
          instr("add", {3, 1}),
          instr("reduce_sum", {4}),
          {{"fn", "scale"}, {"args", {5}}, {"value", 1.0 / d}},
          instr("sub", {4, 6}),
          instr("mul", {7, 7}),
          instr("reduce_sum", {8}),
          {{"fn", "scale"}, {"args", {9}}, {"value", 1.0 / d}},
          {{"fn", "const"}, {"value", 1e-5}},
          instr("add", {10, 11}),
          instr("rsqrt", {12}),
          instr("mul", {7, 13}),
          instr("mul", {14, 2})};
}

/// The fused step y = layer_norm(gelu(x) + r) * g over d (layerNormBody),
/// x stored [d, batch]: outputs y[batch, d], the rows' rsqrt rs[batch] and y
/// transposed yT[d, batch].
inline nlohmann::json layerNormStep(int64_t x, int64_t r, int64_t g, int64_t y,
                                    int64_t rs, int64_t yT, int64_t batch,
                                    int64_t d) {
  return {{"op", "fused"},
          {"dims", {"batch", "d"}},
          {"reduced", 1},
          {"sizes", {{"batch", batch}, {"d", d}}},
          {"in",
           {operand(x, {"d", "batch"}), operand(r, {"batch", "d"}),
            operand(g, {"d"})}},
          {"out",
           {output(y, {"batch", "d"}, 15), output(rs, {"batch"}, 13),
            output(yT, {"d", "batch"}, 15)}},
          {"body", layerNormBody(d)}};
}

/// Builds, loads and runs one-step programs on one device.
class StepHarness {
public:
  /// A harness running steps on the backend called `backend`; when `ran`
  /// is given, run() adds the kind of each step it hands to the backend.
  explicit StepHarness(std::string backend = "cpu",
                       std::set<OpKind> *ran = nullptr)
      : backendName(std::move(backend)), ranKinds(ran) {}

  /// Declares an f32 buffer holding `values`; returns its id.
  int64_t f32(const std::vector<float> &values) {
    return add("f32", values.data(), static_cast<int64_t>(values.size()));
  }
  /// Declares an i32 buffer holding `values`; returns its id.
  int64_t i32(const std::vector<int32_t> &values) {
    return add("i32", values.data(), static_cast<int64_t>(values.size()));
  }
  /// Declares a bf16 or f16 buffer (`dtype`) holding `values` rounded to
  /// it; returns its id.
  int64_t half(const std::string &dtype, const std::vector<float> &values) {
    std::vector<uint16_t> bits;
    for (float v : values)
      bits.push_back(dtype == "bf16" ? meshc::half::bf16FromF32(v)
                                     : meshc::half::f16FromF32(v));
    return add(dtype, bits.data(), static_cast<int64_t>(bits.size()), 2);
  }
  /// Declares a buffer of float type `dtype` (f32, bf16 or f16) holding
  /// `values` rounded to it; returns its id.
  int64_t floats(const std::string &dtype, const std::vector<float> &values) {
    return dtype == "f32" ? f32(values) : half(dtype, values);
  }
  /// Declares a buffer over the same bytes as buffer `id`.
  int64_t alias(int64_t id) {
    Entry entry = entries[id];
    entry.aliasOf = id;
    entries.push_back(entry);
    return static_cast<int64_t>(entries.size()) - 1;
  }

  /// Loads a program made of `step` alone and runs it in the run `context`
  /// describes.
  void run(const nlohmann::json &step, const RunContext &context = {}) {
    Program program = load(step);
    std::unique_ptr<Backend> backend = createBackend(backendName);
    // One device in this process, as meshrun on one device has it: the CPU
    // device then has every core (or MESHC_CPU_THREADS threads).
    backend->setLocalDevices(1);
    std::unique_ptr<Device> device = backend->createDevice(program, 0);
    if (ranKinds)
      ranKinds->insert(program.steps[0].op());
    device->allocate(program.arenaBytes, program.scratchBytes);
    for (const Entry &entry : entries)
      if (entry.aliasOf < 0)
        device->write(entry.offset, entry.data.data(),
                      static_cast<int64_t>(entry.data.size()));
    device->run(program.steps[0], nullptr, context);
    for (Entry &entry : entries)
      device->read(entry.offset, entry.data.data(),
                   static_cast<int64_t>(entry.data.size()));
  }

  /// Loads a program made of `step` alone (throws the loader's errors).
  Program load(const nlohmann::json &step) const {
    nlohmann::json buffers = nlohmann::json::array();
    for (size_t id = 0; id < entries.size(); ++id)
      buffers.push_back(
          {{"id", id},
           {"dtype", entries[id].dtype},
           {"shape", {entries[id].data.size() / entries[id].elementBytes}},
           {"offset", entries[id].offset},
           {"bytes", entries[id].data.size()}});
    nlohmann::json program = {{"format", "meshc-mprog"},
                              {"version", 1},
                              {"program", "step"},
                              {"mesh", nlohmann::json::array()},
                              {"seed", 1},
                              {"arena_bytes", arenaBytes},
                              {"buffers", buffers},
                              {"tensors", nlohmann::json::array()},
                              {"steps", {step}}};
    return parseProgram(program.dump(), "step.mprog");
  }

  /// The f32 contents of buffer `id` after run().
  std::vector<float> readF32(int64_t id) const { return read<float>(id); }
  /// The i32 contents of buffer `id` after run().
  std::vector<int32_t> readI32(int64_t id) const { return read<int32_t>(id); }
  /// The contents of bf16 or f16 buffer `id` after run(), as f32.
  std::vector<float> readHalf(int64_t id) const {
    const Entry &entry = entries[id];
    std::vector<float> values;
    for (size_t i = 0; i < entry.data.size() / 2; ++i) {
      uint16_t bits;
      std::memcpy(&bits, entry.data.data() + 2 * i, 2);
      values.push_back(entry.dtype == "bf16" ? meshc::half::f32FromBf16(bits)
                                             : meshc::half::f32FromF16(bits));
    }
    return values;
  }

  /// The contents of float buffer `id` (f32, bf16 or f16) after run(), as
  /// f32.
  std::vector<float> readFloats(int64_t id) const {
    return entries[id].dtype == "f32" ? readF32(id) : readHalf(id);
  }

private:
  struct Entry {
    std::string dtype;
    int64_t offset = 0;
    std::vector<char> data;
    int64_t aliasOf = -1;
    int64_t elementBytes = 4;
  };

  int64_t add(const std::string &dtype, const void *values, int64_t count,
              int64_t elementBytes = 4) {
    Entry entry{dtype, arenaBytes, std::vector<char>(count * elementBytes), -1,
                elementBytes};
    if (count > 0)
      std::memcpy(entry.data.data(), values, count * elementBytes);
    arenaBytes += (count * elementBytes + 63) / 64 * 64;
    entries.push_back(std::move(entry));
    return static_cast<int64_t>(entries.size()) - 1;
  }

  template <typename T> std::vector<T> read(int64_t id) const {
    std::vector<T> values(entries[id].data.size() / 4);
    if (!values.empty())
      std::memcpy(values.data(), entries[id].data.data(), values.size() * 4);
    return values;
  }

  std::string backendName;
  std::set<OpKind> *ranKinds;
  std::vector<Entry> entries;
  int64_t arenaBytes = 0;
};

/// An einsum operand for the naive reference.
struct NaiveOperand {
  std::vector<std::string> dims;
  const std::vector<float> *data;
};

/// out[out dims] = sum over all other dims of the product of the operands,
/// by brute force over the whole index space, in double.
inline std::vector<float>
naiveEinsum(const std::vector<NaiveOperand> &operands,
            const std::vector<std::string> &out,
            const std::map<std::string, int64_t> &sizes) {
  std::vector<std::string> all;
  for (const auto &[name, size] : sizes)
    all.push_back(name);
  auto offsetOf = [&](const std::vector<std::string> &dims,
                      const std::map<std::string, int64_t> &index) {
    int64_t offset = 0;
    for (const std::string &dim : dims)
      offset = offset * sizes.at(dim) + index.at(dim);
    return offset;
  };
  int64_t outCount = 1, total = 1;
  for (const std::string &dim : out)
    outCount *= sizes.at(dim);
  for (const auto &[name, size] : sizes)
    total *= size;
  std::vector<double> sum(outCount, 0.0);
  std::map<std::string, int64_t> index;
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t rest = flat;
    for (size_t d = all.size(); d-- > 0;) {
      index[all[d]] = rest % sizes.at(all[d]);
      rest /= sizes.at(all[d]);
    }
    double product = 1.0;
    for (const NaiveOperand &operand : operands)
      product *= (*operand.data)[offsetOf(operand.dims, index)];
    sum[offsetOf(out, index)] += product;
  }
  return std::vector<float>(sum.begin(), sum.end());
}

} // namespace meshc::runtime::testing

#endif // MESHC_TESTS_UNIT_RUNTIME_STEPHARNESS_H
