//===- Meshrun.cpp - The meshrun command line -----------------------------===//
//
// Flag parsing, and running the loop (MeshrunLoop.h) in one process or as
// one rank of an MPI job. Every RuntimeError ends here as one line on stderr
// and exit code 1.
//
//===----------------------------------------------------------------------===//

#include "runtime/Meshrun.h"

#include "runtime/Checkpoint.h"
#include "runtime/Error.h"
#include "runtime/FileWrite.h"
#include "runtime/Loader.h"
#include "runtime/MeshrunLoop.h"

#ifdef MESHC_HAVE_MPI
#include "runtime/mpi/MpiAgreement.h"
#include "runtime/mpi/MpiCollectives.h"
#endif

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include <unistd.h>

namespace meshc::runtime {

namespace {

constexpr const char *kUsage =
    "usage: meshrun MODEL.mprog [--backend cpu] [--devices N] [--steps S]\n"
    "               [--input NAME=FILE.npy]... [--seed K]\n"
    "               [--dump-outputs FILE.json] [--quiet]\n"
    "               [--eval-input NAME=FILE.npy]... [--eval-every K]\n"
    "               [--no-shuffle] [--csv FILE.csv] [--plot FILE.svg]\n"
    "               [--dump-params DIR] [--init-params DIR] [--verbose]\n"
    "               [--checkpoint DIR [--checkpoint-every K]\n"
    "               [--keep-checkpoints N]] [--restore DIR]\n"
    "               [--trace FILE.json [--trace-runs N]]\n"
    "               [--collective-timeout SECONDS] [--overlap auto|on|off]\n"
    "\n"
    "  --backend cpu             the device backend (default cpu)\n"
    "  --devices N               must equal the mesh's device count\n"
    "  --steps S                 training runs (default 1; 0: only set up,\n"
    "                            then evaluate and dump)\n"
    "  --input NAME=FILE.npy     feed input NAME: the input's global shape,\n"
    "                            or [N, ...] for a dataset of N examples\n"
    "  --seed K                  seed of params, synthetic inputs, dropout\n"
    "                            and shuffling (default: the program's)\n"
    "  --dump-outputs FILE.json  write the outputs after the last run\n"
    "  --eval-input NAME=FILE.npy  the eval set of input NAME ([N, ...])\n"
    "  --eval-every K            evaluate every K steps (default: after the\n"
    "                            last step only)\n"
    "  --no-shuffle              read datasets in file order\n"
    "  --csv FILE.csv            log every training run's scalar outputs\n"
    "  --plot FILE.svg           draw the loss curve as SVG\n"
    "  --dump-params DIR         write every param as DIR/<name>.npy at the\n"
    "                            end ('/' in names becomes '__')\n"
    "  --init-params DIR         read every param from DIR/<name>.npy\n"
    "  --verbose                 print every step's outputs (default: up to\n"
    "                            20 steps; a progress line above)\n"
    "  --quiet                   print only the summary and eval lines\n"
    "  --checkpoint DIR          write params, optimizer state and the run\n"
    "                            counter to DIR/step-<N>/ after the last run\n"
    "  --checkpoint-every K      also after every run whose number is a\n"
    "                            multiple of K\n"
    "  --keep-checkpoints N      keep the newest N checkpoints (default 2)\n"
    "  --restore DIR             continue from a checkpoint (DIR's latest, or\n"
    "                            DIR/step-<N>), on any mesh and layout;\n"
    "                            --steps S then runs S more steps\n"
    "  --trace FILE.json         write every step's time on every device as\n"
    "                            a Chrome trace (chrome://tracing, Perfetto)\n"
    "  --trace-runs N            trace the first N runs (default 100; 0: "
    "all)\n"
    "  --collective-timeout S    under mpirun: give up on a collective that\n"
    "                            does not complete within S seconds, naming\n"
    "                            the rank that did not reach it (default 20\n"
    "                            or $MESHC_COLLECTIVE_TIMEOUT; 0: wait)\n"
    "  --overlap auto|on|off     run the program's started collectives beside\n"
    "                            the steps up to their wait (on), where they\n"
    "                            start (off), or on where the backend says it\n"
    "                            pays (auto, the default; CPU: a spare core\n"
    "                            per device)\n";

/// The runs --trace records without --trace-runs.
constexpr int64_t kDefaultTraceRuns = 100;

/// Adds NAME=FILE from `binding` (the value of `flag`) to `files`.
void addBinding(const std::string &flag, const std::string &binding,
                std::map<std::string, std::string> &files) {
  size_t eq = binding.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == binding.size())
    throw RuntimeError(flag + ": expected NAME=FILE.npy, got '" + binding +
                       "'");
  if (!files.emplace(binding.substr(0, eq), binding.substr(eq + 1)).second)
    throw RuntimeError(flag + ": input '" + binding.substr(0, eq) +
                       "' is given twice");
}

/// Parses `text`, the value of `flag`, as an integer in [min, max].
uint64_t parseCount(const std::string &flag, const std::string &text,
                    uint64_t min, uint64_t max = INT64_MAX) {
  uint64_t value = 0;
  auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (error == std::errc::result_out_of_range ||
      (error == std::errc() && value > max))
    throw RuntimeError(flag + ": " + text + " is too large");
  if (error != std::errc() || end != text.data() + text.size() || value < min)
    throw RuntimeError(flag + ": expected an integer >= " +
                       std::to_string(min) + ", got '" + text + "'");
  return value;
}

/// The index of the checkpoint --restore names (none without --restore).
/// Without --seed, the session takes the checkpoint's seed, so that the
/// dataset order and dropout masks continue.
std::optional<CheckpointIndex> readRestore(MeshrunOptions &options) {
  if (options.restorePath.empty())
    return std::nullopt;
  CheckpointIndex index =
      readCheckpointIndex(findCheckpoint(options.restorePath));
  if (!options.session.seed)
    options.session.seed = index.seed;
  return index;
}

/// Runs the loop of `options` on this process's devices.
void run(MeshrunOptions options, std::ostream &out, std::ostream &err,
         bool terminal) {
  Program program = loadProgram(options.programPath);
  std::optional<CheckpointIndex> restored = readRestore(options);
  Session session(program, options.session);
  if (restored)
    restoreCheckpoint(session, program, *restored);
  runMeshrunLoop(options, program, session, {out, err, true, terminal},
                 restored ? &*restored : nullptr);
}

#ifdef MESHC_HAVE_MPI
/// meshrun as one rank of an MPI job: this rank runs mesh device rank() with
/// the MPI collectives. Setup errors are agreed on by all ranks (each prints
/// the first one and exits 1); an error while running ends the whole job
/// (MPI_Abort), since the other ranks may wait in a collective for this one.
int meshrunMpi(int argc, const char *const *argv, std::ostream &out,
               std::ostream &err) {
  std::unique_ptr<MpiProcessGroup> world;
  try {
    world = std::make_unique<MpiProcessGroup>();
  } catch (const std::exception &error) {
    err << "meshrun: error: " + std::string(error.what()) + "\n";
    return 1;
  }
  bool root = world->rank() == 0;
  std::ostringstream discard;
  std::ostream &rankOut = root ? out : discard;
  // One write per line, so that the ranks' lines do not interleave.
  auto say = [&](const std::string &message) {
    err << "meshrun: error: " + message + "\n";
    err.flush();
  };
  auto fail = [&](const std::string &agreed) {
    say(agreed);
    return 1;
  };

  MeshrunOptions options;
  std::optional<Program> program;
  std::optional<CheckpointIndex> restored;
  std::string error;
  try {
    options = parseMeshrunArgs(std::vector<std::string>(argv + 1, argv + argc));
    if (!options.help) {
      program = loadProgram(options.programPath);
      restored = readRestore(options);
    }
  } catch (const std::exception &e) {
    error = e.what();
  }
  if (std::string agreed = world->agreeOnError(error); !agreed.empty())
    return fail(agreed);
  if (options.help) {
    rankOut << kUsage;
    return 0;
  }
  if (options.collectiveTimeout)
    world->setCollectiveTimeout(*options.collectiveTimeout);
  // Every rank must run the same program, inputs and flags (every rank
  // throws the same message otherwise).
  try {
    checkAgreement(*world, meshrunFacts(options));
  } catch (const std::exception &e) {
    return fail(e.what());
  }

  options.session.processes = world.get();
  std::unique_ptr<Session> session;
  try {
    session = std::make_unique<Session>(*program, options.session);
    if (restored)
      restoreCheckpoint(*session, *program, *restored);
  } catch (const std::exception &e) {
    error = e.what();
  }
  if (std::string agreed = world->agreeOnError(error); !agreed.empty())
    return fail(agreed);

  try {
    runMeshrunLoop(options, *program, *session, {rankOut, err, root, false},
                   restored ? &*restored : nullptr);
  } catch (const std::exception &e) {
    out.flush();
    say("rank " + std::to_string(world->rank()) + ": " + e.what());
    world->abortJob(1);
  }
  out.flush();
  return 0;
}
#endif

} // namespace

