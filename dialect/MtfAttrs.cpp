//===- MtfAttrs.cpp - mtf dialect attributes ------------------------------===//
//
// Parsing, printing and verification of `#mtf.mesh`, `#mtf.layout` and
// `#mtf.init`.
//
//===----------------------------------------------------------------------===//

#include "dialect/MtfDialect.h"
#include "dialect/MtfSyntax.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <charconv>
#include <cmath>

using namespace mlir;

#include "dialect/MtfEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialect/MtfAttrs.cpp.inc"

void mlir::mtf::MtfDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialect/MtfAttrs.cpp.inc"
      >();
}

namespace mlir {
namespace mtf {

//===----------------------------------------------------------------------===//
// MeshAttr
//===----------------------------------------------------------------------===//

Attribute MeshAttr::parse(AsmParser &parser, Type) {
  SmallVector<NamedDim> axes;
  if (parser.parseLess() || parseNamedDimList(parser, axes) ||
      parser.parseGreater())
    return {};
  return parser.getChecked<MeshAttr>(parser.getContext(), axes);
}

void MeshAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printNamedDimList(printer, getAxes());
  printer << ">";
}

LogicalResult MeshAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<NamedDim> axes) {
  if (axes.empty())
    return emitError() << "a mesh needs at least one axis";
  return verifyNamedDimList(emitError, axes, "mesh axis");
}

int64_t MeshAttr::getNumDevices() const {
  int64_t count = 1;
  for (const NamedDim &axis : getAxes())
    count *= axis.size;
  return count;
}

std::optional<unsigned> MeshAttr::getAxisIndex(StringRef name) const {
  for (auto [index, axis] : llvm::enumerate(getAxes()))
    if (axis.name.getValue() == name)
      return index;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// LayoutAttr
//===----------------------------------------------------------------------===//

Attribute LayoutAttr::parse(AsmParser &parser, Type) {
  SmallVector<DimSplit> splits;
  MLIRContext *context = parser.getContext();
  auto parseOne = [&]() -> ParseResult {
    std::string dim;
    SmallVector<Attribute> axes;
    if (parser.parseKeywordOrString(&dim) || parser.parseColon())
      return failure();
    do {
      std::string axis;
      if (parser.parseKeywordOrString(&axis))
        return failure();
      axes.push_back(StringAttr::get(context, axis));
    } while (succeeded(parser.parseOptionalPlus()));
    splits.push_back(
        {StringAttr::get(context, dim), ArrayAttr::get(context, axes)});
    return success();
  };
  if (parser.parseLess())
    return {};
  if (failed(parser.parseOptionalGreater())) {
    if (parser.parseCommaSeparatedList(parseOne) || parser.parseGreater())
      return {};
  }
  return parser.getChecked<LayoutAttr>(context, splits);
}

void LayoutAttr::print(AsmPrinter &printer) const {
  printer << "<";
  llvm::interleaveComma(getSplits(), printer, [&](const DimSplit &split) {
    printer.printKeywordOrString(split.dim.getValue());
    printer << ": ";
    llvm::interleave(
        split.axes.getAsRange<StringAttr>(),
        [&](StringAttr axis) { printer.printKeywordOrString(axis.getValue()); },
        [&] { printer << "+"; });
  });
  printer << ">";
}

LogicalResult LayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 ArrayRef<DimSplit> splits) {
  llvm::SmallDenseSet<StringAttr> dims;
  llvm::SmallDenseMap<StringAttr, StringAttr> axisOwner;
  for (const DimSplit &split : splits) {
    if (!dims.insert(split.dim).second)
      return emitError() << "dimension '" << split.dim.getValue()
                         << "' is split twice in one layout";
    if (!split.axes || split.axes.empty())
      return emitError() << "dimension '" << split.dim.getValue()
                         << "' lists no mesh axis";
    for (Attribute attr : split.axes) {
      auto axis = llvm::dyn_cast<StringAttr>(attr);
      if (!axis)
        return emitError() << "mesh axes must be strings, got " << attr;
      auto [it, inserted] = axisOwner.try_emplace(axis, split.dim);
      if (!inserted)
        return emitError() << "mesh axis '" << axis.getValue()
                           << "' splits both '" << it->second.getValue()
                           << "' and '" << split.dim.getValue()
                           << "'; a mesh axis can split one dimension of a "
                              "tensor at most";
    }
  }
  return success();
}

