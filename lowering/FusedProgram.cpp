//===- FusedProgram.cpp - An mtf.fused body as a .mprog program ----------===//

#include "lowering/FusedProgram.h"

#include "runtime/ElementFunctions.h"

#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>

using namespace mlir;
namespace json = llvm::json;

namespace meshc {

std::optional<StringRef> unaryFnOf(Operation &op) {
  if (!op.hasTrait<mtf::UnaryElementwise>())
    return std::nullopt;
  return op.getName().stripDialect();
}

std::optional<StringRef> binaryFnOf(Operation &op) {
  using runtime::BinaryFn;
  auto name = [](BinaryFn fn) {
    return std::optional<StringRef>(runtime::binaryFnName(fn));
  };
  return llvm::TypeSwitch<Operation *, std::optional<StringRef>>(&op)
      .Case([&](mtf::AddOp) { return name(BinaryFn::Add); })
      .Case([&](mtf::SubOp) { return name(BinaryFn::Sub); })
      .Case([&](mtf::MulOp) { return name(BinaryFn::Mul); })
      .Case([&](mtf::DivOp) { return name(BinaryFn::Div); })
      .Case([&](mtf::MaxOp) { return name(BinaryFn::Max); })
      .Case([&](mtf::MinOp) { return name(BinaryFn::Min); })
      .Case([&](mtf::EqualOp) { return name(BinaryFn::Eq); })
      .Case([&](mtf::LessOp) { return name(BinaryFn::Lt); })
      .Default([](Operation *) { return std::nullopt; });
}

namespace {

std::vector<std::string> namesOf(Value value) {
  std::vector<std::string> names;
  for (const mtf::NamedDim &dim :
       llvm::cast<mtf::TensorType>(value.getType()).getDims())
    names.push_back(dim.name.getValue().str());
  return names;
}

bool isReduction(Operation &op) {
  return llvm::isa<mtf::ReduceSumOp, mtf::ReduceMeanOp, mtf::ReduceMaxOp>(op);
}

/// The iteration dims: those of the first operand (else result) of the
/// widest rank, so that the group reads (else writes) it in order, with the
/// reduced dims moved last; and how many are reduced.
std::pair<std::vector<std::string>, size_t> iterationDims(mtf::FusedOp fused) {
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
    if (isReduction(op)) {
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

FusedProgram fusedProgram(mtf::FusedOp fused) {
  Block &body = fused.getBodyBlock();
  llvm::DenseMap<Value, int64_t> number;
  int64_t next = 0;
  for (Value arg : body.getArguments())
    number[arg] = next++;
  json::Array instructions;
  auto add = [&](json::Object instruction) {
    instructions.push_back(std::move(instruction));
    return next++;
  };
  for (Operation &op : body.without_terminator()) {
    json::Array args;
    for (Value operand : op.getOperands())
      args.push_back(number.lookup(operand));
    int64_t value = 0;
    if (auto constant = llvm::dyn_cast<mtf::ConstantOp>(op)) {
      value = add(json::Object{
          {"fn", "const"}, {"value", constant.getValue().convertToDouble()}});
    } else if (std::optional<StringRef> fn = unaryFnOf(op)) {
      value = add(json::Object{{"fn", *fn}, {"args", std::move(args)}});
    } else if (std::optional<StringRef> fn = binaryFnOf(op)) {
      value = add(json::Object{{"fn", *fn}, {"args", std::move(args)}});
    } else {
      // A reduction; a mean is a sum and a scale by 1 / (reduced count).
      bool isMax = llvm::isa<mtf::ReduceMaxOp>(op);
      value = add(json::Object{{"fn", isMax ? "reduce_max" : "reduce_sum"},
                               {"args", std::move(args)}});
      if (llvm::isa<mtf::ReduceMeanOp>(op)) {
        int64_t count = llvm::cast<mtf::TensorType>(op.getOperand(0).getType())
                            .getNumElements() /
                        llvm::cast<mtf::TensorType>(op.getResult(0).getType())
                            .getNumElements();
        value = add(
            json::Object{{"fn", runtime::unaryFnName(runtime::UnaryFn::Scale)},
                         {"args", json::Array{value}},
                         {"value", 1.0 / static_cast<double>(count)}});
      }
    }
    number[op.getResult(0)] = value;
  }
  FusedProgram program;
  for (Value result : body.getTerminator()->getOperands())
    program.resultValues.push_back(number.lookup(result));
  auto [dims, reduced] = iterationDims(fused);
  json::Array dimList;
  for (const std::string &name : dims)
    dimList.push_back(name);
  program.attrs = json::Object{{"dims", std::move(dimList)},
                               {"reduced", static_cast<int64_t>(reduced)},
                               {"body", std::move(instructions)}};
  return program;
}

} // namespace meshc
