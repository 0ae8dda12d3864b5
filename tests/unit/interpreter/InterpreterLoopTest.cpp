//===- InterpreterLoopTest.cpp - mtf.loop in the reference interpreter ----===//
//
// A loop runs its body once per position of its dim: carried values flow
// from one iteration to the next, each iteration reads its slice of the
// stacked operands, the yielded values after the carried ones are stacked,
// and a dropout mask in the body is drawn per iteration ("name@i"). Each
// program is compared with the same ops written out per layer, on the same
// parameter values; and a model imported with its repeats as loops
// (ImportOptions::loops) computes what its unrolled import does.
//
//===----------------------------------------------------------------------===//

#include "InterpreterTestSupport.h"

#include "frontend/Frontend.h"

#include "llvm/Support/MemoryBuffer.h"

namespace meshc::interp {
namespace {

using LoopTest = InterpreterTest;

/// Three layers h = tanh(einsum(h, w[l]) renamed to d) * m * mask, looped;
/// each layer's input is stacked into "saved".
constexpr const char *kLooped = R"mlir(
mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[b=2, d=3], f32>
  %m = mtf.input "m" : !mtf.tensor<[d=3], f32>
  %w = mtf.param "w" normal(0.0, 0.5) : !mtf.tensor<[layers=3, d=3, e=3], f32>
  %y:2 = mtf.loop "layers" 3 carry(%x : !mtf.tensor<[b=2, d=3], f32>)
      stacked(%w : !mtf.tensor<[layers=3, d=3, e=3], f32>)
      invariant(%m : !mtf.tensor<[d=3], f32>)
      -> (!mtf.tensor<[b=2, d=3], f32>) stacked(!mtf.tensor<[layers=3, b=2, d=3], f32>) {
  ^bb0(%h: !mtf.tensor<[b=2, d=3], f32>, %wi: !mtf.tensor<[d=3, e=3], f32>, %mi: !mtf.tensor<[d=3], f32>):
    %t = mtf.einsum %h, %wi : !mtf.tensor<[b=2, d=3], f32>, !mtf.tensor<[d=3, e=3], f32> -> !mtf.tensor<[b=2, e=3], f32>
    %n = mtf.rename %t "e" to "d" : !mtf.tensor<[b=2, e=3], f32> -> !mtf.tensor<[b=2, d=3], f32>
    %a = mtf.tanh %n : !mtf.tensor<[b=2, d=3], f32>
    %s = mtf.mul %a, %mi : !mtf.tensor<[b=2, d=3], f32>, !mtf.tensor<[d=3], f32> -> !mtf.tensor<[b=2, d=3], f32>
    %k = mtf.dropout_mask "drop" rate 1.000000e-01 : !mtf.tensor<[b=2, d=3], f32>
    %o = mtf.mul %s, %k : !mtf.tensor<[b=2, d=3], f32>, !mtf.tensor<[b=2, d=3], f32> -> !mtf.tensor<[b=2, d=3], f32>
    mtf.yield %o, %h : !mtf.tensor<[b=2, d=3], f32>, !mtf.tensor<[b=2, d=3], f32>
  }
  mtf.output "y" %y#0 : !mtf.tensor<[b=2, d=3], f32>
  mtf.output "saved" %y#1 : !mtf.tensor<[layers=3, b=2, d=3], f32>
}
)mlir";

/// One layer of kLooped written out: weights w<L>, mask drop@<L>.
std::string layer(int l, const std::string &in, const std::string &out) {
  std::string L = std::to_string(l);
  return R"(
  %w)" + L +
         R"( = mtf.param "w)" + L +
         R"(" zeros : !mtf.tensor<[d=3, e=3], f32>
  %t)" + L +
         " = mtf.einsum " + in + ", %w" + L +
         R"( : !mtf.tensor<[b=2, d=3], f32>, !mtf.tensor<[d=3, e=3], f32> -> !mtf.tensor<[b=2, e=3], f32>
  %n)" + L +
         " = mtf.rename %t" + L +
         R"( "e" to "d" : !mtf.tensor<[b=2, e=3], f32> -> !mtf.tensor<[b=2, d=3], f32>
  %a)" + L +
         " = mtf.tanh %n" + L + R"( : !mtf.tensor<[b=2, d=3], f32>
  %s)" + L +
         " = mtf.mul %a" + L +
         R"(, %m : !mtf.tensor<[b=2, d=3], f32>, !mtf.tensor<[d=3], f32> -> !mtf.tensor<[b=2, d=3], f32>
  %k)" + L +
         R"( = mtf.dropout_mask "drop@)" + L +
         R"(" rate 1.000000e-01 : !mtf.tensor<[b=2, d=3], f32>
  )" + out +
         " = mtf.mul %s" + L + ", %k" + L +
         R"( : !mtf.tensor<[b=2, d=3], f32>, !mtf.tensor<[b=2, d=3], f32> -> !mtf.tensor<[b=2, d=3], f32>
  mtf.output "saved)" +
         L + "\" " + in + R"( : !mtf.tensor<[b=2, d=3], f32>
)";
}

