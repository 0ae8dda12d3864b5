//===- AutoLayout.cpp - meshc --layout auto -------------------------------===//

#include "compiler/driver/AutoLayout.h"

#include "compiler/driver/Explain.h"
#include "compiler/driver/Pipeline.h"
#include "compiler/passes/LayoutBridge.h"
#include "dialect/MtfDialect.h"
#include "lowering/EmitMprog.h"
#include "lowering/ProgramCost.h"
#include "runtime/core/cost/CostModel.h"
#include "runtime/core/layout/LayoutSpace.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ThreadPool.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>

namespace meshc {

using namespace mlir;

namespace {

/// More layouts than this are refused rather than searched for minutes.
constexpr size_t kMaxCandidates = 20000;
/// Full-depth plans tried, fastest first, before a memory limit is given up
/// on (each is a whole compile of a deep model).
constexpr size_t kMaxFullChecks = 8;

/// What the search knows of one layout: its predicted run, the bytes each
/// device receives per run, and per device its planned arena and the most
/// bytes live at once (the arena's lower bound).
struct Figures {
  cost::Prediction prediction;
  int64_t received = 0;
  int64_t arena = 0;
  int64_t peakLive = 0;
};

/// A global program the figures are measured on, and its weight in the
/// estimate of the model as written.
struct Variant {
  OwningOpRef<ModuleOp> owned;
  ModuleOp module;
  double weight = 1;
};

struct Candidate {
  std::string text;
  layout::LayoutRules rules;
  /// Whether every variant compiled, predicted and planned.
  bool valid = false;
  /// The first error of the first variant that failed: why it is refused.
  std::string error;
  /// The estimate for the model as written.
  Figures figures;
  /// The memory the search compares with the limit: the planned arena, or
  /// where figures are extrapolated, the extrapolated peak of live bytes
  /// (first-fit's gaps do not grow linearly; the live bytes do).
  int64_t memory = 0;
};

/// Where the errors of the compile on this thread go (the first one is
/// kept); none: dropped.
thread_local std::string *diagnosticSink = nullptr;

/// The search's diagnostic handler: the first error of each compile goes to
/// its thread's sink; warnings and remarks are dropped.
LogicalResult captureError(Diagnostic &diag) {
  if (diag.getSeverity() == DiagnosticSeverity::Error && diagnosticSink &&
      diagnosticSink->empty())
    *diagnosticSink = diag.str();
  return success();
}

/// Lays out, partitions (and fuses) a copy of `module` with `rules` as
/// `partition` says, then predicts its run and plans its memory. On failure the
/// first error is in `error`.
std::optional<Figures> measure(ModuleOp module, const layout::Mesh &mesh,
                               const layout::LayoutRules &rules,
                               const cost::MachineProfile &machine,
                               const PartitionOptions &partition,
                               std::string &error) {
  diagnosticSink = &error;
  llvm::scope_exit reset([] { diagnosticSink = nullptr; });
  OwningOpRef<ModuleOp> copy = module.clone();
  PartitionOptions unverified = partition;
  unverified.verifyEachPass = false;
  if (failed(layoutAndPartition(*copy, mesh, rules, unverified)))
    return std::nullopt;
  Figures figures;
  ProgramCost cost = predictProgram(*copy, mesh, machine);
  figures.prediction = cost.prediction;
  for (const CollectiveCost &collective : cost.collectives)
    figures.received += collective.received * collective.count;
  FailureOr<MemoryPlanStats> plan = planMprogMemory(*copy);
  if (failed(plan))
    return std::nullopt;
  figures.arena = plan->arenaBytes;
  figures.peakLive = plan->peakLiveBytes;
  return figures;
}

/// The weighted sum of `parts`: the linear extrapolation of each figure.
Figures combine(const std::vector<std::pair<double, Figures>> &parts) {
  double compute = 0, communication = 0, hidden = 0, overhead = 0, steps = 0,
         collectives = 0, received = 0, arena = 0, peakLive = 0;
  for (const auto &[weight, f] : parts) {
    compute += weight * f.prediction.compute;
    communication += weight * f.prediction.communication;
    hidden += weight * f.prediction.hidden;
    overhead += weight * f.prediction.overhead;
    steps += weight * f.prediction.steps;
    collectives += weight * f.prediction.collectives;
    received += weight * f.received;
    arena += weight * f.arena;
    peakLive += weight * f.peakLive;
  }
  Figures sum;
  sum.prediction.compute = std::max(compute, 0.0);
  sum.prediction.communication = std::max(communication, 0.0);
  sum.prediction.hidden = std::clamp(hidden, 0.0, sum.prediction.communication);
  sum.prediction.overhead = std::max(overhead, 0.0);
  sum.prediction.steps = std::llround(std::max(steps, 0.0));
  sum.prediction.collectives = std::llround(std::max(collectives, 0.0));
  sum.received = std::llround(std::max(received, 0.0));
  sum.arena = std::llround(std::max(arena, 0.0));
  sum.peakLive = std::llround(std::max(peakLive, 0.0));
  return sum;
}

/// Runs `body(0..n-1)` on the context's threads (in order on this one when
/// multithreading is off). Unlike mlir::parallelFor it installs no
/// diagnostic handler of its own, so each compile's errors reach its
/// thread's diagnosticSink.
void forEachIndex(MLIRContext *context, size_t n,
                  const std::function<void(size_t)> &body) {
  if (!context->isMultithreadingEnabled() || n <= 1) {
    for (size_t i = 0; i < n; ++i)
      body(i);
    return;
  }
  std::atomic<size_t> next(0);
  llvm::ThreadPoolInterface &pool = context->getThreadPool();
  llvm::ThreadPoolTaskGroup tasks(pool);
  size_t workers = std::min<size_t>(n, pool.getMaxConcurrency());
  for (size_t w = 0; w < workers; ++w)
    tasks.async([&] {
      for (size_t i = next++; i < n; i = next++)
        body(i);
    });
  tasks.wait();
}

/// The programs the search measures. A model whose repeats (none nested)
/// write more than three instances is measured with each such repeat at two
/// instances (the base) and, per repeat r, with r at three: past the first
/// instance every figure grows linearly with the count (an instance between
/// two others adds the same steps, collectives and kept activations), so the
/// model as written is
///   base + sum_r (count_r - 2) * (three_r - base).
/// Anything else is measured as written. `how` says which.
FailureOr<std::vector<Variant>>
variantsOf(const SearchModel &model, std::string &how, llvm::raw_ostream &err) {
  std::vector<Variant> variants;
  std::vector<const frontend::RepeatSite *> shrunk;
  bool nested = false;
  for (const frontend::RepeatSite &site : model.repeats) {
    nested |= site.nested;
    if (site.count > 3)
      shrunk.push_back(&site);
  }
  if (shrunk.empty() || nested || !model.reimport) {
    if (nested && !shrunk.empty())
      how = "measured as written (its repeats are nested)";
    variants.push_back({nullptr, model.full, 1});
    return variants;
  }
  frontend::ImportOptions base;
  for (const frontend::RepeatSite *site : shrunk)
    base.repeatCounts[{site->line, site->column}] = 2;
  double baseWeight = 1;
  variants.push_back({model.reimport(base), ModuleOp(), 0});
  how = "extrapolated from 2 and 3 instances of";
  for (const frontend::RepeatSite *site : shrunk) {
    frontend::ImportOptions three = base;
    three.repeatCounts[{site->line, site->column}] = 3;
    double weight = static_cast<double>(site->count - 2);
    baseWeight -= weight;
    variants.push_back({model.reimport(three), ModuleOp(), weight});
    how += (site == shrunk.front() ? " the repeat at " : ", the repeat at ") +
           model.file + ":" + std::to_string(site->line) + ":" +
           std::to_string(site->column) + " (" + std::to_string(site->count) +
           " written)";
  }
  variants.front().weight = baseWeight;
  for (Variant &variant : variants) {
    if (!variant.owned) {
      err << "meshc: error: --layout auto: the model with fewer "
             "repeat instances did not compile\n";
      return failure();
    }
    variant.module = *variant.owned;
  }
  return variants;
}

std::string displayed(const std::string &text) {
  return text.empty() ? "(none: every tensor replicated)" : text;
}

/// The reason of a refusal without its values, to count alike refusals.
std::string reasonOf(const std::string &error) {
  for (const char *known : {"is not divisible", "over the same mesh axis"})
    if (error.find(known) != std::string::npos)
      return known;
  return error.substr(0, std::min<size_t>(error.find(':'), 80));
}

/// The best layouts as a table, one row each.
void printTable(const std::vector<const Candidate *> &best,
                llvm::raw_ostream &os) {
  constexpr size_t kFigureColumns = 6;
  std::vector<std::array<std::string, kFigureColumns + 1>> rows;
  rows.push_back({"rank", "predicted", "compute", "communication", "received",
                  "memory", "layout"});
  for (size_t i = 0; i < best.size(); ++i) {
    const Figures &f = best[i]->figures;
    rows.push_back({std::to_string(i + 1),
                    cost::formatSeconds(f.prediction.total()),
                    cost::formatSeconds(f.prediction.compute),
                    cost::formatSeconds(f.prediction.communication),
                    formatBytes(f.received), formatBytes(best[i]->memory),
                    displayed(best[i]->text)});
  }
  size_t widths[kFigureColumns] = {};
  for (const auto &row : rows)
    for (size_t k = 0; k < kFigureColumns; ++k)
      widths[k] = std::max(widths[k], row[k].size());
  for (const auto &row : rows) {
    os << "  ";
    for (size_t k = 0; k < kFigureColumns; ++k) {
      os << row[k];
      os.indent(widths[k] - row[k].size() + 2);
    }
    os << row[kFigureColumns] << "\n";
  }
}

} // namespace

/// The hint when no layout fits: with microbatches too when `model` trains
/// on whole batches.
std::string memoryHint(const SearchModel &model) {
  std::string hint = "hint: raise --memory-limit, or give a mesh with more "
                     "devices";
  ModuleOp full = model.full;
  for (auto program : full.getOps<mtf::ProgramOp>())
    if (auto training = program->getAttrOfType<DictionaryAttr>(
            mtf::MtfDialect::kTrainingAttrName);
        training && !training.get("microbatches"))
      return hint + ", or hold one microbatch's activations at a time "
                    "(--microbatches)\n";
  return hint + "\n";
}

FailureOr<layout::LayoutRules> chooseLayout(const SearchModel &model,
                                            const layout::Mesh &mesh,
                                            const cost::MachineProfile &machine,
                                            const AutoLayoutOptions &options,
                                            llvm::raw_ostream &os) {
  auto start = std::chrono::steady_clock::now();
  ModuleOp full = model.full;
  MLIRContext *context = full.getContext();
  std::map<std::string, int64_t> dims = collectModelDims(full);
  // A loop's layer dim is split only by a pipeline, where the model can be
  // pipelined.
  if (!model.pipelined)
    full.walk([&](mtf::LoopOp loop) { dims.erase(loop.getDim().str()); });
  // Under device weights the candidates may cut indivisible sizes where the
  // weights let them (the driver checked the weights against the mesh).
  layout::AxisWeights weights = layout::AxisWeights::even(mesh);
  if (!options.partition.axisWeights.empty())
    weights = *layout::AxisWeights::parse(options.partition.axisWeights, mesh);
  if (options.partition.uneven)
    weights.allowIndivisible();
  std::vector<std::string> texts = layout::enumerateSearchLayouts(
      dims, collectTensorDims(full), mesh, kMaxCandidates, &weights);
  if (texts.size() > kMaxCandidates) {
    (*options.errors) << "meshc: error: --layout auto: more than "
                      << kMaxCandidates << " layouts of " << dims.size()
                      << " dims on " << mesh.rank() << " mesh axes\n"
                      << "hint: give the layout with --layout"
                      << (mesh.rank() > 1 ? ", or a mesh with fewer axes" : "")
                      << "\n";
    return failure();
  }
  std::string how;
  FailureOr<std::vector<Variant>> variants =
      variantsOf(model, how, *options.errors);
  if (failed(variants))
    return failure();

  // The pipelined models, one per way of splitting the layer dims (each
  // candidate that splits one is measured on it, as written).
  std::map<std::string, OwningOpRef<ModuleOp>> pipelinedModels;
  std::map<std::string, std::string> pipelineErrors;
  auto pipelineKey = [&](const layout::LayoutRules &rules) {
    std::string key;
    full.walk([&](mtf::LoopOp loop) {
      if (const std::vector<std::string> *axes =
              rules.axesFor(loop.getDim().str()))
        key += loop.getDim().str() + ":" + llvm::join(*axes, "+") + ";";
    });
    return key;
  };
  if (model.pipelined) {
    ScopedDiagnosticHandler capture(context, captureError);
    for (const std::string &text : texts) {
      layout::Result<layout::LayoutRules> rules =
          layout::LayoutRules::parse(text);
      if (!rules.ok() || !pipelines(full, *rules))
        continue;
      std::string key = pipelineKey(*rules);
      if (pipelinedModels.count(key) || pipelineErrors.count(key))
        continue;
      std::string error;
      diagnosticSink = &error;
      OwningOpRef<ModuleOp> built = model.pipelined(*rules);
      diagnosticSink = nullptr;
      if (built)
        pipelinedModels[key] = std::move(built);
      else
        pipelineErrors[key] = error.empty() ? "the pipeline failed" : error;
    }
  }

  // Every layout on every variant, in parallel; each compile's diagnostics
  // go to its own candidate.
  std::vector<Candidate> candidates(texts.size());
  auto measureCandidate = [&](size_t i) {
    Candidate &candidate = candidates[i];
    candidate = Candidate();
    candidate.text = texts[i];
    layout::Result<layout::LayoutRules> rules =
        layout::LayoutRules::parse(texts[i]);
    if (!rules.ok()) {
      candidate.error = rules.error().message;
      return;
    }
    candidate.rules = *rules;
    std::vector<std::pair<double, Figures>> parts;
    std::vector<Variant> pipelinedVariant;
    const std::vector<Variant> *measured = &*variants;
    if (model.pipelined && pipelines(full, candidate.rules)) {
      std::string key = pipelineKey(candidate.rules);
      if (auto error = pipelineErrors.find(key);
          error != pipelineErrors.end()) {
        candidate.error = error->second;
        return;
      }
      pipelinedVariant.push_back({nullptr, *pipelinedModels.at(key), 1});
      measured = &pipelinedVariant;
    }
    for (const Variant &variant : *measured) {
      std::optional<Figures> figures =
          measure(variant.module, mesh, candidate.rules, machine,
                  options.partition, candidate.error);
      if (!figures)
        return;
      parts.push_back({variant.weight, *figures});
    }
    candidate.valid = true;
    candidate.figures = combine(parts);
    candidate.memory = measured->size() > 1 ? candidate.figures.peakLive
                                            : candidate.figures.arena;
  };
  {
    ScopedDiagnosticHandler capture(context, captureError);
    forEachIndex(context, texts.size(), measureCandidate);
    // The refused layouts are measured again on this thread alone, for
    // their errors: the diagnostic handlers are the context's, shared by the
    // concurrent compiles, and once in about 20 searches on 2 threads a
    // layout refused for two dims on one axis lost its message. (Refusals
    // are found early, at the layout or the partition, so this is cheap.)
    for (size_t i = 0; i < candidates.size(); ++i)
      if (!candidates[i].valid)
        measureCandidate(i);
  }
  for (Candidate &candidate : candidates)
    if (!candidate.valid && candidate.error.empty())
      candidate.error = "failed without a message";

  std::vector<const Candidate *> valid;
  std::map<std::string, size_t> refusals;
  for (const Candidate &candidate : candidates) {
    if (candidate.valid)
      valid.push_back(&candidate);
    else
      ++refusals[reasonOf(candidate.error)];
  }
  std::sort(valid.begin(), valid.end(),
            [](const Candidate *a, const Candidate *b) {
              double ta = a->figures.prediction.total();
              double tb = b->figures.prediction.total();
              if (ta != tb)
                return ta < tb;
              if (a->figures.received != b->figures.received)
                return a->figures.received < b->figures.received;
              return a->text < b->text;
            });

  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  os << "layout search on ";
  if (mesh.rank())
    os << "mesh " << mesh.str() << " (" << mesh.numDevices() << " devices)";
  else
    os << "1 device";
  os << " for " << machine.name << ": " << texts.size() << " layouts, "
     << valid.size() << " valid";
  for (const auto &[reason, count] : refusals)
    os << ", " << count << " refused (" << reason << ")";
  os << "; " << llvm::format("%.1f", seconds) << " s\n";
  if (!how.empty())
    os << "  figures " << how
       << (how.rfind("extrapolated", 0) == 0
               ? "; memory is the peak of live bytes"
               : "")
       << "\n";
  if (valid.empty()) {
    (*options.errors)
        << "meshc: error: --layout auto: no layout of the model is "
           "valid on mesh "
        << mesh.str() << "\n";
    return failure();
  }

  bool extrapolated = variants->size() > 1;
  std::vector<const Candidate *> fitting;
  const Candidate *smallest = nullptr;
  for (const Candidate *candidate : valid) {
    if (!smallest || candidate->memory < smallest->memory)
      smallest = candidate;
    if (!options.memoryLimit || candidate->memory <= *options.memoryLimit)
      fitting.push_back(candidate);
  }
  if (options.memoryLimit)
    os << "  memory limit " << formatBytes(*options.memoryLimit)
       << " per device: " << fitting.size() << " of " << valid.size()
       << " layouts fit\n";
  if (fitting.empty()) {
    (*options.errors) << "meshc: error: --layout auto: none of the "
                      << valid.size() << " valid layouts fits in "
                      << formatBytes(*options.memoryLimit)
                      << " per device; the smallest "
                      << (extrapolated ? "(extrapolated peak of live bytes) is "
                                       : "plan is ")
                      << formatBytes(smallest->memory) << " ("
                      << displayed(smallest->text) << ")\n"
                      << memoryHint(model);
    return failure();
  }
  printTable({fitting.begin(),
              fitting.begin() + std::min(options.listed, fitting.size())},
             os);

  // An extrapolated plan is checked on the model as written before the
  // layout is chosen for a memory limit.
  const Candidate *chosen = fitting.front();
  if (options.memoryLimit && extrapolated) {
    chosen = nullptr;
    ScopedDiagnosticHandler capture(context, captureError);
    int64_t smallestFull = -1;
    std::string smallestFullText;
    size_t tries = 0;
    for (const Candidate *candidate : fitting) {
      if (tries++ == kMaxFullChecks)
        break;
      std::string error;
      std::optional<Figures> full = measure(model.full, mesh, candidate->rules,
                                            machine, options.partition, error);
      if (!full) {
        os << "  " << displayed(candidate->text)
           << ": the model as written does not compile: " << error << "\n";
        continue;
      }
      if (smallestFull < 0 || full->arena < smallestFull) {
        smallestFull = full->arena;
        smallestFullText = candidate->text;
      }
      bool fits = full->arena <= *options.memoryLimit;
      os << "  " << displayed(candidate->text) << " on the model as written: "
         << cost::formatSeconds(full->prediction.total()) << ", memory "
         << formatBytes(full->arena) << (fits ? "" : ": over the limit")
         << "\n";
      if (fits) {
        chosen = candidate;
        break;
      }
    }
    if (!chosen) {
      (*options.errors) << "meshc: error: --layout auto: none of the "
                        << std::min(fitting.size(), kMaxFullChecks)
                        << " fastest layouts that fit by their extrapolated "
                           "memory fits in "
                        << formatBytes(*options.memoryLimit)
                        << " per device on the model as written";
      if (smallestFull >= 0)
        (*options.errors) << "; the smallest is " << formatBytes(smallestFull)
                          << " (" << displayed(smallestFullText) << ")";
      (*options.errors) << "\n" << memoryHint(model);
      return failure();
    }
  }
  os << "chosen layout: " << displayed(chosen->text) << "\n";
  return chosen->rules;
}

} // namespace meshc
