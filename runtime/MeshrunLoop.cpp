//===- MeshrunLoop.cpp - meshrun's run loop -------------------------------===//
//
// Every training run gathers the scalar outputs (cheap, and the progress
// line, the CSV and the plot all need them); per-step reports gather every
// output. Evaluations run the eval set's full batches as eval runs and
// average each scalar output over them; they change no param and no
// counter. Files are written by rank 0 only, after every rank has gathered.
//
//===----------------------------------------------------------------------===//

#include "runtime/MeshrunLoop.h"

#include "runtime/Error.h"
#include "runtime/FileWrite.h"
#include "runtime/Npy.h"
#include "runtime/TrainingReport.h"
#include "runtime/core/cost/CostModel.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <ostream>

namespace meshc::runtime {

namespace {

/// More steps than this print a progress line instead of every output.
constexpr int64_t kMaxReportedSteps = 20;

/// "%.7g" of `value`.
std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.7g", value);
  return text;
}

std::string milliseconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f ms", seconds * 1e3);
  return text;
}

/// "device memory 16.5 MiB resident of 16.7 MiB planned (arena 15.2 MiB,
/// scratch 1.5 MiB)": the most any local device holds, against what meshc
/// planned (the arena) plus the scratch the loader sized.
std::string memoryLine(const Program &program, const Session &session) {
  int64_t resident = 0;
  for (size_t local = 0; local < session.localDevices().size(); ++local)
    resident = std::max(resident, session.residentBytes(local));
  int64_t planned = program.arenaBytes + program.scratchBytes;
  return "device memory " + cost::formatBytes(resident) + " resident of " +
         cost::formatBytes(planned) + " planned (arena " +
         cost::formatBytes(program.arenaBytes) + ", scratch " +
         cost::formatBytes(program.scratchBytes) + ")";
}

/// "  loss = 2.302585" or "  probs: f32[64, 10] first [0.1, ...] sum 64".
std::string describeOutput(const std::string &name, const HostTensor &value) {
  if (value.shape.empty())
    return "  " + name + " = " + number(value.at(0)) + "\n";
  std::string shape;
  for (size_t d = 0; d < value.shape.size(); ++d)
    shape += (d ? ", " : "") + std::to_string(value.shape[d]);
  std::string first;
  int64_t shown = std::min<int64_t>(value.elements(), 4);
  for (int64_t i = 0; i < shown; ++i)
    first += (i ? ", " : "") + number(value.at(i));
  if (value.elements() > shown)
    first += ", ...";
  double sum = 0;
  for (int64_t i = 0; i < value.elements(); ++i)
    sum += value.at(i);
  return "  " + name + ": " + dtypeName(value.dtype) + "[" + shape +
         "] first [" + first + "] sum " + number(sum) + "\n";
}

/// Writes the outputs to `path`; under MPI every rank gathers, and only
/// rank 0 (`write`) writes.
void dumpOutputs(const std::string &path, const Program &program,
                 const Session &session, bool write) {
  nlohmann::json outputs = nlohmann::json::object();
  for (const Tensor &tensor : program.tensors) {
    if (tensor.role != Role::Output)
      continue;
    HostTensor value = session.gather(tensor);
    if (!write)
      continue;
    nlohmann::json data = nlohmann::json::array();
    for (int64_t i = 0; i < value.elements(); ++i)
      data.push_back(value.at(i));
    outputs[tensor.name] = {{"dims", value.dims},
                            {"shape", value.shape},
                            {"dtype", dtypeName(value.dtype)},
                            {"data", data}};
  }
  if (!write)
    return;
  writeFileAtomically(path, nlohmann::json{{"outputs", outputs}}.dump() + "\n");
}

/// Writes every param as DIR/paramFileName(name) (global, f32): all of
/// them, or (on an error) none.
void dumpParams(const std::string &dir, const Program &program,
                const Session &session, bool write) {
  if (write) {
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (error)
      throw RuntimeError("--dump-params: cannot create directory '" + dir +
                         "': " + error.message());
  }
  FileSet files;
  for (const Tensor *param : paramsOf(program)) {
    const Tensor &tensor = *param;
    HostTensor value = session.gather(tensor);
    if (write)
      files.add(
          (std::filesystem::path(dir) / paramFileName(tensor.name)).string(),
          npyBytes(value.dtype, value.shape, value.data.data()));
  }
  files.commit();
}

