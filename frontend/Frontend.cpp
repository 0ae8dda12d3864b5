//===- Frontend.cpp - The .mtf model language frontend --------------------===//
//
// Drives the parser and MLIRGen statement by statement, so the first error in
// the file is the one reported, then verifies the module.
//
//===----------------------------------------------------------------------===//

#include "frontend/Frontend.h"

#include "dialect/MtfDialect.h"
#include "frontend/MLIRGen.h"
#include "frontend/Parser.h"

#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Path.h"

using namespace meshc::frontend;

namespace {
/// The name of the program built from the file `path`: its stem with every
/// character other than a letter, digit or '_' replaced by '_', and a leading
/// '_' added when it would start with a digit ("program" when empty).
std::string programNameForFile(llvm::StringRef path) {
  std::string name = llvm::sys::path::stem(path).str();
  for (char &c : name)
    if (!llvm::isAlnum(c) && c != '_')
      c = '_';
  if (name.empty())
    return "program";
  if (llvm::isDigit(name.front()))
    name.insert(name.begin(), '_');
  return name;
}
} // namespace

mlir::OwningOpRef<mlir::ModuleOp>
meshc::frontend::importMtf(llvm::SourceMgr &sourceMgr,
                           mlir::MLIRContext &context,
                           const ImportOptions &options) {
  context.getOrLoadDialect<mlir::mtf::MtfDialect>();
  const llvm::MemoryBuffer *buffer =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  llvm::StringRef filename = buffer->getBufferIdentifier();
  DiagnosticEmitter diagnostics(context, filename);

  mlir::Location fileLoc = diagnostics.location(Loc{1, 1});
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(fileLoc);
  mlir::OpBuilder builder(module->getBodyRegion());
  auto program = mlir::mtf::ProgramOp::create(builder, fileLoc,
                                              programNameForFile(filename));

  MLIRGen gen(diagnostics, program, options);
  Parser parser(buffer->getBuffer(), diagnostics);
  while (true) {
    StmtPtr stmt;
    if (failed(parser.parseTopLevel(stmt)))
      return nullptr;
    if (!stmt)
      break;
    if (failed(gen.generate(std::move(stmt))))
      return nullptr;
  }
  if (options.microbatches > 1) {
    if (!gen.declaredMicrobatchDim()) {
      mlir::emitError(fileLoc)
          << "--microbatches " << options.microbatches << " cuts dim '"
          << options.microbatchDim
          << "' into microbatches, but the model declares no such dim; name "
             "its batch dim with --microbatch-dim";
      return nullptr;
    }
    mlir::Builder b(&context);
    program->setAttr(
        mlir::mtf::MtfDialect::kMicrobatchesAttrName,
        b.getDictionaryAttr(
            {b.getNamedAttr("count", b.getI64IntegerAttr(options.microbatches)),
             b.getNamedAttr("dim", b.getStringAttr(options.microbatchDim))}));
  }
  if (failed(mlir::verify(*module)))
    return nullptr;
  return module;
}
