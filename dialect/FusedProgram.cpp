//===- FusedProgram.cpp - An mtf.fused body as a .mprog program ----------===//

#include "dialect/FusedProgram.h"

#include "dialect/MtfDialect.h"

#include <algorithm>

using namespace mlir;
namespace json = llvm::json;

namespace mlir {
namespace mtf {

int64_t FusedProgramBuilder::add(json::Object instruction) {
  instructions.push_back(std::move(instruction));
  return next++;
}

void FusedProgramBuilder::roundTo(int64_t value, Type element) {
  auto instruction = static_cast<size_t>(value - arguments);
  if (value < arguments || !llvm::isa<BFloat16Type, Float16Type>(element))
    return;
  instructions[instruction].getAsObject()->insert(
      {"round", element.isBF16() ? "bf16" : "f16"});
}

int64_t FusedProgramBuilder::add(Operation *op, StringRef fn) {
  json::Array args;
  for (Value operand : op->getOperands())
    args.push_back(valueOf(operand));
  return add(json::Object{{"fn", fn}, {"args", std::move(args)}});
}

namespace {

std::vector<std::string> namesOf(Value value) {
  std::vector<std::string> names;
  for (const NamedDim &dim : llvm::cast<TensorType>(value.getType()).getDims())
    names.push_back(dim.name.getValue().str());
  return names;
}

/// The iteration dims: those of the first operand (else result) of the
/// widest rank, so that the group reads (else writes) it in order, with the
/// reduced dims moved last; and how many are reduced.
std::pair<std::vector<std::string>, size_t> iterationDims(FusedOp fused) {
  Block &body = fused.getBodyBlock();
  std::vector<std::string> widest;
  auto consider = [&](Value value) {
    std::vector<std::string> names = namesOf(value);
    if (names.size() > widest.size())
      widest = std::move(names);
  };
  for (Value arg : body.getArguments())
    consider(arg);
  for (Value result : body.getTerminator()->getOperands())
    consider(result);
  for (Operation &op : body.without_terminator())
    for (Value value : llvm::concat<Value>(op.getOperands(), op.getResults()))
      consider(value);
  std::vector<std::string> reduced;
  for (Operation &op : body.without_terminator())
    if (llvm::isa<ReductionOpInterface>(op)) {
      std::vector<std::string> kept = namesOf(op.getResult(0));
      for (const std::string &name : namesOf(op.getOperand(0)))
        if (std::find(kept.begin(), kept.end(), name) == kept.end())
          reduced.push_back(name);
      break;
    }
  std::stable_partition(widest.begin(), widest.end(), [&](const auto &name) {
    return std::find(reduced.begin(), reduced.end(), name) == reduced.end();
  });
  return {widest, reduced.size()};
}

} // namespace

FusedProgram fusedProgram(FusedOp fused) {
  Block &body = fused.getBodyBlock();
  FusedProgramBuilder builder;
  for (Value arg : body.getArguments())
    builder.numbers[arg] = builder.next++;
  builder.arguments = builder.next;
  // The region verifier admits only fusible ops in the body.
  for (Operation &op : body.without_terminator()) {
    int64_t value =
        llvm::cast<FusibleOpInterface>(op).writeFusedInstructions(builder);
    builder.numbers[op.getResult(0)] = value;
    // A 16-bit result is rounded as the unfused step would store it, so
    // where fusion groups fall (a recomputed layer's, say) changes nothing.
    builder.roundTo(
        value,
        llvm::cast<TensorType>(op.getResult(0).getType()).getElementType());
  }
  FusedProgram program;
  for (Value result : body.getTerminator()->getOperands())
    program.resultValues.push_back(builder.valueOf(result));
  auto [dims, reduced] = iterationDims(fused);
  json::Array dimList;
  for (const std::string &name : dims)
    dimList.push_back(name);
  program.attrs = json::Object{{"dims", std::move(dimList)},
                               {"reduced", static_cast<int64_t>(reduced)},
                               {"body", std::move(builder.instructions)}};
  return program;
}

} // namespace mtf
} // namespace mlir
