//===- MtfTypes.cpp - mtf dialect types -----------------------------------===//
//
// Parsing, printing and verification of `!mtf.tensor`, and the shared
// `name=size` list syntax it has in common with `#mtf.mesh`.
//
//===----------------------------------------------------------------------===//

#include "dialect/MtfDialect.h"
#include "dialect/MtfSyntax.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

#define GET_TYPEDEF_CLASSES
#include "dialect/MtfTypes.cpp.inc"

void mlir::mtf::MtfDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialect/MtfTypes.cpp.inc"
      >();
}

namespace mlir {
namespace mtf {

ParseResult parseNamedDimList(AsmParser &parser,
                              SmallVectorImpl<NamedDim> &dims) {
  auto parseOne = [&]() -> ParseResult {
    std::string name;
    int64_t size = 0;
    if (parser.parseKeywordOrString(&name) || parser.parseEqual() ||
        parser.parseInteger(size))
      return failure();
    dims.push_back({StringAttr::get(parser.getContext(), name), size});
    return success();
  };
  return parser.parseCommaSeparatedList(parseOne);
}

void printNamedDimList(AsmPrinter &printer, ArrayRef<NamedDim> dims) {
  llvm::interleaveComma(dims, printer, [&](const NamedDim &dim) {
    printer.printKeywordOrString(dim.name.getValue());
    printer << "=" << dim.size;
  });
}

LogicalResult verifyNamedDimList(function_ref<InFlightDiagnostic()> emitError,
                                 ArrayRef<NamedDim> dims, StringRef what) {
  llvm::SmallDenseMap<StringAttr, unsigned> seen;
  for (auto [index, dim] : llvm::enumerate(dims)) {
    if (!dim.name || dim.name.getValue().empty())
      return emitError() << what << " #" << index << " has an empty name";
    if (dim.size <= 0)
      return emitError() << what << " '" << dim.name.getValue()
                         << "' must have a positive size, got " << dim.size;
    auto [it, inserted] = seen.try_emplace(dim.name, index);
    if (!inserted)
      return emitError() << what << " '" << dim.name.getValue()
                         << "' appears twice (#" << it->second << " and #"
                         << index << ")";
  }
  return success();
}

Type TensorType::parse(AsmParser &parser) {
  SmallVector<NamedDim> dims;
  Type elementType;
  if (parser.parseLess() || parser.parseLSquare())
    return {};
  if (failed(parser.parseOptionalRSquare())) {
    if (parseNamedDimList(parser, dims) || parser.parseRSquare())
      return {};
  }
  if (parser.parseComma() || parser.parseType(elementType) ||
      parser.parseGreater())
    return {};
  return parser.getChecked<TensorType>(parser.getContext(), dims, elementType);
}

void TensorType::print(AsmPrinter &printer) const {
  printer << "<[";
  printNamedDimList(printer, getDims());
  printer << "], " << getElementType() << ">";
}

LogicalResult TensorType::verify(function_ref<InFlightDiagnostic()> emitError,
                                 ArrayRef<NamedDim> dims, Type elementType) {
  if (!elementType.isF32() && !elementType.isBF16() && !elementType.isF16() &&
      !elementType.isSignlessInteger(32))
    return emitError() << "element type must be f32, bf16, f16 or i32, got "
                       << elementType;
  return verifyNamedDimList(emitError, dims, "dimension");
}

std::optional<unsigned> TensorType::getDimIndex(StringRef name) const {
  for (auto [index, dim] : llvm::enumerate(getDims()))
    if (dim.name.getValue() == name)
      return index;
  return std::nullopt;
}

SmallVector<StringRef> TensorType::getDimNames() const {
  SmallVector<StringRef> names;
  for (const NamedDim &dim : getDims())
    names.push_back(dim.name.getValue());
  return names;
}

int64_t TensorType::getNumElements() const {
  int64_t count = 1;
  for (const NamedDim &dim : getDims())
    count *= dim.size;
  return count;
}

int64_t TensorType::getElementBytes() const {
  return getElementType().getIntOrFloatBitWidth() / 8;
}

TensorType TensorType::withElementType(Type elementType) const {
  return TensorType::get(getContext(), getDims(), elementType);
}

} // namespace mtf
} // namespace mlir