/// "adam (beta1 0.9, lr 0.001), loss 'loss', sync every 4 runs over b (2
/// buffers)".
std::string describeTraining(const TrainingSpec &training) {
  std::string text = training.optimizer.empty() ? "steps" : training.optimizer;
  if (!training.hyperparams.empty()) {
    text += " (";
    for (size_t i = 0; i < training.hyperparams.size(); ++i) {
      char value[32];
      std::snprintf(value, sizeof(value), "%g", training.hyperparams[i].second);
      text += (i ? ", " : "") + training.hyperparams[i].first + " " + value;
    }
    text += ")";
  }
  if (!training.loss.empty())
    text += ", loss '" + training.loss + "'";
  if (const std::optional<SyncSpec> &sync = training.sync) {
    std::string axes;
    for (const std::string &axis : sync->axes)
      axes += (axes.empty() ? "" : ",") + axis;
    text += ", sync every " + std::to_string(sync->every) + " run" +
            (sync->every == 1 ? "" : "s") + " over " +
            (axes.empty() ? "no axes" : axes) + " (" +
            std::to_string(sync->buffers.size()) + " buffer" +
            (sync->buffers.size() == 1 ? "" : "s") + ")";
  }
  if (const std::optional<MicrobatchSpec> &micro = training.microbatches)
    text += ", " + std::to_string(micro->count) +
            " microbatches per step (gradients summed in " +
            std::to_string(micro->accumulators.size()) + " buffer" +
            (micro->accumulators.size() == 1 ? "" : "s") + ")";
  return text;
}

/// The run loop with its state.
class Loop {
public:
  Loop(const MeshrunOptions &options, const Program &program, Session &session,
       const MeshrunStreams &streams, const CheckpointIndex *restored)
      : options(options), program(program), session(session), streams(streams),
        restored(restored), log({}), first(session.trainingRuns()),
        last(first + options.steps) {
    for (const Tensor &tensor : program.tensors)
      if (tensor.role == Role::Output && tensor.dims.empty()) {
        scalars.push_back(&tensor);
        scalarNames.push_back(tensor.name);
      }
    log = TrainingLog(scalarNames);
    std::string loss = program.training ? program.training->loss : "";
    lossColumn = loss.empty()
                     ? 0
                     : std::find(scalarNames.begin(), scalarNames.end(), loss) -
                           scalarNames.begin();
    reportSteps = !options.quiet &&
                  (options.steps <= kMaxReportedSteps || options.verbose);
    showProgress = !options.quiet && !reportSteps && streams.root;
    evaluating = session.evalExamples() > 0;
  }

  void run();

private:
  void printHeader();
  /// The average of every scalar output over the eval batches.
  std::vector<double> evaluate();
  void evaluateAfter(int64_t step);
  /// `done` of options.steps runs are done; the last was run `step`.
  void drawProgress(int64_t done, int64_t step);
  /// Writes a checkpoint of the state after run `step`.
  void checkpoint(int64_t step);
  /// Ends the progress line before other output on a terminal.
  void clearProgress();

  const MeshrunOptions &options;
  const Program &program;
  Session &session;
  const MeshrunStreams &streams;
  const CheckpointIndex *restored;
  std::vector<const Tensor *> scalars;
  std::vector<std::string> scalarNames;
  TrainingLog log;
  size_t lossColumn = 0;
  /// The run number before the first run of this loop, and after the last.
  int64_t first, last;
  bool reportSteps = false, showProgress = false, evaluating = false;
  /// The scalars of the last training run.
  std::vector<double> lastValues;
  double trainingSeconds = 0;
  std::chrono::steady_clock::time_point start;
  size_t progressWidth = 0;
};

