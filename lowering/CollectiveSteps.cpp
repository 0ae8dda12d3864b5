//===- CollectiveSteps.cpp - .mprog steps of the shard collectives --------===//
//
// A collective that cuts or joins unequal blocks lists each member's
// ("blocks"; for all_to_all "split_blocks", "concat_blocks" and the joined
// "concat_size"), as StepWriter::memberBlocks gives them.
//
//===----------------------------------------------------------------------===//

#include "lowering/CollectiveSteps.h"

#include "compiler/passes/LayoutBridge.h"
#include "dialect/MtfDialect.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

using namespace mlir;
namespace json = llvm::json;
namespace shard = mlir::shard;
using meshc::runtime::OpKind;

namespace meshc {

StringRef reductionName(shard::ReductionKind kind) {
  return kind == shard::ReductionKind::Max ? "max" : "sum";
}

namespace {

/// Adds `key`: the member blocks of `cut`'s dim `dim` over `group`, where
/// they differ.
LogicalResult addBlocks(json::Object &step, StringRef key, Operation *op,
                        Value cut, StringRef dim, ArrayRef<int16_t> group,
                        mtf::StepWriter &writer) {
  FailureOr<json::Value> blocks = writer.memberBlocks(op, cut, dim, group);
  if (failed(blocks))
    return failure();
  if (blocks->kind() != json::Value::Null)
    step[key] = std::move(*blocks);
  return success();
}

/// The result is summed (or maxed) in place over the group; a copy first
/// where the emitter gave it a buffer of its own.
struct AllReduceStep
    : mtf::StepOpInterface::ExternalModel<AllReduceStep, shard::AllReduceOp> {
  std::optional<OpKind> getStepKind(Operation *) const {
    return OpKind::AllReduce;
  }
  bool mayWorkInPlace(Operation *) const { return true; }
  LogicalResult writeSteps(Operation *op, mtf::StepWriter &writer) const {
    auto reduce = llvm::cast<shard::AllReduceOp>(op);
    int64_t in = writer.buffer(reduce.getInput());
    int64_t out = writer.buffer(reduce.getResult());
    if (in != out)
      writer.push(OpKind::Copy, json::Object{{"in", in}, {"out", out}});
    writer.push(
        OpKind::AllReduce,
        json::Object{{"buf", out},
                     {"axes", writer.axisNames(reduce.getGridAxes())},
                     {"reduction", reductionName(reduce.getReduction())}});
    return success();
  }
};

struct AllGatherStep
    : mtf::StepOpInterface::ExternalModel<AllGatherStep, shard::AllGatherOp> {
  std::optional<OpKind> getStepKind(Operation *) const {
    return OpKind::AllGather;
  }
  LogicalResult writeSteps(Operation *op, mtf::StepWriter &writer) const {
    auto gather = llvm::cast<shard::AllGatherOp>(op);
    std::string dim = writer.dimName(gather.getInput(),
                                     gather.getGatherAxis().getZExtValue());
    json::Object step{{"in", writer.operand(gather.getInput())},
                      {"out", writer.operand(gather.getResult())},
                      {"dim", dim},
                      {"axes", writer.axisNames(gather.getGridAxes())},
                      {"sizes", writer.sizes({gather.getResult()})}};
    if (failed(addBlocks(step, "blocks", op, gather.getInput(), dim,
                         gather.getGridAxes(), writer)))
      return failure();
    writer.push(OpKind::AllGather, std::move(step));
    return success();
  }
};

struct AllSliceStep
    : mtf::StepOpInterface::ExternalModel<AllSliceStep, shard::AllSliceOp> {
  std::optional<OpKind> getStepKind(Operation *) const { return OpKind::Slice; }
  LogicalResult writeSteps(Operation *op, mtf::StepWriter &writer) const {
    auto slice = llvm::cast<shard::AllSliceOp>(op);
    std::string dim =
        writer.dimName(slice.getInput(), slice.getSliceAxis().getZExtValue());
    json::Object step{{"in", writer.operand(slice.getInput())},
                      {"out", writer.operand(slice.getResult())},
                      {"dim", dim},
                      {"axes", writer.axisNames(slice.getGridAxes())},
                      {"sizes", writer.sizes({slice.getInput()})}};
    if (failed(addBlocks(step, "blocks", op, slice.getResult(), dim,
                         slice.getGridAxes(), writer)))
      return failure();
    writer.push(OpKind::Slice, std::move(step));
    return success();
  }
};

struct ReduceScatterStep
    : mtf::StepOpInterface::ExternalModel<ReduceScatterStep,
                                          shard::ReduceScatterOp> {
  std::optional<OpKind> getStepKind(Operation *) const {
    return OpKind::ReduceScatter;
  }
  LogicalResult writeSteps(Operation *op, mtf::StepWriter &writer) const {
    auto scatter = llvm::cast<shard::ReduceScatterOp>(op);
    std::string dim = writer.dimName(scatter.getInput(),
                                     scatter.getScatterAxis().getZExtValue());
    json::Object step{{"in", writer.operand(scatter.getInput())},
                      {"out", writer.operand(scatter.getResult())},
                      {"dim", dim},
                      {"axes", writer.axisNames(scatter.getGridAxes())},
                      {"reduction", reductionName(scatter.getReduction())},
                      {"sizes", writer.sizes({scatter.getInput()})}};
    if (failed(addBlocks(step, "blocks", op, scatter.getResult(), dim,
                         scatter.getGridAxes(), writer)))
      return failure();
    writer.push(OpKind::ReduceScatter, std::move(step));
    return success();
  }
};

struct AllToAllStep
    : mtf::StepOpInterface::ExternalModel<AllToAllStep, shard::AllToAllOp> {
  std::optional<OpKind> getStepKind(Operation *) const {
    return OpKind::AllToAll;
  }
  LogicalResult writeSteps(Operation *op, mtf::StepWriter &writer) const {
    auto exchange = llvm::cast<shard::AllToAllOp>(op);
    Value input = exchange.getInput(), result = exchange.getResult();
    size_t concatAxis = exchange.getConcatAxis().getZExtValue();
    std::string split =
        writer.dimName(input, exchange.getSplitAxis().getZExtValue());
    std::string concat = writer.dimName(input, concatAxis);
    json::Object step{{"in", writer.operand(input)},
                      {"out", writer.operand(result)},
                      {"split_dim", split},
                      {"concat_dim", concat},
                      {"axes", writer.axisNames(exchange.getGridAxes())},
                      {"sizes", writer.sizes({input})}};
    if (failed(addBlocks(step, "split_blocks", op, result, split,
                         exchange.getGridAxes(), writer)) ||
        failed(addBlocks(step, "concat_blocks", op, input, concat,
                         exchange.getGridAxes(), writer)))
      return failure();
    if (step.get("concat_blocks"))
      step["concat_size"] =
          writer.extent(result, concat, largestLocalShape(result)[concatAxis]);
    writer.push(OpKind::AllToAll, std::move(step));
    return success();
  }
};

} // namespace

void registerCollectiveStepModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, shard::ShardDialect *) {
    shard::AllReduceOp::attachInterface<AllReduceStep>(*context);
    shard::AllGatherOp::attachInterface<AllGatherStep>(*context);
    shard::AllSliceOp::attachInterface<AllSliceStep>(*context);
    shard::ReduceScatterOp::attachInterface<ReduceScatterStep>(*context);
    shard::AllToAllOp::attachInterface<AllToAllStep>(*context);
  });
}

} // namespace meshc
