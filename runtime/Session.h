//===- Session.h - Running a program on a mesh of devices -------*- C++ -*-===//
//
// A Session binds a loaded Program to a backend: it makes one Device per mesh
// device, allocates each arena and scratch once, creates the communicators
// of every collective group, initialises the parameters (once) and prepares
// each device's block of every input (from .npy files or the synthetic
// generator, or a dataset's rows for each run). runStep() then executes the
// whole program once on all devices, one thread per device (the session's,
// started once; a training run: every step; an eval run: the forward ones), and
// gather() reassembles a global tensor from the device blocks.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_SESSION_H
#define MESHC_RUNTIME_SESSION_H

#include "runtime/Dataset.h"
#include "runtime/Device.h"
#include "runtime/Npy.h"
#include "runtime/ProcessGroup.h"
#include "runtime/Program.h"
#include "runtime/Trace.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace meshc::runtime {

class CommLane;
class DeviceThreads;

/// How to run a program.
/// Whether started collectives run beside the next steps (on a lane thread
/// per device) or to completion where they start: meshrun --overlap.
enum class Overlap {
  /// Where the backend says it pays (Backend::overlapPays).
  Auto,
  On,
  Off,
};

struct SessionOptions {
  /// The backend name ("cpu").
  std::string backend = "cpu";
  /// The number of devices; 0 means the mesh's. Anything else must equal it.
  int64_t devices = 0;
  /// Overrides the program's seed when set.
  std::optional<uint64_t> seed;
  /// Input name to .npy file; inputs not listed are synthetic. A file of
  /// shape [N, rest...] for an input of shape [B, rest...] (N != B) is a
  /// dataset (Dataset.h).
  std::map<std::string, std::string> inputFiles;
  /// Input name to .npy file of shape [N, rest...] (N >= B): the eval set.
  /// When given, every input fed from a file in training needs one.
  std::map<std::string, std::string> evalInputFiles;
  /// Input name to an array in memory, taken as inputFiles takes a .npy
  /// file (the Python package's numpy arrays); a name is in one of the two
  /// at most.
  std::map<std::string, std::shared_ptr<const NpyArray>> inputArrays;
  /// Input name to an array in memory, as evalInputFiles.
  std::map<std::string, std::shared_ptr<const NpyArray>> evalInputArrays;
  /// Leaves the inputs unbound: bindInputs() binds them before the first
  /// run (the Python package binds the arrays of each call).
  bool bindInputsLater = false;
  /// Shuffle datasets in every epoch (false: read them in file order).
  bool shuffle = true;
  /// When not empty, every param is read from DIR/paramFileName(name)
  /// instead of being initialised.
  std::string initParamsDir;
  /// When set (meshrun under mpirun), this process runs only mesh device
  /// processes->rank(), the group's size must equal the mesh's device count,
  /// and the collectives are the group's (not the backend's). Not owned.
  ProcessGroup *processes = nullptr;
  /// Record every step's start and end on every device (Trace.h).
  bool trace = false;
  /// With `trace`: record only the first this many runs (training and eval
  /// runs; 0: all of them).
  int64_t traceRuns = 0;
  /// Whether started collectives overlap the steps up to their wait.
  Overlap overlap = Overlap::Auto;
};

/// A global tensor on the host, row-major.
struct HostTensor {
  DType dtype = DType::F32;
  std::vector<std::string> dims;
  std::vector<int64_t> shape;
  /// The elements, 4 bytes each, as `dtype`.
  std::vector<char> data;

  /// The number of elements.
  int64_t elements() const;
  /// Element `i` as a double.
  double at(int64_t i) const;
};

/// "w1__adam_m.npy" for param "w1/adam_m": the file of a param in the
/// directories of --dump-params and --init-params ('/' becomes "__").
std::string paramFileName(const std::string &name);

/// What a run of the program executes.
enum class RunMode {
  /// Every step; advances the run counter, and after every sync.every-th
  /// training run averages the sync buffers.
  Train,
  /// Only the forward steps, dropout keeping everything; changes no counter.
  Eval,
};

/// A program set up on a mesh of devices.
class Session {
public:
  /// Sets up `program`, which must outlive the session. Throws RuntimeError
  /// for an unknown or unavailable backend, a step kind the backend does not
  /// support (requireSupportedSteps), a device count other than the mesh's,
  /// and bad input files.
  Session(const Program &program, const SessionOptions &options);
  ~Session();