void Loop::printHeader() {
  std::ostream &out = streams.out;
  const ProcessGroup *processes = options.session.processes;
  out << "meshrun: " << program.name
      << (program.source.empty() ? "" : " (" + program.source + ")") << " on "
      << session.numDevices() << " " << session.backendName() << " device"
      << (session.numDevices() == 1 ? "" : "s")
      << (processes ? " (one per " + processes->transport() + " rank)" : "")
      << (session.threadsPerDevice() > 1
              ? " (" + std::to_string(session.threadsPerDevice()) + " threads" +
                    (processes ? " each" : "") + ")"
              : "")
      << (program.mesh.rank() ? ", mesh " + program.mesh.str() : "")
      << ", seed " << session.seed() << "\n";
  if (program.training)
    out << "training: " << describeTraining(*program.training) << "\n";
  if (int64_t examples = session.datasetExamples()) {
    char epochs[32];
    std::snprintf(epochs, sizeof(epochs), "%.4g",
                  static_cast<double>(options.steps) * session.batchSize() /
                      examples);
    out << "data: " << examples << " examples, " << session.batchSize()
        << " per step, " << epochs << " epochs"
        << (options.session.shuffle ? "" : " (not shuffled)") << "\n";
  }
  if (restored)
    out << "restored: " << restored->dir << " (after step " << restored->step
        << (restored->mesh.empty() ? std::string(", one device")
                                   : ", mesh " + restored->mesh)
        << ")\n";
  if (evaluating)
    out << "eval: " << session.evalExamples() << " examples, "
        << session.evalBatches() << " batch"
        << (session.evalBatches() == 1 ? "" : "es") << ", "
        << (options.evalEvery ? "every " + std::to_string(options.evalEvery) +
                                    " steps and after the last"
                              : std::string("after the last step"))
        << "\n";
}

std::vector<double> Loop::evaluate() {
  std::vector<double> sums(scalars.size(), 0.0);
  int64_t batches = session.evalBatches();
  for (int64_t b = 0; b < batches; ++b) {
    session.runEvalBatch(b);
    for (size_t i = 0; i < scalars.size(); ++i)
      sums[i] += session.gather(*scalars[i]).at(0);
  }
  for (double &sum : sums)
    sum /= static_cast<double>(batches);
  return sums;
}

void Loop::evaluateAfter(int64_t step) {
  std::vector<double> values = evaluate();
  clearProgress();
  streams.out << evalLine(step, scalarNames, values) << "\n";
  streams.out.flush();
  log.addEval(step, std::move(values));
}

void Loop::clearProgress() {
  if (progressWidth > 0 && streams.terminal) {
    streams.progress << "\r" << std::string(progressWidth, ' ') << "\r";
    streams.progress.flush();
    progressWidth = 0;
  }
}

void Loop::drawProgress(int64_t done, int64_t step) {
  int64_t every = std::max<int64_t>(1, options.steps / 20);
  bool finished = done == options.steps;
  if (!streams.terminal && !finished && done % every != 0)
    return;
  Progress progress;
  progress.step = step;
  progress.steps = last;
  if (!scalars.empty() && lossColumn < scalars.size()) {
    progress.lossName = scalarNames[lossColumn];
    progress.loss = lastValues[lossColumn];
  }
  std::chrono::duration<double> elapsed =
      std::chrono::steady_clock::now() - start;
  double perStep = elapsed.count() / static_cast<double>(done);
  progress.etaSeconds = perStep * static_cast<double>(options.steps - done);
  progress.stepsPerSecond = perStep > 0 ? 1.0 / perStep : 0.0;
  if (session.batchSize() > 0 && trainingSeconds > 0) {
    progress.examplesPerSecond = static_cast<double>(session.batchSize()) *
                                 static_cast<double>(done) / trainingSeconds;
    if (session.tokensPerExample() > 0)
      progress.tokensPerSecond =
          *progress.examplesPerSecond *
          static_cast<double>(session.tokensPerExample());
  }
  std::string line = progressLine(progress);
  if (streams.terminal) {
    size_t width = line.size();
    if (progressWidth > width)
      line += std::string(progressWidth - width, ' ');
    streams.progress << "\r" << line << (finished ? "\n" : "");
    progressWidth = finished ? 0 : width;
  } else {
    streams.progress << line << "\n";
  }
  streams.progress.flush();
}

