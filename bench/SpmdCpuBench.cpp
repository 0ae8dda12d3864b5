//===- SpmdCpuBench.cpp - SPMD on CPU virtual devices vs the reference ----===//
//
// Per-step time of a compiled model on 1, 2, 4 and 8 CPU virtual devices
// (data parallel over the batch, and Megatron-style where the model has a
// hidden/ff dim), next to the reference interpreter on the same machine, in
// one run. Prints a table with ratios; see docs/performance.md.
//
//   meshc-bench-spmd [--steps N] [model.mtf ...]
//
//===----------------------------------------------------------------------===//

#include "compiler/driver/Pipeline.h"
#include "compiler/driver/Registration.h"
#include "compiler/interpreter/Interpreter.h"
#include "compiler/passes/LayoutBridge.h"
#include "frontend/Frontend.h"
#include "lowering/EmitMprog.h"
#include "runtime/Loader.h"
#include "runtime/Session.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

using namespace mlir;
using Clock = std::chrono::steady_clock;

namespace {

/// Median of `runs` timings of `fn`, in milliseconds.
template <typename Fn> double medianMs(int runs, Fn fn) {
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    auto start = Clock::now();
    fn();
    times.push_back(
        std::chrono::duration<double, std::milli>(Clock::now() - start)
            .count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

struct Config {
  const char *mesh;
  const char *layout;
};

int benchModel(const std::string &path, int steps) {
  DialectRegistry registry;
  meshc::registerAll(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    std::fprintf(stderr, "bench: cannot read %s\n", path.c_str());
    return 1;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  // Only errors matter here.
  ScopedDiagnosticHandler quiet(&context, [](Diagnostic &diag) {
    return success(diag.getSeverity() != DiagnosticSeverity::Error);
  });
  OwningOpRef<ModuleOp> module = meshc::frontend::importMtf(sourceMgr, context);
  // A model that trains is timed as a whole training step (forward,
  // backward, update) on both sides.
  if (!module || failed(meshc::differentiate(*module)))
    return 1;
  auto program = *module->getOps<mtf::ProgramOp>().begin();
  // Megatron-style configurations split the MLP's inner dimension.
  std::string ff;
  for (auto &[name, size] : meshc::collectModelDims(program))
    if (name == "hidden" || name == "d_ff")
      ff = name;
  bool megatron = !ff.empty();

  double reference = medianMs(steps, [&] {
    (void)meshc::interp::interpret(program, meshc::interp::Options());
  });
  std::printf("\n%s (reference interpreter: %.3f ms per step)\n", path.c_str(),
              reference);
  std::printf("  %-8s %-26s %12s %14s\n", "devices", "layout", "ms/step",
              "reference/spmd");

  std::vector<std::pair<std::string, std::string>> configs = {
      {"", ""}, {"b:2", "batch:b"}, {"b:4", "batch:b"}, {"b:8", "batch:b"}};
  if (megatron) {
    configs.push_back({"b:2;m:4", "batch:b;" + ff + ":m"});
    configs.push_back({"m:8", ff + ":m"});
  }
  for (const auto &[meshText, layoutText] : configs) {
    meshc::layout::Mesh mesh;
    if (!meshText.empty())
      mesh = *meshc::layout::Mesh::parse(meshText);
    meshc::layout::LayoutRules rules;
    if (!layoutText.empty())
      rules = *meshc::layout::LayoutRules::parse(layoutText);
    OwningOpRef<ModuleOp> compiled = module->clone();
    if (failed(meshc::layoutAndPartition(*compiled, mesh, rules)))
      return 1;
    FailureOr<llvm::json::Value> mprog =
        meshc::emitMprog(*compiled, meshc::MprogOptions());
    if (failed(mprog))
      return 1;
    meshc::runtime::Program loaded = meshc::runtime::parseProgram(
        llvm::formatv("{0}", *mprog).str(), "bench.mprog");
    meshc::runtime::Session session(loaded, meshc::runtime::SessionOptions());
    session.runStep(); // warm-up: first touch of the arenas
    double spmd = medianMs(steps, [&] { session.runStep(); });
    std::string label =
        meshText.empty() ? std::string("(whole)") : meshText + " " + layoutText;
    std::printf("  %-8lld %-26s %12.3f %14.1fx\n",
                static_cast<long long>(mesh.numDevices()), label.c_str(), spmd,
                reference / spmd);
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  int steps = 20;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--steps" && i + 1 < argc)
      steps = std::max(1, std::atoi(argv[++i]));
    else
      models.push_back(arg);
  }
  if (models.empty())
    models = {std::string(MESHC_EXAMPLES_DIR) + "/mlp/mlp.mtf",
              std::string(MESHC_EXAMPLES_DIR) + "/transformer/block.mtf"};
  std::printf("meshc SPMD on CPU virtual devices vs the reference interpreter "
              "(median of %d steps; %u hardware threads)\n",
              steps, std::thread::hardware_concurrency());
  try {
    for (const std::string &model : models)
      if (int rc = benchModel(model, steps))
        return rc;
  } catch (const std::exception &error) {
    std::fprintf(stderr, "bench: %s\n", error.what());
    return 1;
  }
  return 0;
}
