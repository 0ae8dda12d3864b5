//===- SessionBinding.cpp - Sessions of the extension _meshc
//---------------===//
//
// _meshc.Session: a compiled program (.mprog text) loaded by the runtime's
// loader and set up on devices (runtime/Session.h), its inputs bound from
// numpy arrays (read in place, not copied), its runs made without the
// interpreter's lock, its params and outputs returned as numpy arrays, and
// checkpoints written and read as meshrun does. Runtime errors raise
// _meshc.RunError with the runtime's message. meshc/_session.py wraps it.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "runtime/Checkpoint.h"
#include "runtime/Error.h"
#include "runtime/Loader.h"
#include "runtime/Session.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <memory>

namespace nb = nanobind;
using namespace meshc::runtime;

namespace meshc::python {
namespace {

using InputArray = nb::ndarray<nb::numpy, nb::c_contig, nb::device::cpu>;

/// `array` (float32 or int32, C order) as the runtime's array, read in
/// place: the runtime holds a reference to the numpy array (released with
/// the interpreter's lock taken, whichever thread drops it last).
std::shared_ptr<const NpyArray>
toNpy(const std::string &name, const InputArray &array, nb::handle object) {
  auto npy = std::make_shared<NpyArray>();
  if (array.dtype() == nb::dtype<float>())
    npy->dtype = DType::F32;
  else if (array.dtype() == nb::dtype<int32_t>())
    npy->dtype = DType::I32;
  else
    throw RuntimeError("input array '" + name +
                       "': dtype is neither float32 nor int32");
  for (size_t d = 0; d < array.ndim(); ++d)
    npy->shape.push_back(static_cast<int64_t>(array.shape(d)));
  npy->view = static_cast<const char *>(array.data());
  object.inc_ref();
  npy->owner = std::shared_ptr<const void>(object.ptr(), [](const void *held) {
    nb::gil_scoped_acquire locked;
    nb::handle(static_cast<PyObject *>(const_cast<void *>(held))).dec_ref();
  });
  return npy;
}

/// The runtime's arrays of a dict of numpy arrays; an array met before (in
/// `copied`: the same object in the training and the eval set) is copied
/// once.
std::map<std::string, std::shared_ptr<const NpyArray>>
toArrays(const nb::dict &arrays,
         std::map<PyObject *, std::shared_ptr<const NpyArray>> &copied) {
  std::map<std::string, std::shared_ptr<const NpyArray>> out;
  for (auto [key, value] : arrays) {
    std::string name = nb::cast<std::string>(key);
    std::shared_ptr<const NpyArray> &array = copied[value.ptr()];
    if (!array)
      // Without conversion: the view is `value`'s own buffer (meshc's
      // wrapper passes C-ordered float32/int32 arrays).
      array =
          toNpy(name, nb::cast<InputArray>(value, /*convert=*/false), value);
    out[name] = array;
  }
  return out;
}

/// A global tensor as a numpy array that owns its elements.
nb::object toNumpy(HostTensor tensor) {
  auto *data = new std::vector<char>(std::move(tensor.data));
  nb::capsule owner(data, [](void *p) noexcept {
    delete static_cast<std::vector<char> *>(p);
  });
  std::vector<size_t> shape(tensor.shape.begin(), tensor.shape.end());
  if (tensor.dtype == DType::I32)
    return nb::cast(nb::ndarray<nb::numpy, int32_t>(data->data(), shape.size(),
                                                    shape.data(), owner));
  return nb::cast(nb::ndarray<nb::numpy, float>(data->data(), shape.size(),
                                                shape.data(), owner));
}

Overlap toOverlap(const std::string &overlap) {
  if (overlap == "auto")
    return Overlap::Auto;
  if (overlap == "on")
    return Overlap::On;
  if (overlap == "off")
    return Overlap::Off;
  throw RuntimeError("overlap must be 'auto', 'on' or 'off', got '" + overlap +
                     "'");
}

/// A program on its devices, with the options its inputs are bound with.
class PySession {
public:
  PySession(const std::string &text, const std::string &name, int64_t devices,
            const std::string &backend, std::optional<uint64_t> seed,
            const std::string &overlap)
      : program(std::make_unique<Program>(parseProgram(text, name))) {
    options.backend = backend;
    options.devices = devices;
    options.seed = seed;
    options.overlap = toOverlap(overlap);
    options.bindInputsLater = true;
    nb::gil_scoped_release unlocked;
    session = std::make_unique<Session>(*program, options);
  }

