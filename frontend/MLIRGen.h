//===- MLIRGen.h - From .mtf syntax to the mtf dialect ----------*- C++ -*-===//
//
// MLIRGen turns statements into mtf operations one at a time, resolving names
// (dimensions, tensors, functions), inferring every result type by the
// language's rules (name-based broadcasting, einsum, reductions) and
// reporting each user error with a message that names the values involved.
// Functions are templates: a `def` is name-checked when it is defined and its
// body is emitted anew, with fresh parameters, for every call.
//
// The implementation is split by concern: MLIRGen.cpp (statements, scopes,
// functions), MLIRGenExpr.cpp (expressions, type rules), MLIRGenBuiltins.cpp
// (one case per builtin) and NameCheck.cpp (name lookup, and checking a
// function body when it is defined).
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_FRONTEND_MLIRGEN_H
#define MESHC_FRONTEND_MLIRGEN_H

#include "dialect/MtfDialect.h"
#include "frontend/AST.h"
#include "frontend/Diagnostics.h"
#include "frontend/Frontend.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

namespace meshc::frontend {

/// Emits the operations of one program.
class MLIRGen {
public:
  /// Most operations (plus function instances) one program may expand to.
  static constexpr uint64_t kMaxOperations = 1000000;
  /// Deepest expression nesting once function bodies are expanded into their
  /// call sites.
  static constexpr unsigned kMaxExpandedNesting = 1024;

  MLIRGen(const DiagnosticEmitter &diagnostics, mlir::mtf::ProgramOp program,
          const ImportOptions &options = {});

  /// Checks `stmt` and appends its operations to the program. Fails after
  /// reporting the first error.
  llvm::LogicalResult generate(StmtPtr stmt);
  /// Whether a `dim` statement declared ImportOptions::microbatchDim.
  bool declaredMicrobatchDim() const { return microbatchDimDeclared; }

private:
  /// What an expression evaluates to: a tensor, or a number that has no
  /// element type until it is combined with a tensor.
  struct Operand {
    mlir::Value value;
    double number = 0;
    /// Where the expression is reported.
    Loc loc;
    bool isNumber() const { return !value; }
  };

  /// A tensor name in scope. `value` is null while a function body is only
  /// being checked.
  struct Binding {
    mlir::Value value;
    Loc loc;
  };

  /// The tensor names visible at one point: the top level, or one function
  /// instance (or definition, while checking it).
  struct Scope {
    llvm::StringMap<Binding> tensors;
    /// The function whose body this is; null at the top level.
    const DefStmt *function = nullptr;
    /// Prefix of the names of the operations emitted here: "" or "block_0.".
    std::string prefix;
  };

  /// Dropout masks made so far; the next is called dropout_<nextDropout>.
  unsigned nextDropout = 0;

  struct DimInfo {
    int64_t size;
    Loc loc;
  };

  struct FunctionInfo {
    std::unique_ptr<DefStmt> def;
    /// Instances emitted so far; the next is called <name>_<nextInstance>.
    unsigned nextInstance = 0;
  };

  /// One active function instance, for the "called here" notes.
  struct CallFrame {
    Loc loc;
    std::string instance;
    llvm::StringRef function;
  };

  /// An error being built; when it goes away it gets one note per active
  /// call frame and is reported.
  class Error {
  public:
    Error(mlir::InFlightDiagnostic diag, const MLIRGen &gen)
        : diag(std::move(diag)), gen(gen) {}
    Error(Error &&) = default;
    ~Error();
    template <typename T> Error &operator<<(T &&value) {
      diag << std::forward<T>(value);
      return *this;
    }
    /// Attaches a note at `loc`; stream its message into the result.
    mlir::Diagnostic &note(Loc loc);
    operator llvm::LogicalResult() const { return llvm::failure(); }
    template <typename T> operator llvm::FailureOr<T>() const {
      return llvm::failure();
    }

  private:
    mlir::InFlightDiagnostic diag;
    const MLIRGen &gen;
  };

  Error error(Loc loc) const { return Error(diagnostics.error(loc), *this); }

