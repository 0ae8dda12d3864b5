//===- MtfTypes.td - mtf dialect types ---------------------*- tablegen -*-===//
//
// The named-dimension tensor type.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_DIALECT_MTFTYPES_TD
#define MESHC_DIALECT_MTFTYPES_TD

include "dialect/MtfBase.td"

def Mtf_NamedDimParameter
    : ArrayRefParameter<"::mlir::mtf::NamedDim", "named dimensions">;

def Mtf_TensorType : TypeDef<Mtf_Dialect, "Tensor"> {
  let mnemonic = "tensor";
  let summary = "a tensor whose dimensions have names";
  let description = [{
    An ordered list of `name=size` dimensions and an element type (`f32`,
    `bf16`, `f16` or `i32`). Names are unique within one tensor; sizes are
    positive. A scalar has no dimensions.

    ```mlir
    !mtf.tensor<[batch=256, hidden=1024], f32>
    !mtf.tensor<[], f32>
    ```
  }];
  let parameters = (ins Mtf_NamedDimParameter:$dims, "::mlir::Type":$elementType);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Number of dimensions.
    unsigned getRank() const { return getDims().size(); }
    /// Position of the dimension called `name`, if the tensor has it.
    std::optional<unsigned> getDimIndex(::llvm::StringRef name) const;
    /// Whether the tensor has a dimension called `name`.
    bool hasDim(::llvm::StringRef name) const { return getDimIndex(name).has_value(); }
    /// The dimensions' names, in order (what EinsumOp's builder takes).
    ::llvm::SmallVector<::llvm::StringRef> getDimNames() const;
    /// Product of all dimension sizes (1 for a scalar).
    int64_t getNumElements() const;
    /// Size in bytes of one element.
    int64_t getElementBytes() const;
    /// The same dimensions with another element type.
    TensorType withElementType(::mlir::Type elementType) const;
  }];
}

// Operand/result constraints. They keep the C++ type `::mlir::Type` on
// purpose, so that ODS prints types in full (`!mtf.tensor<...>`) in op
// assembly instead of the stripped `<...>`.
def Mtf_AnyTensor : Type<CPred<"::llvm::isa<::mlir::mtf::TensorType>($_self)">,
                         "named-dimension tensor">;

def Mtf_FloatTensor : Type<
    And<[CPred<"::llvm::isa<::mlir::mtf::TensorType>($_self)">,
         CPred<"::llvm::isa<::mlir::FloatType>("
               "::llvm::cast<::mlir::mtf::TensorType>($_self).getElementType())">]>,
    "named-dimension tensor of floating-point values">;

def Mtf_IntTensor : Type<
    And<[CPred<"::llvm::isa<::mlir::mtf::TensorType>($_self)">,
         CPred<"::llvm::cast<::mlir::mtf::TensorType>($_self)"
               ".getElementType().isSignlessInteger(32)">]>,
    "named-dimension tensor of i32 values">;

#endif // MESHC_DIALECT_MTFTYPES_TD