  /// The number of devices the program runs on (the mesh's), over all
  /// processes.
  int64_t numDevices() const { return meshDevices; }
  /// The ids of the devices this process runs: all of them, or under a
  /// ProcessGroup only its rank.
  const std::vector<int64_t> &localDevices() const { return localIds; }
  /// The seed parameters and synthetic inputs were generated with.
  uint64_t seed() const { return seedValue; }
  /// The backend's name.
  std::string backendName() const { return backend->name(); }
  /// The threads each of this process's devices runs on.
  int threadsPerDevice() const { return backend->threadsPerDevice(); }

  /// Writes the inputs (of training run trainingRuns(), datasets included),
  /// then runs the program once on every device (one thread each): all
  /// steps in a training run, the forward ones in an eval run. Returns the
  /// wall time of the steps in seconds. Throws RuntimeError naming the step
  /// and device when a device fails; the session is unusable afterwards
  /// (every later run throws, naming that error).
  double runStep(RunMode mode = RunMode::Train);

  /// An eval run on batch `batch` (< evalBatches()) of the eval set: rows
  /// batch*B .. batch*B+B-1 in file order; inputs without an eval file get
  /// their usual values. Returns the wall time in seconds.
  double runEvalBatch(int64_t batch);

  /// (Re)binds the inputs to `options`' files and arrays (inputFiles,
  /// inputArrays, evalInputFiles, evalInputArrays; the rest synthetic) and
  /// shuffle, as the constructor does unless options.bindInputsLater. The
  /// rows of a training set are read in the order the run counter gives
  /// (the same arrays bound again go on as if bound once). Throws
  /// RuntimeError for unknown names, a dtype or shape that does not match,
  /// and datasets of different lengths; the inputs are unbound then.
  void bindInputs(const SessionOptions &options);

  /// The number of training runs so far: the run counter dropout masks and
  /// datasets use.
  uint64_t trainingRuns() const { return runCount; }
  /// The number of examples of the training datasets (0 without one).
  int64_t datasetExamples() const { return trainExamples; }
  /// The examples of one training run: the first dim of the first dataset
  /// input, else of the first input (0 without inputs of rank >= 1), times
  /// the microbatches.
  int64_t batchSize() const { return batch * microbatches(); }
  /// The microbatches of a training run (1 without gradient accumulation):
  /// each is one run of the program's forward and backward steps on
  /// batchSize() / microbatches() examples.
  int64_t microbatches() const {
    return program.training && program.training->microbatches
               ? program.training->microbatches->count
               : 1;
  }
  /// The tokens of one example when the batch's input (as for batchSize) is
  /// i32 token ids of rank >= 2 ([batch, seq]: seq); 0 otherwise.
  int64_t tokensPerExample() const { return tokens; }
  /// The number of examples of the eval set (0 without one).
  int64_t evalExamples() const { return evalSetExamples; }
  /// The full batches of the eval set.
  int64_t evalBatches() const;

  /// The global value of `tensor` assembled from the device blocks. Under a
  /// ProcessGroup every process must call it (it gathers to rank 0) and only
  /// rank 0's result holds the values; the others' data is zeros.
  HostTensor gather(const Tensor &tensor) const;

  /// The bytes of local device `local`'s memory physically in use
  /// (Device::residentBytes).
  int64_t residentBytes(size_t local) const;

  /// Copies local device `local`'s block of `tensor` (localDevices()[local])
  /// into `dst` (the bytes of the layout's slice shape).
  void readBlock(const Tensor &tensor, size_t local, void *dst) const;
  /// Overwrites local device `local`'s block of `tensor` with `src`.
  void writeBlock(const Tensor &tensor, size_t local, const void *src);
  /// Sets the run counter, as if `runs` training runs had happened (a
  /// restored checkpoint).
  void setTrainingRuns(uint64_t runs) { runCount = runs; }
  /// The processes the devices are spread over, or null.
  ProcessGroup *processGroup() const { return processes; }

