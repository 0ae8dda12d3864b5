//===- compile.cpp - A program embedding the installed meshc compiler -----===//
//
// Built outside the meshc tree against an installed meshc with the compiler
// (meshc::compiler; tests/install/embed_test.py):
//
//   compile MODEL.mtf MESH LAYOUT OUT.mprog
//
// compiles the model through meshc::compileModel with the options set in code
// (no command line), takes the program and the explanation from the
// CompileResult in memory, writes the program to OUT.mprog and prints the
// number of collectives the explanation lists. The test compares the file
// with the installed meshc's and runs it.
//
//===----------------------------------------------------------------------===//

#include "compiler/driver/Compile.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstdio>
#include <fstream>
#include <string>

int main(int argc, char **argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: compile MODEL.mtf MESH LAYOUT OUT.mprog\n");
    return 2;
  }
  meshc::CompileOptions options;
  options.input = argv[1];
  options.mesh = argv[2];
  options.layout = argv[3];
  options.explain = true;

  meshc::CompileResult result;
  if (mlir::failed(meshc::compileModel(options, &result))) {
    std::fprintf(stderr, "%s", result.errors.c_str());
    return 1;
  }
  if (!result.program || !result.explanation) {
    std::fprintf(stderr, "compile: error: no program or explanation\n");
    return 1;
  }
  std::ofstream(argv[4]) << llvm::formatv("{0:2}", *result.program).str()
                         << "\n";
  const llvm::json::Array *collectives =
      result.explanation->getAsObject()->getArray("collectives");
  std::printf("compiled %s for %s: %zu collectives\n", argv[1], argv[2],
              collectives ? collectives->size() : size_t(0));
  return 0;
}
