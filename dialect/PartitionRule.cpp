//===- PartitionRule.cpp - How mtf-partition splits one op ----------------===//

#include "dialect/MtfDialect.h"

namespace mlir {
namespace mtf {

const char *dimRoleName(DimRole role) {
  switch (role) {
  case DimRole::Parallel:
    return "parallel";
  case DimRole::Summed:
    return "summed";
  case DimRole::Maxed:
    return "maxed";
  case DimRole::Whole:
    return "whole";
  }
  return "?";
}

DimRole PartitionRule::roleOf(llvm::StringRef dim) const {
  for (const auto &[name, role] : roles)
    if (name == dim)
      return role;
  return DimRole::Parallel;
}

bool PartitionRule::reduces() const {
  for (const auto &entry : roles)
    if (entry.second == DimRole::Summed || entry.second == DimRole::Maxed)
      return true;
  return false;
}

PartitionRule PartitionRule::parallel() { return PartitionRule(); }

PartitionRule PartitionRule::linearParallel() {
  PartitionRule rule;
  rule.linear = true;
  return rule;
}

PartitionRule PartitionRule::whole(llvm::ArrayRef<llvm::StringRef> dims) {
  PartitionRule rule;
  for (llvm::StringRef dim : dims)
    if (rule.roleOf(dim) != DimRole::Whole)
      rule.roles.emplace_back(dim.str(), DimRole::Whole);
  return rule;
}

PartitionRule PartitionRule::contraction(Operation *op, DimRole role,
                                         bool mean) {
  PartitionRule rule;
  rule.mean = mean;
  auto result = llvm::cast<TensorType>(op->getResult(0).getType());
  for (Value operand : op->getOperands())
    for (const NamedDim &dim :
         llvm::cast<TensorType>(operand.getType()).getDims())
      if (!result.hasDim(dim.name.getValue()) &&
          rule.roleOf(dim.name.getValue()) == DimRole::Parallel)
        rule.roles.emplace_back(dim.name.getValue().str(), role);
  return rule;
}

static PartitionRule ofKind(PartitionKind kind) {
  PartitionRule rule;
  rule.kind = kind;
  return rule;
}

PartitionRule PartitionRule::forward() {
  return ofKind(PartitionKind::Forward);
}

PartitionRule PartitionRule::rename(llvm::StringRef from, llvm::StringRef to) {
  PartitionRule rule = ofKind(PartitionKind::Rename);
  rule.from = from.str();
  rule.to = to.str();
  return rule;
}

PartitionRule PartitionRule::reshape() {
  return ofKind(PartitionKind::Reshape);
}

PartitionRule PartitionRule::output() { return ofKind(PartitionKind::Output); }

PartitionRule PartitionRule::assign(llvm::StringRef param) {
  PartitionRule rule = ofKind(PartitionKind::Assign);
  rule.param = param.str();
  return rule;
}

PartitionRule PartitionRule::localGrad() {
  return ofKind(PartitionKind::LocalGrad);
}

PartitionRule PartitionRule::loop() { return ofKind(PartitionKind::Loop); }

PartitionRule PartitionRule::attention() {
  return ofKind(PartitionKind::Attention);
}

PartitionRule PartitionRule::refuse(llvm::StringRef why) {
  PartitionRule rule = ofKind(PartitionKind::Refuse);
  rule.refusal = why.str();
  return rule;
}

} // namespace mtf
} // namespace mlir

#include "dialect/MtfInterfaces.cpp.inc"
