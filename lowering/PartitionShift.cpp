//===- PartitionShift.cpp - a shift along a split dimension ---------------===//
//
// `shift(x, d, k)` (mtf.window with from == to) along a dimension split into
// equal blocks of at least |k| elements needs, on each device, its own block
// moved by k and the |k| elements next to it from one neighbouring block:
// a halo exchange, one collective_permute of |k| slices, where gathering the
// dimension would move every block to every device.
//
// With the window's offset o (result[j] = x[j + o]; shift(x, d, k) is
// o = -k; a multiple of the block size moves whole blocks that many members
// on instead):
//   o > 0: each block's first o elements go to the previous member; the
//   last member's halo is zeros.
//   o < 0: each block's last |o| elements go to the next member; the first
//   member's halo is zeros.
//
//===----------------------------------------------------------------------===//

#include "lowering/Partitioner.h"

using namespace mlir;

namespace meshc {

bool Partitioner::partitionShift(mtf::WindowOp op) {
  int64_t offset = op.getOffset();
  // A shift in place (a window that also transposes takes the whole rule).
  if (op.getFrom() != op.getTo() || offset == 0 ||
      op.getInput().getType() != op.getType())
    return false;
  auto type = llvm::cast<mtf::TensorType>(op.getType());
  Layout layout = resultLayout(op);
  size_t dim = *type.getDimIndex(op.getFrom());
  const std::vector<size_t> &axes = layout.axesOf(dim);
  if (axes.empty())
    return false;
  int64_t size = type.getDims()[dim].size;
  std::vector<int64_t> blocks = layout.blockSizes(dim, size, mesh, weights);
  int64_t halo = offset > 0 ? offset : -offset;
  if (!llvm::all_equal(blocks))
    return false;
  int64_t block = blocks.front();
  auto members = static_cast<int64_t>(blocks.size());
  // A shift by whole blocks moves each block `distance` members on (an
  // interleaved pipeline's last stage to the first: one pair).
  int64_t distance = 1;
  if (block < halo) {
    if (halo % block != 0 || halo / block >= members)
      return false;
    distance = halo / block;
    halo = block;
  }

  Location loc = op.getLoc();
  Value local = operandAs(op.getInput(), layout, op);
  mtf::TensorType blockType = localType(type, layout);
  // The halo's dim: a name the tensor does not have.
  std::string haloName = "halo_" + op.getFrom().str();
  while (type.hasDim(haloName))
    haloName += "_";
  SmallVector<mtf::NamedDim> haloDims(blockType.getDims());
  haloDims[dim] = {builder.getStringAttr(haloName), halo};
  auto haloType = mtf::TensorType::get(builder.getContext(), haloDims,
                                       blockType.getElementType());
  SmallVector<int64_t> shape;
  for (const mtf::NamedDim &d : haloDims)
    shape.push_back(d.size);
  auto ranked = RankedTensorType::get(shape, haloType.getElementType());

  // The slice this block sends, and to whom.
  Value sent =
      mtf::WindowOp::create(builder, loc, haloType, local, op.getFrom(),
                            haloName, offset > 0 ? 0 : block - halo);
  SmallVector<int64_t> pairs;
  for (int64_t rank = 0; rank < members; ++rank) {
    int64_t target = offset > 0 ? rank - distance : rank + distance;
    if (target >= 0 && target < members)
      pairs.append({rank, target});
  }
  Value tensor = mtf::ToTensorOp::create(builder, loc, ranked, sent);
  auto permute = mtf::CollectivePermuteOp::create(
      builder, loc, ranked, tensor, grid, gridAxes(axes),
      builder.getDenseI64ArrayAttr(pairs));
  permute->setAttr(
      mtf::MtfDialect::kReasonAttrName,
      builder.getStringAttr(
          "the shift of '" + op.getFrom().str() + "' by " +
          std::to_string(-offset) + " needs " + std::to_string(halo) +
          " element" + (halo == 1 ? "" : "s") +
          (distance == 1 ? std::string(" of the neighbouring block")
                         : " of the block " + std::to_string(distance) +
                               " members away")));
  Value received =
      mtf::FromTensorOp::create(builder, loc, haloType, permute.getResult());

  // This block moved, and the received halo placed where it ends up.
  Value moved = mtf::WindowOp::create(builder, loc, blockType, local,
                                      op.getFrom(), op.getFrom(), offset);
  Value placed =
      mtf::WindowOp::create(builder, loc, blockType, received, haloName,
                            op.getFrom(), offset > 0 ? halo - block : 0);
  Value result =
      mtf::AddOp::create(builder, loc, blockType, moved, placed).getResult();
  define(op.getResult(), result, layout);
  return true;
}

} // namespace meshc
