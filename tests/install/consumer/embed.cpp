//===- embed.cpp - A program embedding the installed meshc runtime --------===//
//
// Built outside the meshc tree against an installed meshc
// (tests/install/embed_test.py):
//
//   embed MODEL.mprog STEPS SEED
//
// loads the program, runs STEPS training runs on the cpu backend's virtual
// devices (one per mesh device) with seed SEED, and prints every scalar
// output as "NAME = VALUE" (9 significant digits), which the test compares
// with meshrun's --dump-outputs of the same run.
//
//===----------------------------------------------------------------------===//

#include "runtime/Error.h"
#include "runtime/Loader.h"
#include "runtime/Session.h"

#ifdef EMBED_WITH_CUDA
#include "cuda/CudaBackend.h"
#endif

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace meshc::runtime;

int main(int argc, char **argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: embed MODEL.mprog STEPS SEED\n");
    return 2;
  }
#ifdef EMBED_WITH_CUDA
  cuda::registerCudaBackend();
#endif
  try {
    Program program = loadProgram(argv[1]);
    SessionOptions options;
    options.backend = "cpu";
    options.seed = std::strtoull(argv[3], nullptr, 10);
    Session session(program, options);
    for (long step = std::strtol(argv[2], nullptr, 10); step > 0; --step)
      session.runStep();
    std::printf("%s on %lld devices\n", program.name.c_str(),
                static_cast<long long>(session.numDevices()));
    for (const Tensor &tensor : program.tensors) {
      if (tensor.role != Role::Output || !tensor.dims.empty())
        continue;
      HostTensor value = session.gather(tensor);
      std::printf("%s = %.9g\n", tensor.name.c_str(), value.at(0));
    }
  } catch (const RuntimeError &error) {
    std::fprintf(stderr, "embed: error: %s\n", error.what());
    return 1;
  }
  return 0;
}
