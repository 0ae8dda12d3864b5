//===- StepOps.cpp - What the overlap passes ask of a local program's ops -===//

#include "lowering/StepOps.h"

#include "dialect/MtfDialect.h"

namespace meshc {

using namespace mlir;

bool communicates(Operation *op) {
  std::optional<runtime::OpKind> kind = mtf::stepKindOf(op);
  return kind && runtime::communicates(*kind);
}

llvm::DenseSet<Value> buffersOf(ArrayRef<Value> roots) {
  llvm::DenseSet<Value> seen;
  SmallVector<Value> work(roots.begin(), roots.end());
  while (!work.empty()) {
    Value value = work.pop_back_val();
    if (!seen.insert(value).second)
      continue;
    if (Operation *def = value.getDefiningOp();
        def && def->hasTrait<mtf::View>())
      work.push_back(def->getOperand(0));
    for (Operation *user : value.getUsers())
      if (user->hasTrait<mtf::View>())
        work.push_back(user->getResult(0));
  }
  return seen;
}

} // namespace meshc
