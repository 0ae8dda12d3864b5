//===- Train.cpp - mtf-autodiff -------------------------------------------===//
//
// Replaces `mtf.train` by the backward pass (Autodiff.h) and the optimizer
// update (Optimizer.h), and records what was asked for in the program's
// `mtf.training` attribute for the .mprog emitter and meshrun.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/Autodiff.h"
#include "compiler/passes/Microbatches.h"
#include "compiler/passes/Optimizer.h"
#include "compiler/passes/Passes.h"

using namespace mlir;

namespace meshc {
#define GEN_PASS_DEF_MTFAUTODIFF
#include "compiler/passes/Passes.h.inc"
} // namespace meshc

namespace {

struct MtfAutodiffPass : public meshc::impl::MtfAutodiffBase<MtfAutodiffPass> {
  using MtfAutodiffBase::MtfAutodiffBase;

  void runOnOperation() override {
    mtf::ProgramOp program = getOperation();
    mtf::TrainOp train;
    for (Operation &op : program.getBodyBlock())
      if (auto t = llvm::dyn_cast<mtf::TrainOp>(op))
        train = t;
    meshc::MicrobatchSpec microbatches = meshc::microbatchesOf(program);
    if (!train) {
      if (microbatches.count > 1) {
        program.emitError() << "--microbatches " << microbatches.count
                            << " accumulates gradients over microbatches, "
                               "but the model has no train statement";
        return signalPassFailure();
      }
      if (outputGrads) {
        program.emitError() << "gradients were asked for (output-grads) but "
                               "the program has no train statement";
        return signalPassFailure();
      }
      return;
    }
    if (program.getLocal()) {
      train.emitError() << "cannot differentiate a partitioned (local) program";
      return signalPassFailure();
    }
    for (Operation &op : program.getBodyBlock()) {
      auto param = llvm::dyn_cast<mtf::ParamOp>(op);
      if (param &&
          !meshc::tensorType(param.getResult()).getElementType().isF32()) {
        param.emitError() << "training needs f32 parameters; '"
                          << param.getName() << "' is "
                          << param.getResult().getType();
        return signalPassFailure();
      }
    }

    bool localSgd = train.getHyperparams().get("sync_every") != nullptr;
    if (microbatches.count > 1) {
      if (outputGrads || localSgd) {
        train.emitError() << "--microbatches does not go with "
                          << (outputGrads ? "--output-grads (a gradient "
                                            "output would be one "
                                            "microbatch's)"
                                          : "local SGD (sync_every)")
                          << " yet";
        return signalPassFailure();
      }
      if (failed(meshc::checkMicrobatchable(program, train, microbatches)))
        return signalPassFailure();
    }

    Block &block = program.getBodyBlock();
    meshc::OpEmitter backward(block, "backward");
    FailureOr<llvm::MapVector<Operation *, Value>> grads =
        meshc::differentiate(program, train.getLoss(), backward, loopRemat);
    if (failed(grads))
      return signalPassFailure();

    for (auto &[op, g] : *grads) {
      auto param = llvm::cast<mtf::ParamOp>(op);
      if (outputGrads) {
        backward.setLoc(param.getLoc());
        backward.tag(mtf::OutputOp::create(backward.builder(), param.getLoc(),
                                           ("grad/" + param.getName()).str(),
                                           g));
      }
    }
    if (localSgd)
      for (auto &[op, g] : *grads) {
        backward.setLoc(op->getLoc());
        g = backward.unary<mtf::LocalGradOp>(g);
      }

    meshc::OpEmitter update(block, "update");
    std::vector<std::string> accumulators;
    if (microbatches.count > 1)
      accumulators =
          meshc::accumulateGradients(*grads, microbatches, backward, update);
    meshc::emitOptimizer(train, *grads, update);

    Builder builder(&getContext());
    SmallVector<NamedAttribute> info{
        builder.getNamedAttr("optimizer", train.getOptimizerAttr()),
        builder.getNamedAttr("hyperparams", train.getHyperparamsAttr())};
    if (microbatches.count > 1) {
      SmallVector<Attribute> names;
      for (const std::string &name : accumulators)
        names.push_back(builder.getStringAttr(name));
      info.push_back(builder.getNamedAttr(
          "microbatches", builder.getI64IntegerAttr(microbatches.count)));
      info.push_back(
          builder.getNamedAttr("accumulators", builder.getArrayAttr(names)));
    }
    for (Operation *user : train.getLoss().getUsers())
      if (auto output = llvm::dyn_cast<mtf::OutputOp>(user)) {
        info.push_back(builder.getNamedAttr("loss", output.getNameAttr()));
        break;
      }
    program->setAttr(mtf::MtfDialect::kTrainingAttrName,
                     builder.getDictionaryAttr(info));
    train.erase();
  }
};

} // namespace
