//===- LayoutBridge.cpp - mtf attributes <-> the layout library -----------===//
//
// Conversions between the mtf dialect and runtime/core/layout values.
//
//===----------------------------------------------------------------------===//

#include "compiler/passes/LayoutBridge.h"

#include "mlir/IR/Diagnostics.h"

#include <set>

using namespace mlir;

namespace meshc {

layout::Mesh toMesh(mtf::MeshAttr mesh) {
  if (!mesh)
    return layout::Mesh::single();
  std::vector<layout::MeshAxis> axes;
  for (const mtf::NamedDim &axis : mesh.getAxes())
    axes.push_back({axis.name.getValue().str(), axis.size});
  // A verified #mtf.mesh always forms a valid mesh.
  layout::Result<layout::Mesh> result = layout::Mesh::fromAxes(axes);
  return result.ok() ? result.value() : layout::Mesh::single();
}

mtf::MeshAttr toMeshAttr(MLIRContext *context, const layout::Mesh &mesh) {
  if (mesh.rank() == 0)
    return {};
  SmallVector<mtf::NamedDim> axes;
  for (const layout::MeshAxis &axis : mesh.axes())
    axes.push_back({StringAttr::get(context, axis.name), axis.size});
  return mtf::MeshAttr::get(context, axes);
}

std::vector<layout::Dim> toDims(mtf::TensorType type) {
  std::vector<layout::Dim> dims;
  for (const mtf::NamedDim &dim : type.getDims())
    dims.push_back({dim.name.getValue().str(), dim.size});
  return dims;
}

mtf::LayoutAttr toLayoutAttr(mtf::TensorType type,
                             const layout::TensorLayout &tensorLayout,
                             const layout::Mesh &mesh) {
  MLIRContext *context = type.getContext();
  SmallVector<mtf::DimSplit> splits;
  for (auto [index, dim] : llvm::enumerate(type.getDims())) {
    const std::vector<size_t> &axes = tensorLayout.axesOf(index);
    if (axes.empty())
      continue;
    SmallVector<Attribute> names;
    for (size_t axis : axes)
      names.push_back(StringAttr::get(context, mesh.axisName(axis)));
    splits.push_back({dim.name, ArrayAttr::get(context, names)});
  }
  return mtf::LayoutAttr::get(context, splits);
}

layout::Result<layout::TensorLayout>
fromLayoutAttr(StringRef tensorName, mtf::TensorType type, mtf::LayoutAttr attr,
               const layout::Mesh &mesh, const layout::AxisWeights *weights) {
  std::vector<std::vector<std::string>> axes(type.getRank());
  for (auto [index, dim] : llvm::enumerate(type.getDims()))
    for (StringAttr axis : attr.getAxesFor(dim.name.getValue()))
      axes[index].push_back(axis.getValue().str());
  return layout::TensorLayout::fromAxes(tensorName, toDims(type), axes, mesh,
                                        weights);
}

layout::AxisWeights axisWeightsOf(mtf::ProgramOp program,
                                  const layout::Mesh &mesh) {
  layout::AxisWeights weights = layout::AxisWeights::even(mesh);
  if (auto text = program->getAttrOfType<StringAttr>(
          mtf::MtfDialect::kAxisWeightsAttrName)) {
    // mtf-apply-layout wrote it for this mesh; in IR written by hand that
    // does not parse, the weights stay even, and mtf-partition refuses the
    // splits they then fail to divide.
    layout::Result<layout::AxisWeights> parsed =
        layout::AxisWeights::parse(text.getValue().str(), mesh);
    if (parsed.ok())
      weights = *parsed;
  }
  if (program->hasAttr(mtf::MtfDialect::kUnevenAttrName))
    weights.allowIndivisible();
  return weights;
}

void setAxisWeights(mtf::ProgramOp program, const layout::AxisWeights &weights,
                    const layout::Mesh &mesh) {
  program->removeAttr(mtf::MtfDialect::kAxisWeightsAttrName);
  program->removeAttr(mtf::MtfDialect::kUnevenAttrName);
  MLIRContext *context = program.getContext();
  if (!weights.isEven())
    program->setAttr(mtf::MtfDialect::kAxisWeightsAttrName,
                     StringAttr::get(context, weights.str(mesh)));
  if (weights.allowsIndivisible())
    program->setAttr(mtf::MtfDialect::kUnevenAttrName, UnitAttr::get(context));
}

Operation *firstUnequalBlocks(mtf::ProgramOp program) {
  layout::Mesh mesh = toMesh(program.getMeshAttr());
  layout::AxisWeights weights = axisWeightsOf(program, mesh);
  if (weights.isPlain())
    return nullptr;
  for (Operation &op : program.getBodyBlock()) {
    auto attr =
        op.getAttrOfType<mtf::LayoutAttr>(mtf::MtfDialect::kLayoutAttrName);
    if (!attr || op.getNumResults() != 1)
      continue;
    auto type = llvm::dyn_cast<mtf::TensorType>(op.getResult(0).getType());
    if (!type)
      continue;
    layout::Result<layout::TensorLayout> tensorLayout =
        fromLayoutAttr("", type, attr, mesh, &weights);
    if (tensorLayout.ok() &&
        !tensorLayout->hasEqualBlocks(toDims(type), mesh, weights))
      return &op;
  }
  return nullptr;
}

std::string describeBlocks(mtf::TensorType type,
                           const layout::TensorLayout &tensorLayout,
                           const layout::Mesh &mesh,
                           const layout::AxisWeights &weights) {
  std::string text = "[";
  for (auto [index, dim] : llvm::enumerate(type.getDims())) {
    std::vector<int64_t> blocks =
        tensorLayout.blockSizes(index, dim.size, mesh, weights);
    bool equal = llvm::all_equal(blocks);
    text += index ? ", " : "";
    for (size_t i = 0; i < (equal ? 1 : blocks.size()); ++i)
      text += (i ? "|" : "") + std::to_string(blocks[i]);
  }
  return text + "]";
}

void setBlocks(Operation *op, mtf::TensorType type,
               const layout::TensorLayout &tensorLayout,
               const layout::Mesh &mesh, const layout::AxisWeights &weights,
               ArrayRef<size_t> dynamicDims) {
  MLIRContext *context = op->getContext();
  SmallVector<NamedAttribute> dims;
  for (auto [index, dim] : llvm::enumerate(type.getDims())) {
    std::vector<int64_t> sizes =
        tensorLayout.blockSizes(index, dim.size, mesh, weights);
    if (llvm::all_equal(sizes) && !llvm::is_contained(dynamicDims, index))
      continue;
    SmallVector<Attribute> axes;
    for (size_t axis : tensorLayout.axesOf(index))
      axes.push_back(StringAttr::get(context, mesh.axisName(axis)));
    dims.emplace_back(
        dim.name,
        DictionaryAttr::get(
            context, {NamedAttribute(StringAttr::get(context, "axes"),
                                     ArrayAttr::get(context, axes)),
                      NamedAttribute(StringAttr::get(context, "sizes"),
                                     DenseI64ArrayAttr::get(context, sizes))}));
  }
  if (dims.empty())
    op->removeAttr(mtf::MtfDialect::kBlocksAttrName);
  else
    op->setAttr(mtf::MtfDialect::kBlocksAttrName,
                DictionaryAttr::get(context, dims));
}

std::optional<DimBlocks> blocksOf(Operation *op, StringRef dim) {
  auto dims =
      op ? op->getAttrOfType<DictionaryAttr>(mtf::MtfDialect::kBlocksAttrName)
         : DictionaryAttr();
  auto split = dims ? dims.getAs<DictionaryAttr>(dim) : DictionaryAttr();
  if (!split)
    return std::nullopt;
  DimBlocks blocks;
  for (auto axis : split.getAs<ArrayAttr>("axes").getAsRange<StringAttr>())
    blocks.axes.push_back(axis.getValue().str());
  llvm::ArrayRef<int64_t> sizes =
      split.getAs<DenseI64ArrayAttr>("sizes").asArrayRef();
  blocks.sizes.assign(sizes.begin(), sizes.end());
  return blocks;
}

std::vector<int64_t> largestLocalShape(Value value) {
  if (auto named = llvm::dyn_cast<mtf::TensorType>(value.getType())) {
    std::vector<int64_t> shape;
    for (const mtf::NamedDim &dim : named.getDims())
      shape.push_back(dim.size);
    return shape;
  }
  auto ranked = llvm::dyn_cast<RankedTensorType>(value.getType());
  if (!ranked)
    return {};
  if (Value started = mtf::WaitOp::throughWait(value); started != value)
    return largestLocalShape(started);
  std::vector<int64_t> shape(ranked.getShape().begin(),
                             ranked.getShape().end());
  // The dim names are those of the named tensor the chain starts from.
  Value source = value;
  while (Operation *def = source.getDefiningOp()) {
    if (def->getNumOperands() == 0)
      break;
    source = def->getOperand(0);
    if (llvm::isa<mtf::TensorType>(source.getType()))
      break;
  }
  auto named = llvm::dyn_cast<mtf::TensorType>(source.getType());
  for (auto [index, size] : llvm::enumerate(shape)) {
    if (!ShapedType::isDynamic(size) || !named ||
        index >= named.getDims().size())
      continue;
    if (std::optional<DimBlocks> blocks = blocksOf(
            value.getDefiningOp(), named.getDims()[index].name.getValue()))
      size = *llvm::max_element(blocks->sizes);
  }
  return shape;
}

int64_t largestLocalBytes(Value value) {
  auto shaped = llvm::dyn_cast<ShapedType>(value.getType());
  Type element = shaped ? shaped.getElementType() : Type();
  if (auto named = llvm::dyn_cast<mtf::TensorType>(value.getType()))
    element = named.getElementType();
  if (!element || !element.isIntOrFloat())
    return 0;
  int64_t elements = 1;
  for (int64_t size : largestLocalShape(value))
    elements *= ShapedType::isDynamic(size) ? 0 : size;
  return elements * static_cast<int64_t>(element.getIntOrFloatBitWidth() / 8);
}

mtf::LayoutAttr resultLayoutAttr(Value value) {
  auto result = llvm::dyn_cast<OpResult>(value);
  if (!result)
    return {};
  Operation *op = result.getOwner();
  if (auto layouts =
          op->getAttrOfType<ArrayAttr>(mtf::MtfDialect::kLayoutsAttrName))
    return result.getResultNumber() < layouts.size()
               ? llvm::dyn_cast<mtf::LayoutAttr>(
                     layouts[result.getResultNumber()])
               : mtf::LayoutAttr();
  return op->getAttrOfType<mtf::LayoutAttr>(mtf::MtfDialect::kLayoutAttrName);
}

std::string resultTensorName(OpResult result) {
  Operation *op = result.getOwner();
  unsigned index = result.getResultNumber();
  std::string name = tensorName(op);
  if (llvm::isa<mtf::AttentionGradOp>(op))
    return name + (index == 0 ? ".dq" : index == 1 ? ".dk" : ".dv");
  if (index == 0)
    return name;
  if (llvm::isa<mtf::AttentionOp>(op))
    return name + ".logsumexp";
  return name + "#" + std::to_string(index);
}

std::string tensorName(Operation *op) {
  if (auto input = llvm::dyn_cast<mtf::InputOp>(op))
    return input.getName().str();
  if (auto param = llvm::dyn_cast<mtf::ParamOp>(op))
    return param.getName().str();
  if (auto named = llvm::dyn_cast<NameLoc>(op->getLoc()))
    return named.getName().getValue().str();
  std::string name = op->getName().stripDialect().str();
  if (auto fileLoc = llvm::dyn_cast<FileLineColLoc>(op->getLoc()))
    name += "@" + std::to_string(fileLoc.getLine()) + ":" +
            std::to_string(fileLoc.getColumn());
  return name;
}

std::map<std::string, int64_t> collectModelDims(Operation *root) {
  std::map<std::string, int64_t> dims;
  root->walk([&](Operation *op) {
    for (Type type : op->getResultTypes())
      if (auto tensor = llvm::dyn_cast<mtf::TensorType>(type))
        for (const mtf::NamedDim &dim : tensor.getDims())
          dims.emplace(dim.name.getValue().str(), dim.size);
  });
  return dims;
}

std::vector<std::vector<std::string>> collectTensorDims(Operation *root) {
  std::set<std::vector<std::string>> lists;
  root->walk([&](Operation *op) {
    for (Type type : op->getResultTypes())
      if (auto tensor = llvm::dyn_cast<mtf::TensorType>(type)) {
        std::vector<std::string> names;
        for (const mtf::NamedDim &dim : tensor.getDims())
          names.push_back(dim.name.getValue().str());
        lists.insert(std::move(names));
      }
  });
  return {lists.begin(), lists.end()};
}

InFlightDiagnostic emitLayoutError(Location loc, const layout::Error &error) {
  InFlightDiagnostic diag = emitError(loc) << error.message;
  if (!error.hint.empty())
    diag.attachNote() << "hint: " << error.hint;
  return diag;
}

layout::LayoutRules withLayoutAliases(mtf::ProgramOp program,
                                      layout::LayoutRules rules) {
  auto aliases = program->getAttrOfType<DictionaryAttr>(
      mtf::MtfDialect::kLayoutAliasesAttrName);
  if (!aliases)
    return rules;
  // Read all before adding any: each alias takes the rule the user gave.
  std::vector<std::pair<std::string, std::vector<std::string>>> added;
  for (NamedAttribute alias : aliases) {
    SmallVector<std::string> names;
    if (auto one = llvm::dyn_cast<StringAttr>(alias.getValue()))
      names.push_back(one.str());
    else
      for (Attribute name : llvm::cast<ArrayAttr>(alias.getValue()))
        names.push_back(llvm::cast<StringAttr>(name).str());
    const std::vector<std::string> *axes = rules.axesFor(names.front());
    if (!axes || rules.axesFor(alias.getName().str()))
      continue;
    std::vector<std::string> kept;
    for (const std::string &axis : *axes)
      if (llvm::none_of(
              ArrayRef(names).drop_front(), [&](const std::string &other) {
                const std::vector<std::string> *taken = rules.axesFor(other);
                return taken && llvm::is_contained(*taken, axis);
              }))
        kept.push_back(axis);
    if (!kept.empty())
      added.emplace_back(alias.getName().str(), kept);
  }
  for (auto &[dim, axes] : added)
    (void)rules.add(dim, axes);
  return rules;
}

std::string freshDimName(Operation *root, StringRef base) {
  std::map<std::string, int64_t> taken = collectModelDims(root);
  std::string name = base.str();
  for (int n = 2; taken.count(name); ++n)
    name = base.str() + "_" + std::to_string(n);
  return name;
}

std::vector<std::string> wholeLayerDims(mtf::ProgramOp program) {
  std::vector<std::string> dims;
  program.walk([&](mtf::LoopOp loop) { dims.push_back(loop.getDim().str()); });
  if (auto pipelines = program->getAttrOfType<DictionaryAttr>(
          mtf::MtfDialect::kPipelinesAttrName))
    for (NamedAttribute pipeline : pipelines)
      dims.push_back(pipeline.getName().str());
  if (auto aliases = program->getAttrOfType<DictionaryAttr>(
          mtf::MtfDialect::kLayoutAliasesAttrName))
    for (NamedAttribute alias : aliases) {
      // A microbatch dim's alias lists its batch dim first.
      StringRef standsFor;
      if (auto one = llvm::dyn_cast<StringAttr>(alias.getValue()))
        standsFor = one.getValue();
      else
        standsFor =
            llvm::cast<StringAttr>(llvm::cast<ArrayAttr>(alias.getValue())[0])
                .getValue();
      if (llvm::is_contained(dims, standsFor))
        dims.push_back(alias.getName().str());
    }
  return dims;
}

std::vector<size_t> dataParallelAxes(mtf::ProgramOp program,
                                     const layout::LayoutRules &rules,
                                     const layout::Mesh &mesh,
                                     const layout::AxisWeights *weights) {
  std::vector<size_t> axes;
  for (auto input : program.getBody().getOps<mtf::InputOp>()) {
    auto type = llvm::cast<mtf::TensorType>(input.getType());
    layout::Result<layout::TensorLayout> inputLayout =
        layout::TensorLayout::compute(tensorName(input), toDims(type), rules,
                                      mesh, weights);
    if (!inputLayout.ok())
      continue; // (laying the input out reports it)
    for (size_t d = 0; d < type.getDims().size(); ++d)
      for (size_t axis : inputLayout->axesOf(d))
        if (!llvm::is_contained(axes, axis))
          axes.push_back(axis);
  }
  return axes;
}

layout::Error withOption(const layout::Error &error, llvm::StringRef option,
                         llvm::StringRef text) {
  layout::Error located = error;
  located.message = "in " + option.str() + " \"" + text.str() + "\"" +
                    (error.column ? " at column " + std::to_string(error.column)
                                  : std::string()) +
                    ": " + error.message;
  return located;
}

FailureOr<layout::AxisWeights> optionWeights(mtf::ProgramOp program,
                                             const layout::Mesh &mesh,
                                             llvm::StringRef axisWeights,
                                             bool uneven) {
  layout::AxisWeights weights = layout::AxisWeights::even(mesh);
  if (!axisWeights.empty()) {
    layout::Result<layout::AxisWeights> parsed =
        layout::AxisWeights::parse(axisWeights, mesh);
    if (!parsed.ok()) {
      emitLayoutError(program.getLoc(),
                      withOption(parsed.error(), "axis-weights", axisWeights));
      return failure();
    }
    weights = *parsed;
  } else if (mesh == toMesh(program.getMeshAttr())) {
    weights = axisWeightsOf(program, mesh);
  }
  if (uneven)
    weights.allowIndivisible();
  return weights;
}

} // namespace meshc
