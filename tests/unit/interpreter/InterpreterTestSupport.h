//===- InterpreterTestSupport.h - fixture for interpreter tests -*- C++ -*-===//
//
// Parses one mtf.program from IR text, runs the reference interpreter on it,
// and records every diagnostic with its line, so tests can pin both the
// values of a run and the text and place of its errors.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_TESTS_UNIT_INTERPRETER_INTERPRETERTESTSUPPORT_H
#define MESHC_TESTS_UNIT_INTERPRETER_INTERPRETERTESTSUPPORT_H

#include "compiler/interpreter/Interpreter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

namespace meshc::interp {

/// One reported diagnostic: its line in the parsed text and its message.
struct Reported {
  unsigned line = 0;
  std::string message;
};

class InterpreterTest : public ::testing::Test {
protected:
  InterpreterTest() {
    context.loadDialect<mlir::mtf::MtfDialect>();
    handler = std::make_unique<mlir::ScopedDiagnosticHandler>(
        &context, [this](mlir::Diagnostic &diag) {
          Reported reported;
          if (auto loc =
                  llvm::dyn_cast<mlir::FileLineColLoc>(diag.getLocation()))
            reported.line = loc.getLine();
          reported.message = diag.str();
          diagnostics.push_back(reported);
          return mlir::success();
        });
  }

  /// Parses `source`, which must hold exactly one mtf.program.
  mlir::mtf::ProgramOp parse(llvm::StringRef source) {
    module = mlir::parseSourceString<mlir::ModuleOp>(source, &context);
    if (!module) {
      ADD_FAILURE() << "does not parse: "
                    << (diagnostics.empty() ? "" : diagnostics[0].message);
      return nullptr;
    }
    auto programs = module->getOps<mlir::mtf::ProgramOp>();
    if (std::distance(programs.begin(), programs.end()) != 1) {
      ADD_FAILURE() << "expected one mtf.program";
      return nullptr;
    }
    return *programs.begin();
  }

  /// Runs `source`; the run must succeed.
  std::map<std::string, Tensor> run(llvm::StringRef source,
                                    const Options &options = {}) {
    mlir::mtf::ProgramOp program = parse(source);
    if (!program)
      return {};
    mlir::FailureOr<std::map<std::string, Tensor>> outputs =
        interpret(program, options);
    if (mlir::failed(outputs)) {
      ADD_FAILURE() << "interpret failed: "
                    << (diagnostics.empty() ? "" : diagnostics[0].message);
      return {};
    }
    return *outputs;
  }

  /// Runs `source`; the run must fail with exactly one error, which is
  /// returned.
  Reported runError(llvm::StringRef source, const Options &options = {}) {
    mlir::mtf::ProgramOp program = parse(source);
    if (!program)
      return {};
    diagnostics.clear();
    if (mlir::succeeded(interpret(program, options)))
      ADD_FAILURE() << "interpret succeeded";
    if (diagnostics.size() != 1) {
      ADD_FAILURE() << "expected one diagnostic, got " << diagnostics.size();
      return {};
    }
    return diagnostics[0];
  }

  /// Runs `source` with interpretRuns; the runs must succeed.
  Result runAll(llvm::StringRef source, const Options &options = {}) {
    mlir::mtf::ProgramOp program = parse(source);
    if (!program)
      return {};
    mlir::FailureOr<Result> result = interpretRuns(program, options);
    if (mlir::failed(result)) {
      ADD_FAILURE() << "interpretRuns failed: "
                    << (diagnostics.empty() ? "" : diagnostics[0].message);
      return {};
    }
    return *result;
  }

  /// Runs `source` with interpretRuns; the runs must fail with exactly one
  /// error, which is returned.
  Reported runAllError(llvm::StringRef source, const Options &options = {}) {
    mlir::mtf::ProgramOp program = parse(source);
    if (!program)
      return {};
    diagnostics.clear();
    if (mlir::succeeded(interpretRuns(program, options)))
      ADD_FAILURE() << "interpretRuns succeeded";
    if (diagnostics.size() != 1) {
      ADD_FAILURE() << "expected one diagnostic, got " << diagnostics.size();
      return {};
    }
    return diagnostics[0];
  }

  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::unique_ptr<mlir::ScopedDiagnosticHandler> handler;
  std::vector<Reported> diagnostics;
};

/// A tensor with the given dimension names, sizes and values.
inline Tensor makeTensor(std::vector<std::string> dims,
                         std::vector<int64_t> shape, std::vector<double> data,
                         bool isInteger = false) {
  Tensor tensor;
  tensor.dims = std::move(dims);
  tensor.shape = std::move(shape);
  tensor.data = std::move(data);
  tensor.isInteger = isInteger;
  return tensor;
}

/// Expects `actual` to have `dims`, `shape` and values within `tolerance` of
/// `expected` (NaN matches NaN).
inline void expectTensor(const Tensor &actual,
                         const std::vector<std::string> &dims,
                         const std::vector<int64_t> &shape,
                         const std::vector<double> &expected,
                         double tolerance = 1e-12) {
  EXPECT_EQ(actual.dims, dims);
  EXPECT_EQ(actual.shape, shape);
  ASSERT_EQ(actual.data.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::isnan(expected[i]))
      EXPECT_TRUE(std::isnan(actual.data[i])) << "element " << i;
    else
      EXPECT_NEAR(actual.data[i], expected[i], tolerance) << "element " << i;
  }
}

} // namespace meshc::interp

#endif // MESHC_TESTS_UNIT_INTERPRETER_INTERPRETERTESTSUPPORT_H
