//===- Calibrate.cpp - meshc-calibrate: a machine profile, measured -------===//

#include "runtime/Calibrate.h"

#include "runtime/Error.h"
#include "runtime/FileWrite.h"
#include "runtime/Loader.h"
#include "runtime/Meshrun.h"
#include "runtime/Session.h"
#include "runtime/core/cost/CostModel.h"

#ifdef MESHC_HAVE_MPI
#include "runtime/mpi/MpiCollectives.h"
#endif

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace meshc::runtime {
namespace {

using Json = nlohmann::ordered_json;

/// The sizes the measurements use (smaller with --quick, for tests).
struct Sizes {
  int64_t overheadSteps = 4096;
  int64_t gemm = 512;
  int64_t gemmSteps = 8;
  int64_t smallGemm = 16;
  int64_t smallGemmBatch = 64;
  int64_t smallGemmSteps = 32;
  int64_t cacheElements = 32768;
  int64_t cacheSteps = 256;
  int64_t fusedElements = int64_t(1) << 18;
  int64_t fusedSteps = 8;
  int64_t attentionSteps = 4;
  int64_t memoryElements = int64_t(8) << 20;
  int64_t memorySteps = 8;
  int64_t smallSteps = 64;
  int64_t largeElements = int64_t(1) << 20;
  int64_t largeSteps = 8;
  int64_t runs = 7;
};

Sizes quickSizes() {
  Sizes s;
  s.overheadSteps = 32;
  s.gemm = 64;
  s.gemmSteps = 2;
  s.smallGemmBatch = 4;
  s.smallGemmSteps = 2;
  s.cacheSteps = 16;
  s.fusedElements = 1 << 12;
  s.fusedSteps = 2;
  s.attentionSteps = 1;
  s.memoryElements = 1 << 16;
  s.memorySteps = 2;
  s.smallSteps = 8;
  s.largeElements = 1 << 12;
  s.largeSteps = 2;
  s.runs = 2;
  return s;
}

/// A .mprog program on mesh b:devices, built tensor by tensor.
class ProgramText {
public:
  explicit ProgramText(int64_t devices) : devices(devices) {}

  /// An f32 input (role "input") of per-device shape `shape` (dims
  /// `names`); its first dim is split over b when `split`. Returns its
  /// buffer id.
  int64_t input(const std::string &name, std::vector<std::string> names,
                std::vector<int64_t> shape, bool split) {
    int64_t id = static_cast<int64_t>(buffers.size());
    int64_t elements = 1;
    for (int64_t size : shape)
      elements *= size;
    int64_t bytes = elements * 4;
    buffers.push_back({{"id", id},
                       {"dtype", "f32"},
                       {"offset", arenaBytes},
                       {"bytes", bytes},
                       {"shape", shape}});
    arenaBytes += (bytes + 63) / 64 * 64;
    Json dims = Json::array();
    for (size_t d = 0; d < names.size(); ++d)
      dims.push_back(
          {{"name", names[d]},
           {"size", d == 0 && split ? shape[d] * devices : shape[d]},
           {"axes", d == 0 && split ? Json::array({"b"}) : Json::array()}});
    tensors.push_back({{"name", name},
                       {"role", "input"},
                       {"dtype", "f32"},
                       {"buffer", id},
                       {"dims", dims}});
    return id;
  }

  void step(Json step) { steps.push_back(std::move(step)); }

  std::string text() const {
    Json program = {{"format", "meshc-mprog"},
                    {"version", 1},
                    {"program", "calibrate"},
                    {"seed", 1},
                    {"mesh", Json::array({{{"name", "b"}, {"size", devices}}})},
                    {"arena_bytes", std::max<int64_t>(arenaBytes, 64)},
                    {"buffers", buffers},
                    {"tensors", tensors},
                    {"steps", steps}};
    return program.dump();
  }

private:
  int64_t devices;
  int64_t arenaBytes = 0;
  Json buffers = Json::array(), tensors = Json::array(), steps = Json::array();
};

struct Context {
  int64_t devices = 2;
  ProcessGroup *processes = nullptr;
  Sizes sizes;
  std::ostream *log = nullptr;
};

/// The median wall time of the steps of `program` over the runs, after one
/// warm-up run.
double timeProgram(const Context &context, const ProgramText &program) {
  Program parsed = parseProgram(program.text(), "<meshc-calibrate>");
  SessionOptions options;
  options.processes = context.processes;
  Session session(parsed, options);
  session.runStep(RunMode::Eval);
  std::vector<double> times;
  for (int64_t r = 0; r < context.sizes.runs; ++r)
    times.push_back(session.runStep(RunMode::Eval));
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// The seconds of one of `count` steps that `add` appends, beyond what the
/// same program without them takes.
template <typename Build, typename Add>
double perStep(const Context &context, Build build, Add add, int64_t count) {
  ProgramText empty(context.devices), full(context.devices);
  build(empty);
  auto ids = build(full);
  for (int64_t i = 0; i < count; ++i)
    add(full, ids);
  double base = timeProgram(context, empty);
  double with = timeProgram(context, full);
  return std::max(with - base, 0.0) / static_cast<double>(count);
}

/// Seconds of one run of a program without steps (its devices' threads
/// started and joined, or the ranks' run).
double measureRunOverhead(const Context &context) {
  ProgramText empty(context.devices);
  empty.input("x", {"batch"}, {1}, true);
  return timeProgram(context, empty);
}

Json operand(int64_t buffer, std::vector<std::string> dims) {
  return {{"buf", buffer}, {"dims", dims}};
}

/// The step overhead: in-place negations of one element per device.
double measureOverhead(const Context &context) {
  return perStep(
      context,
      [](ProgramText &p) { return p.input("x", {"batch"}, {1}, true); },
      [](ProgramText &p, int64_t x) {
        p.step({{"op", "unary"}, {"fn", "negate"}, {"in", x}, {"out", x}});
      },
      context.sizes.overheadSteps);
}

/// GEMM FLOP/s: [1, n, n] x [n, n] einsums per device.
double measureGemm(const Context &context, double overhead) {
  int64_t n = context.sizes.gemm;
  double seconds = perStep(
      context,
      [n](ProgramText &p) {
        return std::vector<int64_t>{
            p.input("a", {"batch", "m", "k"}, {1, n, n}, true),
            p.input("w", {"k", "n"}, {n, n}, false),
            p.input("c", {"batch", "m", "n"}, {1, n, n}, true)};
      },
      [n](ProgramText &p, const std::vector<int64_t> &ids) {
        p.step({{"op", "einsum"},
                {"in", Json::array({operand(ids[0], {"batch", "m", "k"}),
                                    operand(ids[1], {"k", "n"})})},
                {"out", operand(ids[2], {"batch", "m", "n"})},
                {"sizes", {{"batch", 1}, {"m", n}, {"k", n}, {"n", n}}}});
      },
      context.sizes.gemmSteps);
  return 2.0 * double(n) * double(n) * double(n) /
         std::max(seconds - overhead, 1e-9);
}

/// Seconds of one batched einsum of `batch` [n, n] x [n, n] GEMMs per
/// device: [batch, p, m, k] x [p, k, n] -> [batch, p, m, n].
double measureBatchedGemm(const Context &context, int64_t n, int64_t batch,
                          int64_t count) {
  return perStep(
      context,
      [n, batch](ProgramText &p) {
        return std::vector<int64_t>{
            p.input("a", {"batch", "p", "m", "k"}, {1, batch, n, n}, true),
            p.input("w", {"p", "k", "n"}, {batch, n, n}, false),
            p.input("c", {"batch", "p", "m", "n"}, {1, batch, n, n}, true)};
      },
      [n, batch](ProgramText &p, const std::vector<int64_t> &ids) {
        p.step({{"op", "einsum"},
                {"in", Json::array({operand(ids[0], {"batch", "p", "m", "k"}),
                                    operand(ids[1], {"p", "k", "n"})})},
                {"out", operand(ids[2], {"batch", "p", "m", "n"})},
                {"sizes",
                 {{"batch", 1}, {"p", batch}, {"m", n}, {"k", n}, {"n", n}}}});
      },
      count);
}

/// Seconds of one in-place add x = x + x of `elements` per device.
double measureAdd(const Context &context, int64_t elements, int64_t count) {
  return perStep(
      context,
      [elements](ProgramText &p) {
        return p.input("x", {"batch", "d"}, {1, elements}, true);
      },
      [elements](ProgramText &p, int64_t x) {
        p.step({{"op", "binary"},
                {"fn", "add"},
                {"lhs", operand(x, {"batch", "d"})},
                {"rhs", operand(x, {"batch", "d"})},
                {"out", operand(x, {"batch", "d"})},
                {"sizes", {{"batch", 1}, {"d", elements}}}});
      },
      count);
}

/// The body ops (constants aside) of measureFused's step.
constexpr int64_t kFusedBodyOps = 15;

/// Seconds of one fused step of `elements` per device whose body is an
/// optimizer-like chain of kFusedBodyOps ops over three inputs (multiplies,
/// adds, three divisions and a square root, as Adam's update has), every
/// divisor at least 1: what the model prices at fused_flops.
double measureFused(const Context &context, int64_t elements, int64_t count) {
  return perStep(
      context,
      [elements](ProgramText &p) {
        return std::vector<int64_t>{
            p.input("x", {"batch", "d"}, {1, elements}, true),
            p.input("y", {"batch", "d"}, {1, elements}, true),
            p.input("z", {"batch", "d"}, {1, elements}, true),
            p.input("r", {"batch", "d"}, {1, elements}, true)};
      },
      [elements](ProgramText &p, const std::vector<int64_t> &ids) {
        auto op = [](const char *fn, std::vector<int> args) {
          return Json{{"fn", fn}, {"args", args}};
        };
        // Values: 0 x, 1 y, 2 z, then one per instruction from 3.
        Json body = Json::array({
            Json{{"fn", "const"}, {"value", 1.0}}, // 3
            op("mul", {0, 0}),                     // 4: x^2
            op("add", {4, 3}),                     // 5: x^2 + 1
            op("sqrt", {5}),                       // 6
            op("mul", {1, 2}),                     // 7
            op("div", {7, 6}),                     // 8
            op("mul", {8, 8}),                     // 9
            op("add", {9, 5}),                     // 10: >= 1
            op("div", {1, 10}),                    // 11
            op("sub", {0, 11}),                    // 12
            op("mul", {12, 3}),                    // 13
            op("add", {13, 2}),                    // 14
            op("div", {14, 6}),                    // 15
            op("mul", {15, 0}),                    // 16
            op("add", {16, 7}),                    // 17
            op("sub", {17, 1}),                    // 18
        });
        Json dims = Json::array({"batch", "d"});
        p.step(
            {{"op", "fused"},
             {"in", Json::array({operand(ids[0], dims), operand(ids[1], dims),
                                 operand(ids[2], dims)})},
             {"out",
              Json::array({{{"buf", ids[3]}, {"dims", dims}, {"value", 18}}})},
             {"dims", dims},
             {"reduced", 0},
             {"body", body},
             {"sizes", {{"batch", 1}, {"d", elements}}}});
      },
      count);
}

/// Fused attention of batch x heads groups of `length` queries over as
/// many keys, head and value rows of `width`, per device.
struct AttentionShape {
  int64_t batch = 8, heads = 4, length = 128, width = 32;
  /// The GEMM FLOPs the model counts: 2 G M N (D + E).
  double flops() const {
    return 2.0 * double(batch * heads) * double(length) * double(length) *
           double(2 * width);
  }
};

/// Seconds of one fused attention step of `shape` per device.
double measureAttention(const Context &context, const AttentionShape &shape,
                        int64_t count) {
  return perStep(
      context,
      [shape](ProgramText &p) {
        std::vector<std::string> q = {"batch", "seq", "heads", "d"},
                                 kv = {"batch", "memory", "heads", "d"};
        std::vector<int64_t> sizes = {shape.batch, shape.length, shape.heads,
                                      shape.width};
        return std::vector<int64_t>{
            p.input("q", q, sizes, true), p.input("k", kv, sizes, true),
            p.input("v", kv, sizes, true), p.input("o", q, sizes, true),
            p.input("lse", {"batch", "seq", "heads"},
                    {shape.batch, shape.length, shape.heads}, true)};
      },
      [shape](ProgramText &p, const std::vector<int64_t> &ids) {
        Json q = Json::array({"batch", "seq", "heads", "d"}),
             kv = Json::array({"batch", "memory", "heads", "d"});
        p.step({{"op", "attention"},
                {"in", Json::array({Json{{"buf", ids[0]}, {"dims", q}},
                                    Json{{"buf", ids[1]}, {"dims", kv}},
                                    Json{{"buf", ids[2]}, {"dims", kv}}})},
                {"out", Json{{"buf", ids[3]}, {"dims", q}}},
                {"lse", Json{{"buf", ids[4]},
                             {"dims", Json::array({"batch", "seq", "heads"})}}},
                {"key", "memory"},
                {"head", Json::array({"d"})},
                {"scale", 0.125},
                {"sizes",
                 {{"batch", shape.batch},
                  {"seq", shape.length},
                  {"memory", shape.length},
                  {"heads", shape.heads},
                  {"d", shape.width}}}});
      },
      count);
}

/// Seconds of one all-reduce over b of `elements` f32 per device.
double measureAllReduce(const Context &context, int64_t elements,
                        int64_t count) {
  return perStep(
      context,
      [elements](ProgramText &p) {
        return p.input("x", {"d"}, {elements}, false);
      },
      [](ProgramText &p, int64_t x) {
        p.step({{"op", "all_reduce"},
                {"buf", x},
                {"axes", Json::array({"b"})},
                {"reduction", "sum"}});
      },
      count);
}

std::string today() {
  std::time_t now = std::time(nullptr);
  char text[16];
  std::strftime(text, sizeof text, "%Y-%m-%d", std::gmtime(&now));
  return text;
}

std::string cpuModel() {
  std::ifstream info("/proc/cpuinfo");
  std::string line;
  while (std::getline(info, line))
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos)
        return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  return "an unknown CPU";
}

Json measure(const Context &context, const std::string &name,
             const std::string &transport) {
  const Sizes &s = context.sizes;
  auto say = [&](const std::string &what) {
    if (context.log)
      *context.log << "meshc-calibrate: " << what << std::endl;
  };
  say("run and step overhead");
  double runOverhead = measureRunOverhead(context);
  double overhead = measureOverhead(context);
  say("GEMM rate");
  double gemm = measureGemm(context, overhead);
  say("GEMM call overhead");
  int64_t g = s.smallGemm;
  double batched =
      measureBatchedGemm(context, g, s.smallGemmBatch, s.smallGemmSteps);
  double callOverhead =
      std::max(batched - overhead -
                   2.0 * double(s.smallGemmBatch * g * g * g) / gemm,
               0.0) /
      double(s.smallGemmBatch);
  say("vector rate");
  double cache = measureAdd(context, s.cacheElements, s.cacheSteps);
  double vector = double(s.cacheElements) / std::max(cache - overhead, 1e-9);
  say("fused rate");
  double fusedSeconds = measureFused(context, s.fusedElements, s.fusedSteps);
  double fused = double(kFusedBodyOps * s.fusedElements) /
                 std::max(fusedSeconds - overhead, 1e-9);
  say("attention rate");
  AttentionShape attentionShape;
  double attention =
      attentionShape.flops() /
      std::max(measureAttention(context, attentionShape, s.attentionSteps) -
                   overhead,
               1e-9);
  say("memory bandwidth");
  double memory = measureAdd(context, s.memoryElements, s.memorySteps);
  double bandwidth =
      3.0 * 4.0 * double(s.memoryElements) / std::max(memory - overhead, 1e-9);
  say("all-reduce latency and bandwidth");
  int64_t n = context.devices;
  double small = measureAllReduce(context, 1, s.smallSteps);
  double large = measureAllReduce(context, s.largeElements, s.largeSteps);
  int64_t steps = cost::ringSteps(layout::CollectiveKind::AllReduce, n);
  double latency =
      std::max(small - overhead, 0.0) / double(std::max<int64_t>(steps, 1));
  double received = double(layout::collectiveBytesPerDevice(
      layout::CollectiveKind::AllReduce, 4 * s.largeElements, n));
  double linkBandwidth =
      received / std::max(large - overhead - double(steps) * latency, 1e-9);

  // Whether meshrun --overlap auto runs started collectives beside the
  // steps here: the backend's rule for this process's devices.
  std::unique_ptr<Backend> backend = createBackend("cpu");
  backend->setLocalDevices(context.processes ? 1 : n);
  bool overlaps = backend->overlapPays();

  std::string where = "measured by meshc-calibrate on " + today() + ", " +
                      cpuModel() + ", " + std::to_string(n) + " devices (" +
                      transport + "): ";
  Json profile = {
      {"name", name},
      {"description", "this machine as meshrun runs it: " + std::to_string(n) +
                          " CPU devices, " + transport + "; " + cpuModel()},
      {"devices_per_node", n},
      {"gemm_flops", {{"f32", gemm}, {"bf16", gemm}}},
      {"vector_flops", vector},
      {"fused_flops", fused},
      {"attention_flops", attention},
      {"memory_bandwidth", bandwidth},
      {"step_overhead", overhead},
      {"gemm_call_overhead", callOverhead},
      {"run_overhead", runOverhead},
      {"overlaps_communication", overlaps},
      {"links",
       {{"intra_node", {{"latency", latency}, {"bandwidth", linkBandwidth}}}}},
      {"sources",
       {{"gemm_flops.f32",
         where + "an einsum [1, " + std::to_string(s.gemm) + ", " +
             std::to_string(s.gemm) + "] x [" + std::to_string(s.gemm) + ", " +
             std::to_string(s.gemm) + "] per device, less the step overhead"},
        {"overlaps_communication",
         "meshrun --overlap auto's choice on this machine for " +
             std::to_string(n) + " devices (" + transport +
             "): lanes where each device has a core for its steps and one "
             "for its collectives (CpuBackend::overlapPays)"},
        {"gemm_flops.bf16", "the f32 rate: the CPU backend runs f32 only"},
        {"vector_flops", where + "elements per second of an in-place add of " +
                             std::to_string(s.cacheElements) +
                             " f32 per device (in cache)"},
        {"fused_flops",
         where + "body ops per second of a fused step of " +
             std::to_string(kFusedBodyOps) +
             " ops (multiplies, adds, 3 divisions, a square root) over " +
             std::to_string(s.fusedElements) + " elements per device"},
        {"attention_flops",
         where + "the GEMM FLOPs (2 G M N (D + E)) per second of fused "
                 "attention of 32 groups of 128 queries over 128 keys, "
                 "rows of 32, per device"},
        {"memory_bandwidth",
         where +
             "bytes (2 read, 1 written) per second of an in-place add "
             "of " +
             std::to_string(s.memoryElements) + " f32 per device"},
        {"step_overhead",
         where + "one in-place negate of one element per device"},
        {"run_overhead", where + "one run of a program without steps"},
        {"gemm_call_overhead",
         where + "an einsum of " + std::to_string(s.smallGemmBatch) + " [" +
             std::to_string(g) + ", " + std::to_string(g) +
             "] GEMMs per device, less the step overhead and its FLOPs at "
             "the GEMM rate, per GEMM"},
        {"links.intra_node.latency",
         where + "an all-reduce of 4 B over every device, less the step "
                 "overhead, per ring step"},
        {"links.intra_node.bandwidth",
         where + "the bytes each device receives in an all-reduce of " +
             std::to_string(4 * s.largeElements) +
             " B per device, over its time less the ring steps' latency"},
        {"devices_per_node", "the devices of this one machine"}}}};
  return profile;
}

void usage(std::ostream &out) {
  out << "usage: meshc-calibrate [--devices N] [--name NAME] [-o FILE] "
         "[--quick]\n"
         "       mpirun -np N meshc-calibrate [--name NAME] [-o FILE]\n"
         "Measures a machine profile for meshc --explain --machine FILE "
         "(docs/cost.md):\n"
         "N CPU devices as threads of one process (default 2), or under "
         "mpirun one\n"
         "device per rank with the MPI collectives.\n";
}

} // namespace

int calibrateMain(int argc, const char *const *argv, std::ostream &out,
                  std::ostream &err) {
  reportFileSizeLimitAsError();
  Context context;
  std::string name, output;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        throw RuntimeError(arg + " needs a value");
      return argv[++i];
    };
    try {
      if (arg == "--help" || arg == "-h") {
        usage(out);
        return 0;
      } else if (arg == "--devices") {
        std::string text = value();
        char *end = nullptr;
        long long devices = std::strtoll(text.c_str(), &end, 10);
        if (text.empty() || *end || devices < 1 || devices > 4096)
          throw RuntimeError("--devices: expected a whole number from 1 to "
                             "4096, got '" +
                             text + "'");
        context.devices = devices;
      } else if (arg == "--name") {
        name = value();
        if (name.empty())
          throw RuntimeError("--name: expected a name");
      } else if (arg == "-o") {
        output = value();
      } else if (arg == "--quick") {
        context.sizes = quickSizes();
      } else {
        throw RuntimeError("unknown argument '" + arg +
                           "' (see meshc-calibrate --help)");
      }
    } catch (const RuntimeError &error) {
      err << "meshc-calibrate: error: " << error.what() << "\n";
      return 1;
    }
  }
  std::string transport = "threads";
  bool root = true;
  try {
#ifdef MESHC_HAVE_MPI
    std::unique_ptr<MpiProcessGroup> world;
    if (launchedRanks() > 1) {
      world = std::make_unique<MpiProcessGroup>();
      context.processes = world.get();
      context.devices = world->size();
      transport = "MPI, one rank per device";
      root = world->rank() == 0;
    }
#else
    if (launchedRanks() > 1)
      throw RuntimeError("started by mpirun, but this build has no MPI");
#endif
    if (name.empty()) {
      char host[256] = "cpu";
      gethostname(host, sizeof host - 1);
      name = std::string(host) + "-" + std::to_string(context.devices) +
             (context.processes ? "-mpi" : "-threads");
    }
    if (root)
      context.log = &err;
    Json profile = measure(context, name, transport);
    std::string text = profile.dump(2) + "\n";
    // The profile must read back: the same checks as --machine.
    auto checked = cost::parseMachineProfile(text, name);
    if (!checked.ok())
      throw RuntimeError("the measured profile is not valid: " +
                         checked.error().str());
    if (root) {
      if (output.empty()) {
        out << text;
      } else {
        writeFileAtomically(output, text);
        err << "meshc-calibrate: wrote " << output << "\n";
      }
    }
  } catch (const std::exception &error) {
    err << "meshc-calibrate: error: " << error.what() << "\n";
    return 1;
  }
  return 0;
}

} // namespace meshc::runtime
