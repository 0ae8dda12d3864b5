//===- Builtins.cpp - The builtin functions of .mtf -----------------------===//
//
// The builtin table itself, expanded from Builtins.def.
//
//===----------------------------------------------------------------------===//

#include "frontend/Builtins.h"

using namespace meshc::frontend;

namespace {
constexpr ArgForm kTensor[] = {ArgForm::Tensor};
constexpr ArgForm kTensorTensor[] = {ArgForm::Tensor, ArgForm::Tensor};
constexpr ArgForm kCast[] = {ArgForm::Tensor, ArgForm::ElementType};
constexpr ArgForm kReduce[] = {ArgForm::Tensor, ArgForm::DimList};
constexpr ArgForm kSoftmax[] = {ArgForm::Tensor, ArgForm::DimName};
constexpr ArgForm kDim[] = {ArgForm::DimName};
constexpr ArgForm kSlice[] = {ArgForm::Tensor, ArgForm::DimName,
                              ArgForm::Tensor, ArgForm::DimName};
constexpr ArgForm kShift[] = {ArgForm::Tensor, ArgForm::DimName,
                              ArgForm::Tensor};
constexpr ArgForm kConcat[] = {ArgForm::Tensor, ArgForm::DimName,
                               ArgForm::Tensor, ArgForm::DimName,
                               ArgForm::DimName};
constexpr ArgForm kCrossEntropy[] = {ArgForm::Tensor, ArgForm::Tensor,
                                     ArgForm::DimName};
constexpr ArgForm kRename[] = {ArgForm::Tensor, ArgForm::DimName,
                               ArgForm::DimName};
constexpr ArgForm kConstrain[] = {ArgForm::Tensor, ArgForm::Split};
constexpr unsigned kVariadic = BuiltinInfo::kVariadic;

const BuiltinInfo kBuiltins[] = {
#define MESHC_BUILTIN(E, NAME, FORMS, MIN, MAX, OUTPUT_DIMS, USAGE)            \
  {Builtin::E, NAME, FORMS, MIN, MAX, OUTPUT_DIMS, USAGE},
#include "frontend/Builtins.def"
};
} // namespace

const BuiltinInfo *meshc::frontend::lookupBuiltin(llvm::StringRef name) {
  for (const BuiltinInfo &info : kBuiltins)
    if (info.name == name)
      return &info;
  return nullptr;
}

llvm::ArrayRef<BuiltinInfo> meshc::frontend::getBuiltins() { return kBuiltins; }