int64_t launchedRanks() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char *value = std::getenv(name)) {
      int64_t ranks = std::strtoll(value, nullptr, 10);
      if (ranks > 0)
        return ranks;
    }
  return 1;
}

MeshrunOptions parseMeshrunArgs(const std::vector<std::string> &args) {
  MeshrunOptions options;
  options.session.traceRuns = kDefaultTraceRuns;
  std::string checkpointFlag;
  bool traceRunsGiven = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::string value;
    bool hasValue = false;
    if (size_t eq = arg.find('=');
        arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      hasValue = true;
    }
    auto takeValue = [&]() {
      if (hasValue)
        return value;
      if (i + 1 == args.size())
        throw RuntimeError(arg + " needs a value");
      return args[++i];
    };
    if (arg == "--help" || arg == "-h") {
      options.help = true;
    } else if (arg == "--quiet") {
      options.quiet = true;
    } else if (arg == "--backend") {
      options.session.backend = takeValue();
    } else if (arg == "--devices") {
      options.session.devices = parseCount(arg, takeValue(), 1);
    } else if (arg == "--steps") {
      options.steps = parseCount(arg, takeValue(), 0);
    } else if (arg == "--seed") {
      options.session.seed = parseCount(arg, takeValue(), 0, UINT64_MAX);
    } else if (arg == "--dump-outputs") {
      options.dumpOutputs = takeValue();
    } else if (arg == "--input") {
      addBinding(arg, takeValue(), options.session.inputFiles);
    } else if (arg == "--eval-input") {
      addBinding(arg, takeValue(), options.session.evalInputFiles);
    } else if (arg == "--eval-every") {
      options.evalEvery = parseCount(arg, takeValue(), 1);
    } else if (arg == "--no-shuffle") {
      options.session.shuffle = false;
    } else if (arg == "--verbose") {
      options.verbose = true;
    } else if (arg == "--csv") {
      options.csvPath = takeValue();
    } else if (arg == "--plot") {
      options.plotPath = takeValue();
      std::string path = options.plotPath;
      if (path.size() < 4 || path.substr(path.size() - 4) != ".svg")
        throw RuntimeError("--plot: '" + path +
                           "' does not end in .svg; meshrun draws SVG only");
    } else if (arg == "--dump-params") {
      options.dumpParamsDir = takeValue();
    } else if (arg == "--init-params") {
      options.session.initParamsDir = takeValue();
    } else if (arg == "--checkpoint") {
      options.checkpointDir = takeValue();
    } else if (arg == "--checkpoint-every") {
      options.checkpointEvery = parseCount(arg, takeValue(), 1);
      checkpointFlag = arg;
    } else if (arg == "--keep-checkpoints") {
      options.keepCheckpoints = parseCount(arg, takeValue(), 1);
      checkpointFlag = arg;
    } else if (arg == "--restore") {
      options.restorePath = takeValue();
      if (!std::filesystem::is_directory(options.restorePath))
        throw RuntimeError("--restore: no checkpoint directory '" +
                           options.restorePath + "'");
    } else if (arg == "--trace") {
      options.tracePath = takeValue();
      options.session.trace = true;
    } else if (arg == "--collective-timeout") {
      std::string text = takeValue();
      char *end = nullptr;
      double seconds = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !std::isfinite(seconds) ||
          seconds < 0)
        throw RuntimeError("--collective-timeout: expected a number of "
                           "seconds >= 0 (0: no timeout), got '" +
                           text + "'");
      options.collectiveTimeout = seconds;
    } else if (arg == "--overlap") {
      std::string mode = takeValue();
      if (mode == "auto")
        options.session.overlap = Overlap::Auto;
      else if (mode == "on")
        options.session.overlap = Overlap::On;
      else if (mode == "off")
        options.session.overlap = Overlap::Off;
      else
        throw RuntimeError("--overlap: expected auto, on or off, got '" + mode +
                           "'");
    } else if (arg == "--trace-runs") {
      options.session.traceRuns = parseCount(arg, takeValue(), 0);
      traceRunsGiven = true;
    } else if (arg.size() > 1 && arg[0] == '-') {
      throw RuntimeError("unknown option '" + arg + "'");
    } else if (options.programPath.empty()) {
      options.programPath = arg;
    } else {
      throw RuntimeError("more than one .mprog file: '" + options.programPath +
                         "' and '" + arg + "'");
    }
  }
  if (options.programPath.empty() && !options.help)
    throw RuntimeError("no .mprog file given");
  if (options.evalEvery > 0 && options.session.evalInputFiles.empty())
    throw RuntimeError("--eval-every needs an eval set (--eval-input "
                       "NAME=FILE.npy)");
  if (!checkpointFlag.empty() && options.checkpointDir.empty())
    throw RuntimeError(checkpointFlag + " needs --checkpoint DIR");
  if (!options.restorePath.empty() && !options.session.initParamsDir.empty())
    throw RuntimeError("--restore and --init-params both give the params; "
                       "use one of them");
  if (traceRunsGiven && options.tracePath.empty())
    throw RuntimeError("--trace-runs needs --trace FILE.json");
  return options;
}

int meshrunMain(int argc, const char *const *argv, std::ostream &out,
                std::ostream &err) {
  reportFileSizeLimitAsError();
  if (launchedRanks() > 1) {
#ifdef MESHC_HAVE_MPI
    return meshrunMpi(argc, argv, out, err);
#else
    err << "meshrun: error: started by mpirun with " << launchedRanks()
        << " ranks, but this meshrun was built without MPI; rebuild with MPI "
           "installed, or run it without mpirun (devices are then threads)\n";
    return 1;
#endif
  }
  try {
    MeshrunOptions options =
        parseMeshrunArgs(std::vector<std::string>(argv + 1, argv + argc));
    if (options.help) {
      out << kUsage;
      return 0;
    }
    run(options, out, err, &err == &std::cerr && isatty(STDERR_FILENO));
    // The report is output too: a full disk under `meshrun ... > log` fails.
    if (!out.flush())
      throw RuntimeError("cannot write the report to the standard output");
    return 0;
  } catch (const std::exception &error) {
    err << "meshrun: error: " << error.what() << "\n";
  }
  return 1;
}

} // namespace meshc::runtime