  // Statements (MLIRGen.cpp).
  llvm::LogicalResult genDim(const DimStmt &stmt);
  llvm::LogicalResult genInput(const InputStmt &stmt);
  llvm::LogicalResult genParam(const ParamStmt &stmt, Scope &scope);
  llvm::LogicalResult genAssign(const AssignStmt &stmt, Scope &scope);
  llvm::LogicalResult genOutput(const OutputStmt &stmt);
  llvm::LogicalResult genTrain(const TrainStmt &stmt);
  llvm::LogicalResult genDef(std::unique_ptr<DefStmt> def);
  /// Reports a redefinition when `name` is already bound in `scope`.
  llvm::LogicalResult checkNewTensorName(const Ident &name,
                                         const Scope &scope) const;
  /// Fails once the program has grown past kMaxOperations.
  llvm::LogicalResult checkBudget(Loc loc) const;
  /// Emits one instance of `function` applied to `args`, named `instance`
  /// when given (else by the function's count, or the loop's), and records
  /// its name in lastInstance.
  llvm::FailureOr<mlir::Value> instantiate(FunctionInfo &function,
                                           llvm::ArrayRef<mlir::Value> args,
                                           Loc callLoc,
                                           llvm::StringRef instance = "");
  /// Names the operation defining `value` (when no statement named it yet).
  void nameValue(mlir::Value value, llvm::StringRef name);

  // Names (NameCheck.cpp).
  const DimInfo *lookupDim(const Ident &dim) const;
  const Binding *lookupTensor(const Ident &name, const Scope &scope) const;
  /// The user function called `callee` from `scope`, or null after an error.
  FunctionInfo *lookupFunction(const Ident &callee, const Scope &scope);
  llvm::FailureOr<mlir::Type> resolveElementType(const Ident &name) const;
  llvm::FailureOr<mlir::mtf::TensorType> resolveType(const TypeSpec &type);
  llvm::FailureOr<mlir::mtf::InitAttr> resolveInit(const InitSpec &init);
  /// Checks the names used by the body of `def` before it is stored.
  llvm::LogicalResult checkFunction(const DefStmt &def);
  llvm::LogicalResult checkExpr(const Expr &expr, const Scope &scope);
  /// Checks a call of a user function: it exists, takes that many
  /// arguments, and the arguments' names resolve.
  llvm::LogicalResult checkCall(const Ident &callee,
                                llvm::ArrayRef<ExprPtr> args,
                                const Scope &scope);

  // Expressions (MLIRGenExpr.cpp, MLIRGenBuiltins.cpp).
  llvm::FailureOr<Operand> genExpr(const Expr &expr, Scope &scope);
  /// Like genExpr, but the result must be a tensor.
  llvm::FailureOr<mlir::Value> genTensor(const Expr &expr, Scope &scope);
  /// The elementwise binary operations.
  enum class BinaryKind { Add, Sub, Mul, Div, Max, Min, Equal, Less };
  llvm::FailureOr<Operand> genBinary(BinaryKind kind, Loc loc, Operand lhs,
                                     Operand rhs);
  llvm::FailureOr<Operand> genBuiltin(const BuiltinExpr &call, Scope &scope);
  llvm::FailureOr<mlir::Value> genCall(const CallExpr &call, Scope &scope);
  llvm::FailureOr<mlir::Value> genRepeat(const RepeatExpr &repeat,
                                         Scope &scope);
  /// Fails, naming the function, unless one instance of a repeat's
  /// function turns `input` into a value `output` of the same type.
  llvm::LogicalResult checkRepeatResult(const RepeatExpr &repeat,
                                        const FunctionInfo &function,
                                        mlir::Value input, mlir::Value output);
  /// An outermost repeat as one mtf.loop of `count` iterations over `args`
  /// (ImportOptions::loops).
  llvm::FailureOr<mlir::Value> genLoop(const RepeatExpr &repeat,
                                       FunctionInfo &function,
                                       llvm::ArrayRef<mlir::Value> args,
                                       int64_t count);
  llvm::FailureOr<Operand> genCheckpoint(const CheckpointExpr &checkpoint,
                                         Scope &scope);
  llvm::FailureOr<mlir::Value> genEinsum(const BuiltinExpr &call,
                                         llvm::ArrayRef<mlir::Value> operands);
  llvm::FailureOr<mlir::Value> genReduce(const BuiltinExpr &call,
                                         mlir::Value input);
  llvm::FailureOr<mlir::Value> genSoftmaxCrossEntropy(const BuiltinExpr &call,
                                                      mlir::Value logits,
                                                      mlir::Value labels);
  llvm::FailureOr<mlir::Value> genRename(const BuiltinExpr &call,
                                         mlir::Value input);
  llvm::FailureOr<mlir::Value> genConstrain(const BuiltinExpr &call,
                                            mlir::Value input);
  /// slice, pad, shift and concat (MLIRGenWindow.cpp).
  llvm::FailureOr<Operand> genWindow(const BuiltinExpr &call, Scope &scope);
  /// mtf.window of `input` from `from` to `to` at `offset`.
  llvm::FailureOr<mlir::Value> genWindowOp(mlir::Value input, const Ident &from,
                                           const Ident &to, int64_t offset,
                                           Loc loc);
  /// The integer value of the number expression `expr`; `what` names it in
  /// the error otherwise.
  llvm::FailureOr<int64_t> integerArg(const Expr &expr, Scope &scope,
                                      llvm::StringRef what);
  /// Turns a number into an `mtf.constant` scalar of `elementType`.
  llvm::FailureOr<mlir::Value> materialize(const Operand &number,
                                           mlir::Type elementType);
  /// Fails unless `value` has a floating-point element type.
  llvm::LogicalResult requireFloat(mlir::Value value, llvm::StringRef user,
                                   Loc loc);
  /// Fails unless the tensor `value` has dimension `dim`; `action` says what
  /// needed it ("reduce over", "rename") and `what` names the tensor.
  llvm::LogicalResult requireDim(mlir::Value value, const Ident &dim,
                                 llvm::StringRef action,
                                 llvm::StringRef what = "the tensor");
  /// The tensor type with `dims` and `elementType`, or an error at `loc`
  /// when its size in bytes does not fit in 64 bits.
  llvm::FailureOr<mlir::mtf::TensorType>
  makeTensorType(llvm::ArrayRef<mlir::mtf::NamedDim> dims,
                 mlir::Type elementType, Loc loc) const;
  /// An error at `loc` when the size in bytes of `type` does not fit in 64
  /// bits.
  mlir::LogicalResult checkTensorBytes(mlir::mtf::TensorType type,
                                       Loc loc) const;

