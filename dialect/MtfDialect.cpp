//===- MtfDialect.cpp - the mtf dialect -----------------------------------===//
//
// Dialect registration and the verifiers of the discardable attributes:
// `mtf.layout`, which `mtf-apply-layout` attaches to every tensor-producing
// op, `mtf.blocks` (mtf-partition, under device weights) and the others.
//
//===----------------------------------------------------------------------===//

#include "dialect/MtfDialect.h"

using namespace mlir;

#include "dialect/MtfDialect.cpp.inc"

void mlir::mtf::MtfDialect::initialize() {
  registerTypes();
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "dialect/MtfOps.cpp.inc"
      >();
}

namespace mlir {
namespace mtf {

/// mtf.blocks: {dim = {axes = [mesh axes], sizes = array<i64: ...>}}, one
/// size per shard of the axes, the largest the dim's size in a named result.
static LogicalResult verifyBlocksAttr(Operation *op, Attribute value) {
  auto fail = [&]() {
    return op->emitError() << "'" << MtfDialect::kBlocksAttrName << "' ";
  };
  auto dims = llvm::dyn_cast<DictionaryAttr>(value);
  if (!dims || op->getNumResults() == 0)
    return fail() << "must be a dictionary on an op with results";
  auto program = op->getParentOfType<ProgramOp>();
  MeshAttr mesh = program ? program.getMeshAttr() : MeshAttr();
  // The named results: an op with several (fused attention) cuts each dim
  // name alike in all of them.
  SmallVector<TensorType> named;
  for (Type type : op->getResultTypes())
    if (auto tensor = llvm::dyn_cast<TensorType>(type))
      named.push_back(tensor);
  if (op->getNumResults() > 1 && named.size() != op->getNumResults())
    return fail() << "on an op with several results needs them all "
                     "!mtf.tensor";
  for (NamedAttribute entry : dims) {
    StringRef dim = entry.getName().getValue();
    auto split = llvm::dyn_cast<DictionaryAttr>(entry.getValue());
    auto axes = split ? split.getAs<ArrayAttr>("axes") : ArrayAttr();
    auto sizes =
        split ? split.getAs<DenseI64ArrayAttr>("sizes") : DenseI64ArrayAttr();
    if (!axes || !sizes || split.size() != 2)
      return fail() << "entry '" << dim
                    << "' must be {axes = [mesh axes], sizes = array<i64>}";
    int64_t shards = 1;
    for (auto [position, axis] : llvm::enumerate(axes)) {
      if (llvm::is_contained(axes.getValue().take_front(position), axis))
        return fail() << "entry '" << dim << "' lists mesh axis " << axis
                      << " twice";
      auto name = llvm::dyn_cast<StringAttr>(axis);
      std::optional<unsigned> index =
          name && mesh ? mesh.getAxisIndex(name.getValue()) : std::nullopt;
      if (!index)
        return fail() << "entry '" << dim << "' names " << axis
                      << ", which is not an axis of the program's mesh";
      shards *= mesh.getAxes()[*index].size;
    }
    if (static_cast<int64_t>(sizes.size()) != shards ||
        llvm::any_of(sizes.asArrayRef(), [](int64_t s) { return s < 0; }))
      return fail() << "entry '" << dim << "' needs " << shards
                    << " sizes of at least 0, one per shard, got " << sizes;
    if (named.empty())
      continue;
    int64_t largest = *llvm::max_element(sizes.asArrayRef());
    TensorType mismatched = named.front();
    bool held = false;
    for (TensorType result : named) {
      std::optional<unsigned> position = result.getDimIndex(dim);
      if (!position)
        continue;
      if (result.getDims()[*position].size != largest) {
        mismatched = result;
        held = false;
        break;
      }
      held = true;
    }
    if (!held)
      return fail() << "entry '" << dim << "' does not match the result type "
                    << mismatched << ", which must hold the largest block ("
                    << largest << ")";
  }
  return success();
}

LogicalResult MtfDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attr) {
  if (attr.getName() == kReasonAttrName) {
    if (!llvm::isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'" << kReasonAttrName
                             << "' must be a string, got " << attr.getValue();
    return success();
  }
  if (attr.getName() == kResumesAttrName) {
    auto numbers = llvm::dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!numbers || numbers.empty() ||
        !llvm::isa_and_nonnull<LoopOp>(op->getParentOp()))
      return op->emitError()
             << "'" << kResumesAttrName
             << "' must be a non-empty array<i64> on an op of a loop body, got "
             << attr.getValue();
    return success();
  }
  if (attr.getName() == kHalfAttrName) {
    auto half = llvm::dyn_cast<IntegerAttr>(attr.getValue());
    if (!half || (half.getInt() != 0 && half.getInt() != 1) ||
        !op->getParentOfType<LoopOp>())
      return op->emitError() << "'" << kHalfAttrName
                             << "' must be 0 or 1 on an op in a loop body, got "
                             << attr.getValue();
    return success();
  }
  if (attr.getName() == kTrainingAttrName) {
    if (!llvm::isa<ProgramOp>(op) ||
        !llvm::isa<DictionaryAttr>(attr.getValue()))
      return op->emitError() << "'" << kTrainingAttrName
                             << "' must be a dictionary on an mtf.program";
    return success();
  }
  if (attr.getName() == kLayoutAliasesAttrName) {
    auto dict = llvm::dyn_cast<DictionaryAttr>(attr.getValue());
    if (!llvm::isa<ProgramOp>(op) || !dict ||
        !llvm::all_of(dict, [](NamedAttribute entry) {
          if (llvm::isa<StringAttr>(entry.getValue()))
            return true;
          auto names = llvm::dyn_cast<ArrayAttr>(entry.getValue());
          return names && !names.empty() &&
                 llvm::all_of(names, [](Attribute name) {
                   return llvm::isa<StringAttr>(name);
                 });
        }))
      return op->emitError()
             << "'" << kLayoutAliasesAttrName
             << "' must map dim names to a dim name or a list of them on an "
                "mtf.program, got "
             << attr.getValue();
    return success();
  }
  if (attr.getName() == kModelDimsAttrName) {
    auto dict = llvm::dyn_cast<DictionaryAttr>(attr.getValue());
    if (!llvm::isa<ProgramOp>(op) || !dict ||
        !llvm::all_of(dict, [](NamedAttribute entry) {
          auto names = llvm::dyn_cast<ArrayAttr>(entry.getValue());
          return names && names.size() >= 2 &&
                 llvm::all_of(names, [](Attribute name) {
                   return llvm::isa<StringAttr>(name);
                 });
        }))
      return op->emitError()
             << "'" << kModelDimsAttrName
             << "' must map a model dim name to the list of at least two dim "
                "names it is cut into on an mtf.program, got "
             << attr.getValue();
    return success();
  }
  if (attr.getName() == kPipelinesAttrName) {
    auto dict = llvm::dyn_cast<DictionaryAttr>(attr.getValue());
    bool valid = llvm::isa<ProgramOp>(op) && dict;
    for (NamedAttribute entry :
         valid ? dict.getValue() : ArrayRef<NamedAttribute>()) {
      auto shape = llvm::dyn_cast<DictionaryAttr>(entry.getValue());
      for (StringRef key : {"stages", "per_stage", "microbatches", "ticks"})
        valid = valid && shape && shape.getAs<IntegerAttr>(key) &&
                shape.getAs<IntegerAttr>(key).getInt() >= 1;
      // The schedule, where recorded: "gpipe", "1f1b" or "interleaved"
      // (with its rounds, virtual_stages >= 2).
      if (valid && shape.get("schedule")) {
        auto schedule = shape.getAs<StringAttr>("schedule");
        valid = schedule && (schedule.getValue() == "gpipe" ||
                             schedule.getValue() == "1f1b" ||
                             schedule.getValue() == "interleaved");
      }
      if (valid && shape.get("virtual_stages"))
        valid = shape.getAs<IntegerAttr>("virtual_stages") &&
                shape.getAs<IntegerAttr>("virtual_stages").getInt() >= 2;
      // Uneven stages: each stage's layers, at most per_stage.
      if (valid && shape.get("blocks")) {
        auto blocks = shape.getAs<DenseI64ArrayAttr>("blocks");
        valid = blocks && static_cast<int64_t>(blocks.size()) ==
                              shape.getAs<IntegerAttr>("stages").getInt();
        for (int64_t block : blocks ? blocks.asArrayRef() : ArrayRef<int64_t>())
          valid = valid && block >= 0 &&
                  block <= shape.getAs<IntegerAttr>("per_stage").getInt();
      }
    }
    if (!valid)
      return op->emitError()
             << "'" << kPipelinesAttrName
             << "' must map layer dims to {stages, per_stage, microbatches, "
                "ticks} (each at least 1; with uneven stages, blocks: the "
                "layers of each, at most per_stage; schedule: \"gpipe\", "
                "\"1f1b\" or \"interleaved\"; virtual_stages: at least 2) on "
                "an mtf.program, got "
             << attr.getValue();
    return success();
  }
  if (attr.getName() == kOneFOneBAttrName) {
    auto dict = llvm::dyn_cast<DictionaryAttr>(attr.getValue());
    auto stages = dict ? dict.getAs<IntegerAttr>("stages") : IntegerAttr();
    auto count = dict ? dict.getAs<IntegerAttr>("microbatches") : IntegerAttr();
    auto stage = dict ? dict.getAs<StringAttr>("stage") : StringAttr();
    auto entries = dict ? dict.getAs<IntegerAttr>("entries") : IntegerAttr();
    auto loop = llvm::dyn_cast<LoopOp>(op);
    if (!loop || !stages || !count || !stage || !entries || dict.size() != 4 ||
        stages.getInt() < 2 || count.getInt() < 1 || entries.getInt() < 0 ||
        entries.getInt() > static_cast<int64_t>(loop.getStacked().size()))
      return op->emitError()
             << "'" << kOneFOneBAttrName
             << "' must be {stages = P, microbatches = M, stage = \"dim\", "
                "entries = N} with P >= 2, M >= 1 and N at most the stacked "
                "operands on an mtf.loop, got "
             << attr.getValue();
    return success();
  }
  if (attr.getName() == kMicrobatchesAttrName) {
    auto dict = llvm::dyn_cast<DictionaryAttr>(attr.getValue());
    auto count = dict ? dict.getAs<IntegerAttr>("count") : IntegerAttr();
    auto dim = dict ? dict.getAs<StringAttr>("dim") : StringAttr();
    if (!llvm::isa<ProgramOp>(op) || !count || !dim || dict.size() != 2 ||
        count.getInt() < 2 || dim.getValue().empty())
      return op->emitError()
             << "'" << kMicrobatchesAttrName
             << "' must be {count = M, dim = \"name\"} with M >= 2 on an "
                "mtf.program, got "
             << attr.getValue();
    return success();
  }
  if (attr.getName() == kPhaseAttrName) {
    auto phase = llvm::dyn_cast<StringAttr>(attr.getValue());
    if (!phase ||
        (phase.getValue() != "backward" && phase.getValue() != "update"))
      return op->emitError()
             << "'" << kPhaseAttrName
             << "' must be \"backward\" or \"update\", got " << attr.getValue();
    return success();
  }
  if (attr.getName() == kInstanceAttrName ||
      attr.getName() == kCheckpointAttrName) {
    if (!llvm::isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'" << attr.getName().getValue()
                             << "' must be a string, got " << attr.getValue();
    return success();
  }
  if (attr.getName() == kAxisWeightsAttrName ||
      attr.getName() == kUnevenAttrName) {
    bool typed = attr.getName() == kUnevenAttrName
                     ? llvm::isa<UnitAttr>(attr.getValue())
                     : llvm::isa<StringAttr>(attr.getValue());
    if (!llvm::isa<ProgramOp>(op) || !typed)
      return op->emitError()
             << "'" << attr.getName().getValue() << "' must be a "
             << (attr.getName() == kUnevenAttrName ? "unit attribute"
                                                   : "string")
             << " on an mtf.program";
    return success();
  }
  if (attr.getName() == kBlocksAttrName)
    return verifyBlocksAttr(op, attr.getValue());
  if (attr.getName() == kLayoutsAttrName) {
    auto layouts = llvm::dyn_cast<ArrayAttr>(attr.getValue());
    if (!layouts || op->getNumResults() < 2 ||
        layouts.size() != op->getNumResults())
      return op->emitError() << "'" << kLayoutsAttrName
                             << "' must be an array of one #mtf.layout per "
                                "result of an op with several results";
    auto program = op->getParentOfType<ProgramOp>();
    MeshAttr mesh =
        program && !program.getLocal() ? program.getMeshAttr() : MeshAttr();
    for (auto [layout, result] : llvm::zip(layouts, op->getResults())) {
      auto tensorLayout = llvm::dyn_cast<LayoutAttr>(layout);
      auto type = llvm::dyn_cast<TensorType>(result.getType());
      if (!tensorLayout || !type)
        return op->emitError() << "'" << kLayoutsAttrName
                               << "' must hold #mtf.layout entries for "
                                  "!mtf.tensor results";
      if (failed(verifyLayout([&] { return op->emitError(); }, type,
                              tensorLayout, mesh, allowsUnequalBlocks(op))))
        return failure();
    }
    return success();
  }
  if (attr.getName() != kLayoutAttrName)
    return op->emitError() << "unknown mtf attribute '"
                           << attr.getName().getValue() << "'";
  auto layout = llvm::dyn_cast<LayoutAttr>(attr.getValue());
  if (!layout)
    return op->emitError() << "'" << kLayoutAttrName
                           << "' must be a #mtf.layout, got "
                           << attr.getValue();
  if (op->getNumResults() != 1 ||
      !llvm::isa<TensorType>(op->getResult(0).getType()))
    return op->emitError() << "'" << kLayoutAttrName
                           << "' needs an op with one !mtf.tensor result";
  // In a local program types are per-device blocks: only the dimension
  // names can be checked against them.
  auto program = op->getParentOfType<ProgramOp>();
  MeshAttr mesh =
      program && !program.getLocal() ? program.getMeshAttr() : MeshAttr();
  return verifyLayout([&] { return op->emitError(); },
                      llvm::cast<TensorType>(op->getResult(0).getType()),
                      layout, mesh, allowsUnequalBlocks(op));
}

bool allowsUnequalBlocks(Operation *op) {
  auto program = llvm::dyn_cast<ProgramOp>(op);
  if (!program)
    program = op->getParentOfType<ProgramOp>();
  return program && (program->hasAttr(MtfDialect::kAxisWeightsAttrName) ||
                     program->hasAttr(MtfDialect::kUnevenAttrName));
}

LogicalResult verifyLayout(function_ref<InFlightDiagnostic()> emitError,
                           TensorType type, LayoutAttr layout, MeshAttr mesh,
                           bool unequalBlocks) {
  for (const DimSplit &split : layout.getSplits()) {
    std::optional<unsigned> index = type.getDimIndex(split.dim.getValue());
    if (!index)
      return emitError() << "layout splits dimension '" << split.dim.getValue()
                         << "' which the tensor does not have (type " << type
                         << ")";
    if (!mesh)
      continue;
    int64_t shards = 1;
    for (StringAttr axis : layout.getAxesFor(split.dim.getValue())) {
      std::optional<unsigned> axisIndex = mesh.getAxisIndex(axis.getValue());
      if (!axisIndex)
        return emitError() << "layout uses mesh axis '" << axis.getValue()
                           << "' which mesh " << mesh << " does not have";
      shards *= mesh.getAxes()[*axisIndex].size;
    }
    int64_t size = type.getDims()[*index].size;
    if (size % shards != 0 && !unequalBlocks)
      return emitError() << "dimension '" << split.dim.getValue() << "' (size "
                         << size << ") is not divisible by its " << shards
                         << " shards";
  }
  return success();
}

} // namespace mtf
} // namespace mlir