  void bind(const nb::dict &inputs, const nb::dict &evalInputs, bool shuffle) {
    std::map<PyObject *, std::shared_ptr<const NpyArray>> copied;
    options.inputArrays = toArrays(inputs, copied);
    options.evalInputArrays = toArrays(evalInputs, copied);
    options.shuffle = shuffle;
    nb::gil_scoped_release unlocked;
    session->bindInputs(options);
  }

  double runStep(bool train) {
    nb::gil_scoped_release unlocked;
    return session->runStep(train ? RunMode::Train : RunMode::Eval);
  }

  double runEvalBatch(int64_t batch) {
    nb::gil_scoped_release unlocked;
    return session->runEvalBatch(batch);
  }

  /// Every tensor of `role` by name, as numpy arrays.
  nb::dict tensors(Role role) const {
    nb::dict out;
    for (const Tensor &tensor : program->tensors)
      if (tensor.role == role && !isAccumulator(*program, tensor)) {
        HostTensor value;
        {
          nb::gil_scoped_release unlocked;
          value = session->gather(tensor);
        }
        out[tensor.name.c_str()] = toNumpy(std::move(value));
      }
    return out;
  }

  /// The scalar outputs, as floats (an i32 one as its value).
  nb::dict scalars() const {
    nb::dict out;
    for (const Tensor &tensor : program->tensors)
      if (tensor.role == Role::Output && tensor.dims.empty()) {
        char bytes[4];
        session->readBlock(tensor, 0, bytes);
        HostTensor value;
        value.dtype = tensor.dtype;
        value.data.assign(bytes, bytes + 4);
        out[tensor.name.c_str()] = value.at(0);
      }
    return out;
  }

  std::string save(const std::string &dir, int64_t keep) const {
    nb::gil_scoped_release unlocked;
    return writeCheckpoint(*session, *program, dir, keep).dir;
  }

  std::string restore(const std::string &path) {
    nb::gil_scoped_release unlocked;
    std::string step = findCheckpoint(path);
    restoreCheckpoint(*session, *program, readCheckpointIndex(step));
    return step;
  }

  const Session &get() const { return *session; }

private:
  std::unique_ptr<Program> program;
  SessionOptions options;
  std::unique_ptr<Session> session;
};

} // namespace

void defineSession(nb::module_ &module) {
  nb::exception<RuntimeError>(module, "RunError", PyExc_RuntimeError);
  nb::class_<PySession>(module, "Session")
      .def(nb::init<const std::string &, const std::string &, int64_t,
                    const std::string &, std::optional<uint64_t>,
                    const std::string &>(),
           nb::arg("program"), nb::arg("name"), nb::arg("devices"),
           nb::arg("backend"), nb::arg("seed").none(), nb::arg("overlap"))
      .def("bind", &PySession::bind, nb::arg("inputs"), nb::arg("eval_inputs"),
           nb::arg("shuffle"))
      .def("run_step", &PySession::runStep, nb::arg("train"))
      .def("run_eval_batch", &PySession::runEvalBatch, nb::arg("batch"))
      .def("params",
           [](const PySession &self) { return self.tensors(Role::Param); })
      .def("outputs",
           [](const PySession &self) { return self.tensors(Role::Output); })
      .def("scalars", &PySession::scalars)
      .def("save", &PySession::save, nb::arg("dir"), nb::arg("keep"))
      .def("restore", &PySession::restore, nb::arg("path"))
      .def_prop_ro(
          "devices",
          [](const PySession &self) { return self.get().numDevices(); })
      .def_prop_ro("seed",
                   [](const PySession &self) { return self.get().seed(); })
      .def_prop_ro(
          "backend",
          [](const PySession &self) { return self.get().backendName(); })
      .def_prop_ro(
          "training_runs",
          [](const PySession &self) { return self.get().trainingRuns(); })
      .def_prop_ro("batch_size",
                   [](const PySession &self) { return self.get().batchSize(); })
      .def_prop_ro(
          "dataset_examples",
          [](const PySession &self) { return self.get().datasetExamples(); })
      .def_prop_ro("eval_batches", [](const PySession &self) {
        return self.get().evalBatches();
      });
}

} // namespace meshc::python