ArrayRef<StringAttr> LayoutAttr::getAxesFor(StringRef dim) const {
  for (const DimSplit &split : getSplits())
    if (split.dim.getValue() == dim) {
      ArrayRef<Attribute> axes = split.axes.getValue();
      return ArrayRef<StringAttr>(
          reinterpret_cast<const StringAttr *>(axes.data()), axes.size());
    }
  return {};
}

//===----------------------------------------------------------------------===//
// InitAttr
//===----------------------------------------------------------------------===//

/// Number of arguments each initializer takes.
static size_t initArity(InitKind kind) {
  switch (kind) {
  case InitKind::zeros:
  case InitKind::ones:
    return 0;
  case InitKind::constant:
    return 1;
  case InitKind::normal:
  case InitKind::uniform:
    return 2;
  }
  llvm_unreachable("unknown initializer");
}

/// Prints a double so that it parses back to the same value and lexes as an
/// MLIR float literal (digits, '.', digits, optional exponent).
static void printRoundTripDouble(AsmPrinter &printer, double value) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  std::string text(buffer, ec == std::errc() ? end : buffer);
  size_t exponent = text.find_first_of("eE");
  if (text.find('.') == std::string::npos)
    text.insert(exponent == std::string::npos ? text.size() : exponent, ".0");
  printer << text;
}

/// Parses `kind` or `kind(arg, ...)`: the body of `#mtf.init<...>` and the
/// initializer of `mtf.param`.
static InitAttr parseInitBody(AsmParser &parser) {
  std::string name;
  SMLoc nameLoc = parser.getCurrentLocation();
  if (parser.parseKeywordOrString(&name))
    return {};
  std::optional<InitKind> kind = symbolizeInitKind(name);
  if (!kind) {
    parser.emitError(nameLoc) << "unknown initializer '" << name
                              << "'; expected zeros, ones, constant, normal "
                                 "or uniform";
    return {};
  }
  SmallVector<double> args;
  if (succeeded(parser.parseOptionalLParen())) {
    if (parser.parseCommaSeparatedList([&]() -> ParseResult {
          double value;
          if (parser.parseFloat(value))
            return failure();
          args.push_back(value);
          return success();
        }) ||
        parser.parseRParen())
      return {};
  }
  return parser.getChecked<InitAttr>(
      parser.getContext(), *kind,
      DenseF64ArrayAttr::get(parser.getContext(), args));
}

static void printInitBody(AsmPrinter &printer, InitAttr init) {
  printer << stringifyInitKind(init.getKind());
  if (!init.getArgs().empty()) {
    printer << "(";
    llvm::interleaveComma(
        init.getArgs().asArrayRef(), printer,
        [&](double value) { printRoundTripDouble(printer, value); });
    printer << ")";
  }
}

Attribute InitAttr::parse(AsmParser &parser, Type) {
  if (parser.parseLess())
    return {};
  InitAttr init = parseInitBody(parser);
  if (!init || parser.parseGreater())
    return {};
  return init;
}

void InitAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printInitBody(printer, *this);
  printer << ">";
}

ParseResult parseInitializer(OpAsmParser &parser, InitAttr &init) {
  init = parseInitBody(parser);
  return success(static_cast<bool>(init));
}

void printInitializer(OpAsmPrinter &printer, Operation *, InitAttr init) {
  printInitBody(printer, init);
}

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               InitKind kind, DenseF64ArrayAttr argsAttr) {
  if (!argsAttr)
    return emitError() << "initializer arguments are missing";
  ArrayRef<double> args = argsAttr.asArrayRef();
  size_t arity = initArity(kind);
  if (args.size() != arity)
    return emitError() << "initializer '" << stringifyInitKind(kind)
                       << "' takes " << arity << " argument"
                       << (arity == 1 ? "" : "s") << ", got " << args.size();
  for (double value : args)
    if (!std::isfinite(value))
      return emitError() << "initializer '" << stringifyInitKind(kind)
                         << "' arguments must be finite, got " << value;
  if (kind == InitKind::normal && args[1] <= 0)
    return emitError() << "initializer 'normal' needs a positive standard "
                          "deviation, got "
                       << args[1];
  if (kind == InitKind::uniform && !(args[0] < args[1]))
    return emitError() << "initializer 'uniform' needs low < high, got low "
                       << args[0] << " and high " << args[1];
  return success();
}

} // namespace mtf
} // namespace mlir