  /// Creates an operation at `loc`, counting it against kMaxOperations.
  template <typename OpT, typename... Args>
  OpT create(mlir::Location loc, Args &&...args) {
    ++operationCount;
    return OpT::create(builder, loc, std::forward<Args>(args)...);
  }
  mlir::Location location(Loc loc) const { return diagnostics.location(loc); }
  mlir::StringAttr stringAttr(llvm::StringRef text) const {
    return mlir::StringAttr::get(context, text);
  }
  /// The last op emitted so far (null when none): ops are only ever appended,
  /// so what follows it later is what was emitted since.
  mlir::Operation *lastEmitted() const {
    mlir::Block *block = builder.getInsertionBlock();
    return block->empty() ? nullptr : &block->back();
  }
  /// Sets the attribute `name` to the string `value` on every op emitted
  /// after `last` (a lastEmitted()): the recomputation group tags.
  void tagEmittedSince(mlir::Operation *last, llvm::StringRef name,
                       llvm::StringRef value);

  const DiagnosticEmitter &diagnostics;
  mlir::MLIRContext *context;
  mlir::OpBuilder builder;
  llvm::StringMap<DimInfo> dims;
  llvm::StringMap<FunctionInfo> functions;
  Scope globals;
  llvm::StringMap<Loc> outputs;
  std::optional<Loc> trainLoc;
  /// Values whose defining operation already carries a NameLoc.
  llvm::DenseSet<mlir::Value> namedValues;
  std::vector<CallFrame> callStack;
  const ImportOptions &options;
  bool microbatchDimDeclared = false;
  /// Repeats being expanded (their instances are on the call stack).
  unsigned activeRepeats = 0;
  /// The loop whose body is being emitted (ImportOptions::loops): its
  /// function's parameters become stacked parameters before it, and its
  /// function instances are named inside it.
  struct LoopFrame {
    std::string dim;
    int64_t count = 0;
    mlir::Block *body = nullptr;
    /// Where the stacked parameters go: the program, before the loop.
    mlir::Block *outside = nullptr;
    /// "block.": the prefix of the instances inside.
    std::string prefix;
    llvm::StringMap<unsigned> instances;
    llvm::SmallVector<mlir::Value> stacked;
  };
  LoopFrame *activeLoop = nullptr;
  /// The loop dims named so far (auto-named ones included), by name.
  llvm::StringMap<int64_t> loopDims;
  /// The name instantiate() gave its last instance.
  std::string lastInstance;
  /// `checkpoint(...)` expressions emitted so far; the next one's ops are
  /// tagged checkpoint_<nextCheckpoint>.
  unsigned nextCheckpoint = 0;
  uint64_t operationCount = 0;
  /// Current recursion depth of genExpr, across function bodies.
  unsigned expansionDepth = 0;
};

/// `f32[batch, hidden]`: a tensor type the way .mtf writes it.
std::string formatType(mlir::mtf::TensorType type);

/// `f32`: an element type the way .mtf writes it (diagnostics quote types).
std::string formatElementType(mlir::Type type);

} // namespace meshc::frontend

#endif // MESHC_FRONTEND_MLIRGEN_H