std::string unrolled() {
  return R"(mtf.program @p {
  %x = mtf.input "x" : !mtf.tensor<[b=2, d=3], f32>
  %m = mtf.input "m" : !mtf.tensor<[d=3], f32>
)" + layer(0, "%x", "%o0") +
         layer(1, "%o0", "%o1") + layer(2, "%o1", "%o2") +
         R"(  mtf.output "y" %o2 : !mtf.tensor<[b=2, d=3], f32>
}
)";
}

TEST_F(LoopTest, RunsLikeItsLayersWrittenOut) {
  Options looped;
  std::vector<double> weights;
  for (int i = 0; i < 27; ++i)
    weights.push_back(0.1 * (i % 7) - 0.3);
  looped.params["w"] = makeTensor({"layers", "d", "e"}, {3, 3, 3}, weights);
  Options written;
  for (int l = 0; l < 3; ++l)
    written.params["w" + std::to_string(l)] =
        makeTensor({"d", "e"}, {3, 3},
                   std::vector<double>(weights.begin() + 9 * l,
                                       weights.begin() + 9 * (l + 1)));
  std::map<std::string, Tensor> loop = run(kLooped, looped);
  std::map<std::string, Tensor> flat = run(unrolled(), written);
  ASSERT_EQ(loop.count("y"), 1u);
  EXPECT_EQ(loop["y"].data, flat["y"].data);
  ASSERT_EQ(loop["saved"].shape, (std::vector<int64_t>{3, 2, 3}));
  for (int l = 0; l < 3; ++l) {
    std::vector<double> slice(loop["saved"].data.begin() + 6 * l,
                              loop["saved"].data.begin() + 6 * (l + 1));
    EXPECT_EQ(slice, flat["saved" + std::to_string(l)].data) << l;
  }
  // The layers differ, and so do their masks: a loop that reused slice 0
  // or one mask would fail the comparison above.
  EXPECT_NE(flat["saved1"].data, flat["saved2"].data);
  EXPECT_NE(flat["y"].data, std::vector<double>(6, 0.0));
}

/// A model whose parameters start equal in every layer (constant
/// initializers), so its loop and its unrolled instances hold the same
/// values: a nested repeat (unrolled inside the loop body), a checkpoint,
/// extra arguments and a repeat counted by a named dim.
constexpr const char *kModel = R"mtf(
dim batch = 4
dim d = 3
dim layers = 3
input x : f32[batch, d]
input m : f32[d]
def scale(v) {
  param s : f32[d] = constant(0.9)
  return v * s
}
def block(v, mask) {
  param bias : f32[d] = constant(0.1)
  h = tanh(repeat 2 scale(v) * mask + bias)
  return checkpoint(h + scale(v))
}
y = repeat layers block(x, m)
z = repeat 2 block(y, m)
output y, z
)mtf";

std::map<std::string, Tensor> importAndRun(mlir::MLIRContext &context,
                                           bool loops) {
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(kModel, "model.mtf"), llvm::SMLoc());
  frontend::ImportOptions options;
  options.loops = loops;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      frontend::importMtf(sourceMgr, context, options);
  if (!module) {
    ADD_FAILURE() << "does not import (loops: " << loops << ")";
    return {};
  }
  auto program = *module->getOps<mlir::mtf::ProgramOp>().begin();
  int loopsSeen = 0;
  program.walk([&](mlir::mtf::LoopOp) { ++loopsSeen; });
  EXPECT_EQ(loopsSeen, loops ? 2 : 0);
  mlir::FailureOr<std::map<std::string, Tensor>> outputs =
      interpret(program, {});
  if (mlir::failed(outputs)) {
    ADD_FAILURE() << "does not run (loops: " << loops << ")";
    return {};
  }
  return *outputs;
}

TEST_F(LoopTest, AModelsLoopsComputeWhatItsUnrolledRepeatsDo) {
  std::map<std::string, Tensor> looped = importAndRun(context, true);
  std::map<std::string, Tensor> unrolled = importAndRun(context, false);
  ASSERT_EQ(looped.size(), 2u);
  for (const char *name : {"y", "z"}) {
    EXPECT_EQ(looped[name].shape, unrolled[name].shape) << name;
    for (size_t i = 0; i < unrolled[name].data.size(); ++i)
      EXPECT_NEAR(looped[name].data[i], unrolled[name].data[i], 1e-12)
          << name << " element " << i;
  }
  EXPECT_NE(looped["y"].data, looped["z"].data);
}

} // namespace
} // namespace meshc::interp