void Loop::run() {
  if (!options.plotPath.empty() && scalars.empty())
    throw RuntimeError("--plot: " + program.fileName +
                       " has no scalar output to plot");
  if (!options.quiet)
    printHeader();
  start = std::chrono::steady_clock::now();
  double total = 0;
  std::vector<double> times;
  int64_t checkpointed = -1;
  for (int64_t done = 1; done <= options.steps; ++done) {
    int64_t step = first + done;
    auto begin = std::chrono::steady_clock::now();
    double seconds = session.runStep();
    total += seconds;
    times.push_back(seconds);
    lastValues.clear();
    for (const Tensor *scalar : scalars)
      lastValues.push_back(session.gather(*scalar).at(0));
    log.addRun(step, seconds, lastValues);
    std::chrono::duration<double> iteration =
        std::chrono::steady_clock::now() - begin;
    trainingSeconds += iteration.count();
    if (reportSteps) {
      streams.out << "step " << step << ": " << milliseconds(seconds) << "\n";
      for (const Tensor &tensor : program.tensors)
        if (tensor.role == Role::Output)
          streams.out << describeOutput(tensor.name, session.gather(tensor));
    }
    if (showProgress)
      drawProgress(done, step);
    if (evaluating && options.evalEvery > 0 && step % options.evalEvery == 0 &&
        step != last)
      evaluateAfter(step);
    if (!options.checkpointDir.empty() && options.checkpointEvery > 0 &&
        step % options.checkpointEvery == 0) {
      checkpoint(step);
      checkpointed = step;
    }
  }
  // The outputs of the last training run, before an eval run replaces them.
  if (!options.dumpOutputs.empty())
    dumpOutputs(options.dumpOutputs, program, session, streams.root);
  if (evaluating)
    evaluateAfter(last);
  if (!options.checkpointDir.empty() && checkpointed != last)
    checkpoint(last);
  streams.out << "summary: " << options.steps << " step"
              << (options.steps == 1 ? "" : "s");
  if (!times.empty()) {
    // The median is the upper middle time of an even count.
    std::nth_element(times.begin(), times.begin() + times.size() / 2,
                     times.end());
    double median = times[times.size() / 2];
    streams.out << ", mean " << milliseconds(total / options.steps)
                << ", median " << milliseconds(median) << ", min "
                << milliseconds(*std::min_element(times.begin(), times.end()));
  }
  streams.out << "; " << memoryLine(program, session) << "\n";
  if (!options.dumpParamsDir.empty())
    dumpParams(options.dumpParamsDir, program, session, streams.root);
  std::string trace = options.tracePath.empty() ? "" : session.traceJson();
  if (!streams.root)
    return;
  if (!options.tracePath.empty()) {
    writeFileAtomically(options.tracePath, trace);
    if (!options.quiet)
      streams.out << "trace: " << options.tracePath << "\n";
  }
  if (!options.csvPath.empty())
    writeFileAtomically(options.csvPath, log.csv());
  if (!options.plotPath.empty()) {
    std::string name = scalarNames[std::min(lossColumn, scalars.size() - 1)];
    writeFileAtomically(options.plotPath,
                        log.plot(name, program.name + ": " + name));
  }
}

void Loop::checkpoint(int64_t step) {
  CheckpointWritten written = writeCheckpoint(
      session, program, options.checkpointDir, options.keepCheckpoints);
  if (options.quiet || !streams.root)
    return;
  clearProgress();
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.3f s", written.seconds);
  streams.out << "checkpoint after step " << step << ": " << written.dir << " ("
              << groupThousands(written.bytes) << " bytes, " << seconds
              << ")\n";
  streams.out.flush();
}

} // namespace

void runMeshrunLoop(const MeshrunOptions &options, const Program &program,
                    Session &session, const MeshrunStreams &streams,
                    const CheckpointIndex *restored) {
  Loop(options, program, session, streams, restored).run();
}

} // namespace meshc::runtime
