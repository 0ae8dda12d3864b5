//===- Builtins.cpp - The builtin functions of .mtf -----------------------===//
//
// The builtin table itself.
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
    {Builtin::Einsum, "einsum", kTensor, 1, kVariadic, true,
     "einsum(a, b -> [d1, d2])"},
    {Builtin::Relu, "relu", kTensor, 1, 1, false, "relu(x)"},
    {Builtin::Gelu, "gelu", kTensor, 1, 1, false, "gelu(x)"},
    {Builtin::Exp, "exp", kTensor, 1, 1, false, "exp(x)"},
    {Builtin::Log, "log", kTensor, 1, 1, false, "log(x)"},
    {Builtin::Tanh, "tanh", kTensor, 1, 1, false, "tanh(x)"},
    {Builtin::Sqrt, "sqrt", kTensor, 1, 1, false, "sqrt(x)"},
    {Builtin::Rsqrt, "rsqrt", kTensor, 1, 1, false, "rsqrt(x)"},
    {Builtin::Cast, "cast", kCast, 2, 2, false, "cast(x, bf16)"},
    {Builtin::Sum, "sum", kReduce, 1, 2, false, "sum(x) or sum(x, [d1, d2])"},
    {Builtin::Mean, "mean", kReduce, 1, 2, false,
     "mean(x) or mean(x, [d1, d2])"},
    {Builtin::Max, "max", kReduce, 1, 2, false, "max(x) or max(x, [d1, d2])"},
    {Builtin::Maximum, "maximum", kTensorTensor, 2, 2, false, "maximum(a, b)"},
    {Builtin::Minimum, "minimum", kTensorTensor, 2, 2, false, "minimum(a, b)"},
    {Builtin::Softmax, "softmax", kSoftmax, 2, 2, false, "softmax(x, dim)"},
    {Builtin::SoftmaxCrossEntropy, "softmax_cross_entropy", kCrossEntropy, 3, 3,
     false, "softmax_cross_entropy(logits, labels, dim)"},
    {Builtin::Rename, "rename", kRename, 3, 3, false, "rename(x, old, new)"},
    {Builtin::Constrain, "constrain", kConstrain, 1, kVariadic, false,
     "constrain(x, batch: b, d_ff: m+n)"},
    {Builtin::OneHot, "one_hot", kSoftmax, 2, 2, false, "one_hot(ids, dim)"},
    {Builtin::Argmax, "argmax", kSoftmax, 2, 2, false, "argmax(x, dim)"},
    {Builtin::Equal, "equal", kTensorTensor, 2, 2, false, "equal(a, b)"},
    {Builtin::Dropout, "dropout", kTensorTensor, 2, 2, false,
     "dropout(x, 0.1)"},
    {Builtin::Less, "less", kTensorTensor, 2, 2, false, "less(a, b)"},
    {Builtin::Range, "range", kDim, 1, 1, false, "range(dim)"},
    {Builtin::Cumsum, "cumsum", kSoftmax, 2, 2, false, "cumsum(x, dim)"},
    {Builtin::Slice, "slice", kSlice, 4, 4, false,
     "slice(x, dim, begin, new_dim)"},
    {Builtin::Pad, "pad", kSlice, 4, 4, false, "pad(x, dim, before, new_dim)"},
    {Builtin::Shift, "shift", kShift, 3, 3, false, "shift(x, dim, 1)"},
    {Builtin::TopK, "top_k", kShift, 3, 3, false, "top_k(x, dim, 2)"},
    {Builtin::Concat, "concat", kConcat, 5, 5, false,
     "concat(a, dim_a, b, dim_b, new_dim)"},
};
} // namespace

const BuiltinInfo *meshc::frontend::lookupBuiltin(llvm::StringRef name) {
  for (const BuiltinInfo &info : kBuiltins)
    if (info.name == name)
      return &info;
  return nullptr;
}

llvm::ArrayRef<BuiltinInfo> meshc::frontend::getBuiltins() { return kBuiltins; }