  /// The Chrome trace JSON of the recorded runs (SessionOptions::trace).
  /// Under a ProcessGroup every process must call it (it gathers to rank 0)
  /// and only rank 0's result is not empty.
  std::string traceJson() const;

private:
  /// Where one input's device blocks come from.
  struct InputFeed {
    const Tensor *tensor = nullptr;
    /// The .npy file (empty: an array or synthetic).
    std::string file;
    /// Where the values come from, for messages: "--input x=FILE.npy" or
    /// "input array 'x'" (empty: synthetic).
    std::string source;
    /// Per local device: the block's shape (they differ under device
    /// weights) and its offset in the global tensor.
    std::vector<std::vector<int64_t>> blockShapes;
    std::vector<std::vector<int64_t>> blockOffsets;
    /// Per local device: the block (fixed, or the last batch's).
    std::vector<std::vector<char>> blocks;
    /// For a dataset or eval set: the whole file or array (shared with
    /// SessionOptions' arrays).
    std::shared_ptr<const NpyArray> rows;
  };

  /// The feed of input `tensor` from `array` (read from .npy file `file`,
  /// or given: `file` empty; null: the generator), called `source` in
  /// messages; `eval` for an eval set. Checks the array.
  InputFeed prepareInput(const Tensor &tensor,
                         std::shared_ptr<const NpyArray> array,
                         const std::string &file, const std::string &source,
                         bool eval);
  /// Writes every device's block of parameter `tensor`, initialised or read
  /// from `initDir`.
  void initializeParam(const Tensor &tensor, const std::string &initDir);
  /// Throws unless the inputs are bound and no run failed.
  void requireInputs() const;
  /// Checks the eval set against the training inputs.
  void checkEvalSet(const SessionOptions &options);
  /// Writes `feed`'s blocks for a batch whose global row g is file row
  /// rowOf(g) (ignored for fixed feeds).
  template <typename RowOf> void writeFeed(InputFeed &feed, RowOf rowOf);
  /// A training run of a program with microbatches (MicrobatchSpec).
  double runMicrobatches(const MicrobatchSpec &micro);
  /// Runs `steps` on every device with `context`; returns the wall time.
  double runSteps(const std::vector<const Step *> &steps,
                  const RunContext &context);
  /// Runs loop step `loop` of `own` (one device's program) with `run` for
  /// each body step of each iteration: `shifts` (per buffer, as
  /// RunContext::shifts) and `iterations` say where the loops are, and
  /// `context` points at them.
  /// Runs collective `step` on device `device`'s lane: submitted under
  /// its ticket when started (Step::ticket), else to completion.
  void runOnLane(CommLane &lane, Device &device, const Step &step,
                 Communicator *comm, const RunContext &context) const;
  void runLoop(const Step &loop, const Program &own,
               std::vector<int64_t> &shifts, std::vector<int64_t> &iterations,
               RunContext &context,
               const std::function<void(const Step &)> &run) const;

  const Program &program;
  uint64_t seedValue;
  std::unique_ptr<Backend> backend;
  ProcessGroup *processes = nullptr;
  int64_t meshDevices = 0;
  /// The device ids this process runs; devices[i] is device localIds[i].
  std::vector<int64_t> localIds;
  std::vector<std::unique_ptr<Device>> devices;
  /// Per local device, the lane its collectives run on (CommLane.h); empty
  /// when the program starts no collective or the backend cannot overlap.
  std::vector<std::unique_ptr<CommLane>> lanes;
  /// communicators[group][device id], group indexing Program::groupAxes
  /// (null for devices of other processes).
  std::vector<std::vector<std::unique_ptr<Communicator>>> communicators;
  /// Whether bindInputs() succeeded (the inputs below are usable).
  bool inputsBound = false;
  /// The error of a failed run: the session refuses to run after it.
  std::string failedRun;
  /// Every input's feed in training runs.
  std::vector<InputFeed> inputs;
  /// The inputs read from the eval set in eval runs.
  std::vector<InputFeed> evalInputs;
  /// The order of the training datasets' rows.
  std::optional<EpochOrder> order;
  int64_t trainExamples = 0;
  int64_t evalSetExamples = 0;
  int64_t batch = 0;
  int64_t tokens = 0;
  uint64_t runCount = 0;
  /// The steps of a training run, with and without the sync steps, and of
  /// an eval run.
  std::vector<const Step *> trainSteps, trainSyncSteps, evalSteps;
  /// With microbatches: the forward and backward steps, and the update ones.
  std::vector<const Step *> microbatchSteps, updateSteps;
  /// Set when tracing.
  std::unique_ptr<TraceRecorder> tracer;
  /// The threads the local devices run on, one each, kept for the session
  /// (none under a ProcessGroup). Last: they end first.
  std::unique_ptr<DeviceThreads> deviceThreads;
};

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_SESSION_H
