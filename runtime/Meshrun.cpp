//===- Meshrun.cpp - The meshrun command line -----------------------------===//
//
// Flag parsing, the step loop with its report, and the JSON dump of the
// outputs. Every RuntimeError ends here as one line on stderr and exit
// code 1.
//
//===----------------------------------------------------------------------===//

#include "runtime/Meshrun.h"

#include "runtime/Error.h"
#include "runtime/Loader.h"

#include <nlohmann/json.hpp>

#ifdef MESHC_HAVE_MPI
#include "runtime/mpi/MpiCollectives.h"
#endif

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

namespace meshc::runtime {

namespace {

constexpr const char *kUsage =
    "usage: meshrun MODEL.mprog [--backend cpu] [--devices N] [--steps S]\n"
    "               [--input NAME=FILE.npy]... [--seed K]\n"
    "               [--dump-outputs FILE.json] [--quiet]\n";

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
                 const Session &session, bool write = true) {
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
  std::ofstream file(path);
  file << nlohmann::json{{"outputs", outputs}}.dump() << "\n";
  if (!file)
    throw RuntimeError("cannot write '" + path + "'");
}

/// The step loop, its report and the dump. Under MPI every rank runs it (the
/// gathers are collective) and `out` is a discarding stream off rank 0;
/// `root` is false off rank 0.
void runSteps(const MeshrunOptions &options, const Program &program,
              Session &session, std::ostream &out, bool root = true) {
  const ProcessGroup *processes = options.session.processes;
  if (!options.quiet)
    out << "meshrun: " << program.name
        << (program.source.empty() ? "" : " (" + program.source + ")") << " on "
        << session.numDevices() << " " << session.backendName() << " device"
        << (session.numDevices() == 1 ? "" : "s")
        << (processes ? " (one per " + processes->transport() + " rank)" : "")
        << (program.mesh.rank() ? ", mesh " + program.mesh.str() : "")
        << ", seed " << session.seed() << "\n";
  double total = 0, fastest = 0;
  for (int64_t step = 1; step <= options.steps; ++step) {
    double seconds = session.runStep();
    total += seconds;
    fastest = step == 1 ? seconds : std::min(fastest, seconds);
    if (options.quiet)
      continue;
    out << "step " << step << ": " << milliseconds(seconds) << "\n";
    for (const Tensor &tensor : program.tensors)
      if (tensor.role == Role::Output)
        out << describeOutput(tensor.name, session.gather(tensor));
  }
  out << "summary: " << options.steps << " step"
      << (options.steps == 1 ? "" : "s") << ", mean "
      << milliseconds(total / options.steps) << ", min "
      << milliseconds(fastest) << "\n";
  if (!options.dumpOutputs.empty())
    dumpOutputs(options.dumpOutputs, program, session, root);
}

void run(const MeshrunOptions &options, std::ostream &out) {
  Program program = loadProgram(options.programPath);
  Session session(program, options.session);
  runSteps(options, program, session, out);
}

/// The number of processes of the MPI job this process was started in by
/// mpirun (Open MPI, or a PMI launcher such as MPICH's), or 1.
int64_t launchedRanks() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char *value = std::getenv(name)) {
      int64_t ranks = std::strtoll(value, nullptr, 10);
      if (ranks > 0)
        return ranks;
    }
  return 1;
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
  std::string error;
  try {
    options = parseMeshrunArgs(std::vector<std::string>(argv + 1, argv + argc));
    if (!options.help)
      program = loadProgram(options.programPath);
  } catch (const std::exception &e) {
    error = e.what();
  }
  if (std::string agreed = world->agreeOnError(error); !agreed.empty())
    return fail(agreed);
  if (options.help) {
    rankOut << kUsage;
    return 0;
  }

  options.session.processes = world.get();
  std::unique_ptr<Session> session;
  try {
    session = std::make_unique<Session>(*program, options.session);
  } catch (const std::exception &e) {
    error = e.what();
  }
  if (std::string agreed = world->agreeOnError(error); !agreed.empty())
    return fail(agreed);

  try {
    runSteps(options, *program, *session, rankOut, root);
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

MeshrunOptions parseMeshrunArgs(const std::vector<std::string> &args) {
  MeshrunOptions options;
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
      options.steps = parseCount(arg, takeValue(), 1);
    } else if (arg == "--seed") {
      options.session.seed = parseCount(arg, takeValue(), 0, UINT64_MAX);
    } else if (arg == "--dump-outputs") {
      options.dumpOutputs = takeValue();
    } else if (arg == "--input") {
      std::string binding = takeValue();
      size_t eq = binding.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == binding.size())
        throw RuntimeError("--input: expected NAME=FILE.npy, got '" + binding +
                           "'");
      if (!options.session.inputFiles
               .emplace(binding.substr(0, eq), binding.substr(eq + 1))
               .second)
        throw RuntimeError("--input: input '" + binding.substr(0, eq) +
                           "' is given twice");
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
  return options;
}

int meshrunMain(int argc, const char *const *argv, std::ostream &out,
                std::ostream &err) {
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
    run(options, out);
    return 0;
  } catch (const std::exception &error) {
    err << "meshrun: error: " << error.what() << "\n";
  }
  return 1;
}

} // namespace meshc::runtime
