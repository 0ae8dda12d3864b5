//===- AutodiffTestSupport.h - compiling .mtf text for the tests -*- C++
//-*-===//

#ifndef MESHC_TESTS_UNIT_AUTODIFF_SUPPORT_H
#define MESHC_TESTS_UNIT_AUTODIFF_SUPPORT_H

#include "compiler/driver/Pipeline.h"
#include "compiler/driver/Registration.h"
#include "compiler/interpreter/Interpreter.h"
#include "frontend/Frontend.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace meshc::testing {

/// A .mtf model imported and run through mtf-autodiff (gradients as
/// outputs), with the diagnostics it produced.
struct Compiled {
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::string diagnostics;

  mlir::mtf::ProgramOp program() {
    return *module->getOps<mlir::mtf::ProgramOp>().begin();
  }
};

/// `source` is .mtf text, or with `ir` mtf IR (for ops the language does
/// not write, such as split_dim).
inline std::unique_ptr<Compiled>
compile(const std::string &source, bool outputGrads = true, bool ir = false) {
  auto result = std::make_unique<Compiled>();
  mlir::DialectRegistry registry;
  meshc::registerAll(registry);
  result->context = std::make_unique<mlir::MLIRContext>(registry);
  result->context->loadAllAvailableDialects();
  Compiled *raw = result.get();
  result->context->getDiagEngine().registerHandler(
      [raw](mlir::Diagnostic &diag) {
        raw->diagnostics += diag.str() + "\n";
        return mlir::success();
      });
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, "test.mtf"), llvm::SMLoc());
  result->module = ir ? mlir::parseSourceString<mlir::ModuleOp>(
                            source, result->context.get())
                      : meshc::frontend::importMtf(sourceMgr, *result->context);
  if (!result->module ||
      failed(meshc::differentiate(*result->module, outputGrads)))
    result->module = nullptr;
  return result;
}

} // namespace meshc::testing

#endif // MESHC_TESTS_UNIT_AUTODIFF_SUPPORT_H
