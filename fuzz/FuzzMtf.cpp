//===- FuzzMtf.cpp - libFuzzer target: the .mtf frontend ------------------===//
//
// Any bytes as a model file: importMtf either reports an error through the
// diagnostic engine (swallowed here) or returns a module that verifies --
// with each repeat unrolled or as a loop, chosen by the input's length.
//
//===----------------------------------------------------------------------===//

#include "frontend/Frontend.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A context of its own per input (the frontend loads the mtf dialect):
  // nothing one input uniqued outlives it.
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size),
          "fuzz.mtf"),
      llvm::SMLoc());
  meshc::frontend::ImportOptions options;
  options.loops = size % 2 == 0;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      meshc::frontend::importMtf(sourceMgr, context, options);
  // A module the frontend returns is one the verifier accepts.
  if (module && mlir::failed(mlir::verify(*module)))
    std::abort();
  return 0;
}
