//===- CompileModel.cpp - compile() with its model read and context made --===//
//
// compileModel (Compile.h): what every client of the compiler needs around
// compile(): the model read from a file or given as text, a context with
// meshc's dialects, and the model's diagnostics printed, observed or
// verified.
//
//===----------------------------------------------------------------------===//

#include "compiler/driver/Compile.h"
#include "compiler/driver/Registration.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

namespace meshc {

LogicalResult compileModel(const CompileOptions &options, CompileResult *result,
                           const ModelHooks &hooks) {
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  std::string error;
  if (hooks.text)
    buffer = llvm::MemoryBuffer::getMemBufferCopy(*hooks.text, options.input);
  else
    buffer = openInputFile(options.input, &error);
  if (!buffer) {
    std::string message = "meshc: error: " + error + "\n";
    if (result)
      result->errors += message;
    else
      llvm::errs() << message;
    return failure();
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());

  DialectRegistry registry;
  registerAll(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Diagnostics point at the model's source; an IR dump of the op would only
  // confuse (meshc-opt keeps MLIR's default for pass work).
  context.printOpOnDiagnostic(false);
  PassManagerSetup setup = nullptr;
  if (hooks.setup)
    setup = hooks.setup;

  llvm::raw_ostream &printed =
      hooks.diagnostics ? *hooks.diagnostics : llvm::errs();
  if (hooks.verifyDiagnostics) {
    SourceMgrDiagnosticVerifierHandler verifier(sourceMgr, &context, printed);
    (void)compile(options, sourceMgr, context, setup, result);
    return verifier.verify();
  }
  SourceMgrDiagnosticHandler printer(sourceMgr, &context, printed);
  // Registered after the printer, so asked first: it sees each diagnostic
  // and passes it on.
  std::optional<ScopedDiagnosticHandler> observer;
  if (hooks.observe)
    observer.emplace(&context, [&](Diagnostic &diagnostic) {
      hooks.observe(diagnostic);
      return failure();
    });
  return compile(options, sourceMgr, context, setup, result);
}

} // namespace meshc
