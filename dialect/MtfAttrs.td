//===- MtfAttrs.td - mtf dialect attributes ----------------*- tablegen -*-===//
//
// Mesh, tensor layout and parameter initializer attributes.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_DIALECT_MTFATTRS_TD
#define MESHC_DIALECT_MTFATTRS_TD

include "dialect/MtfTypes.td"

def Mtf_MeshAttr : AttrDef<Mtf_Dialect, "Mesh"> {
  let mnemonic = "mesh";
  let summary = "a named, n-dimensional grid of devices";
  let description = [{
    Mesh axes in order, major to minor; device ids enumerate the grid in
    row-major order. Mesh-TensorFlow's `b:4;m:2` is:

    ```mlir
    #mtf.mesh<b=4, m=2>
    ```
  }];
  let parameters = (ins Mtf_NamedDimParameter:$axes);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Number of devices (product of the axis sizes).
    int64_t getNumDevices() const;
    /// Position of the axis called `name`, if the mesh has it.
    std::optional<unsigned> getAxisIndex(::llvm::StringRef name) const;
  }];
}

def Mtf_LayoutAttr : AttrDef<Mtf_Dialect, "Layout"> {
  let mnemonic = "layout";
  let summary = "which dimensions of a tensor are split over which mesh axes";
  let description = [{
    A list of `dim: axis` entries; a dimension split over several mesh axes
    lists them major to minor joined by `+`. Dimensions not listed are whole
    on every device (replicated over the mesh axes no dimension uses).

    ```mlir
    #mtf.layout<batch: b, hidden: m>
    #mtf.layout<batch: b+m>
    #mtf.layout<>
    ```
  }];
  let parameters = (ins ArrayRefParameter<"::mlir::mtf::DimSplit", "splits">:$splits);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The mesh axes `dim` is split over (empty if it is whole).
    ::llvm::ArrayRef<::mlir::StringAttr> getAxesFor(::llvm::StringRef dim) const;
  }];
}

def Mtf_InitKind : I32EnumAttr<"InitKind", "parameter initializer", [
    I32EnumAttrCase<"zeros", 0>, I32EnumAttrCase<"ones", 1>,
    I32EnumAttrCase<"constant", 2>, I32EnumAttrCase<"normal", 3>,
    I32EnumAttrCase<"uniform", 4>]> {
  let cppNamespace = "::mlir::mtf";
  let genSpecializedAttr = 0;
}

def Mtf_InitAttr : AttrDef<Mtf_Dialect, "Init"> {
  let mnemonic = "init";
  let summary = "how a parameter is initialised";
  let description = [{
    `zeros`, `ones`, `constant(value)`, `normal(mean, stddev)` or
    `uniform(low, high)`.

    ```mlir
    #mtf.init<normal(0.0, 0.05)>
    #mtf.init<zeros>
    ```
  }];
  let parameters = (ins EnumParameter<Mtf_InitKind>:$kind,
                        "::mlir::DenseF64ArrayAttr":$args);
  let builders = [AttrBuilder<(ins "InitKind":$kind, "::llvm::ArrayRef<double>":$args), [{
    return $_get($_ctxt, kind, ::mlir::DenseF64ArrayAttr::get($_ctxt, args));
  }]>];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // MESHC_DIALECT_MTFATTRS_TD
