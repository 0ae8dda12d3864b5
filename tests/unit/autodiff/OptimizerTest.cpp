//===- OptimizerTest.cpp - the update step against its formulas ----------===//
//
// loss = sum(p * p) / 2 has gradient p, so every optimizer's trajectory can
// be written out by hand in double. Three training runs in the reference
// interpreter must reproduce it, slots included.
//
//===----------------------------------------------------------------------===//

#include "AutodiffTestSupport.h"

#include <cmath>
#include <functional>

using meshc::testing::compile;

namespace {

const std::vector<double> kStart = {1.5, -0.25, 3.0};
constexpr int kRuns = 3;

std::string model(const std::string &optimizer) {
  return "dim a = 3\n"
         "param p : f32[a] = normal(0, 1)\n"
         "loss = sum(p * p) / 2\n"
         "output loss\n"
         "train loss with " +
         optimizer + "\n";
}

/// Runs `optimizer` for kRuns steps from kStart and returns the final
/// parameters and slots.
std::map<std::string, meshc::interp::Tensor>
train(const std::string &optimizer) {
  auto compiled = compile(model(optimizer), /*outputGrads=*/false);
  EXPECT_TRUE(compiled->module) << compiled->diagnostics;
  if (!compiled->module)
    return {};
  meshc::interp::Options options;
  options.steps = kRuns;
  meshc::interp::Tensor start;
  start.dims = {"a"};
  start.shape = {3};
  start.data = kStart;
  options.params["p"] = start;
  auto result = meshc::interp::interpretRuns(compiled->program(), options);
  EXPECT_TRUE(succeeded(result)) << compiled->diagnostics;
  return succeeded(result) ? result->params
                           : std::map<std::string, meshc::interp::Tensor>();
}

/// Runs the same steps in plain double: `step(p, g, t)` updates p in place
/// from gradient g at update number t (0-based).
std::vector<double> byHand(
    const std::function<void(std::vector<double> &, std::vector<double>, int)>
        &step) {
  std::vector<double> p = kStart;
  for (int t = 0; t < kRuns; ++t)
    step(p, p, t);
  return p;
}

void expectClose(const std::vector<double> &got,
                 const std::vector<double> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-9 * std::max(1.0, std::fabs(want[i])))
        << "element " << i;
}

TEST(Optimizer, Sgd) {
  auto params = train("sgd(lr = 0.1)");
  expectClose(params["p"].data,
              byHand([](std::vector<double> &p, std::vector<double> g, int) {
                for (size_t i = 0; i < p.size(); ++i)
                  p[i] -= 0.1 * g[i];
              }));
  EXPECT_EQ(params["opt/step"].data, std::vector<double>{kRuns});
}

TEST(Optimizer, Momentum) {
  auto params = train("momentum(lr = 0.1, momentum = 0.8)");
  std::vector<double> v(3, 0);
  expectClose(params["p"].data,
              byHand([&](std::vector<double> &p, std::vector<double> g, int) {
                for (size_t i = 0; i < p.size(); ++i) {
                  v[i] = 0.8 * v[i] + g[i];
                  p[i] -= 0.1 * v[i];
                }
              }));
  expectClose(params["p/momentum"].data, v);
}

std::function<void(std::vector<double> &, std::vector<double>, int)>
adam(std::vector<double> &m, std::vector<double> &v, double lr, double decay) {
  return [&m, &v, lr, decay](std::vector<double> &p, std::vector<double> g,
                             int t) {
    for (size_t i = 0; i < p.size(); ++i) {
      m[i] = 0.9 * m[i] + 0.1 * g[i];
      v[i] = 0.99 * v[i] + 0.01 * g[i] * g[i];
      double mHat = m[i] / (1 - std::pow(0.9, t + 1));
      double vHat = v[i] / (1 - std::pow(0.99, t + 1));
      p[i] -= lr * (mHat / (std::sqrt(vHat) + 1e-6) + decay * p[i]);
    }
  };
}

TEST(Optimizer, Adam) {
  auto params = train("adam(lr = 0.01, beta1 = 0.9, beta2 = 0.99, eps = 1e-6)");
  std::vector<double> m(3, 0), v(3, 0);
  expectClose(params["p"].data, byHand(adam(m, v, 0.01, 0)));
  expectClose(params["p/adam_m"].data, m);
  expectClose(params["p/adam_v"].data, v);
}

TEST(Optimizer, AdamWDecaysDecoupled) {
  auto params = train("adamw(lr = 0.01, beta1 = 0.9, beta2 = 0.99, eps = "
                      "1e-6, weight_decay = 0.1)");
  std::vector<double> m(3, 0), v(3, 0);
  expectClose(params["p"].data, byHand(adam(m, v, 0.01, 0.1)));
}

TEST(Optimizer, ClipByGlobalNorm) {
  // |p| starts at 3.36 > 1: every step is scaled to norm 1.
  auto params = train("sgd(lr = 0.1, clip_norm = 1)");
  expectClose(params["p"].data,
              byHand([](std::vector<double> &p, std::vector<double> g, int) {
                double norm = 0;
                for (double x : g)
                  norm += x * x;
                norm = std::sqrt(norm);
                double scale = 1.0 / std::max(norm, 1.0);
                for (size_t i = 0; i < p.size(); ++i)
                  p[i] -= 0.1 * g[i] * scale;
              }));
}

TEST(Optimizer, WarmupThenLinearDecay) {
  auto params = train("sgd(lr = 0.1, warmup_steps = 2, decay_steps = 4, "
                      "min_lr_ratio = 0.6)");
  expectClose(params["p"].data,
              byHand([](std::vector<double> &p, std::vector<double> g, int t) {
                double next = t + 1;
                double lr = 0.1 * std::min(1.0, next / 2) *
                            std::max(0.6, 1 - std::max(0.0, next - 2) / 4);
                for (size_t i = 0; i < p.size(); ++i)
                  p[i] -= lr * g[i];
              }));
}

TEST(Optimizer, SlotsHaveTheParametersDims) {
  auto compiled = compile(model("adam(lr = 0.01)"), false);
  ASSERT_TRUE(compiled->module) << compiled->diagnostics;
  mlir::Block &body = compiled->program().getBodyBlock();
  mlir::Type paramType;
  for (auto param : body.getOps<mlir::mtf::ParamOp>())
    if (param.getName() == "p")
      paramType = param.getType();
  int slots = 0;
  for (auto param : body.getOps<mlir::mtf::ParamOp>()) {
    if (!param.getSlot())
      continue;
    ++slots;
    if (param.getName() != "opt/step") {
      EXPECT_EQ(param.getType(), paramType) << param.getName().str();
    }
  }
  EXPECT_EQ(slots, 3); // opt/step, p/adam_m, p/adam_v
}

TEST(Optimizer, HyperparameterOutOfRangeIsAnError) {
  auto compiled = compile(model("adam(lr = 0.01, beta1 = 1.5)"), false);
  EXPECT_FALSE(compiled->module);
  EXPECT_NE(compiled->diagnostics.find(
                "hyper-parameter 'beta1' must be >= 0 and < 1, got 1.5"),
            std::string::npos)
      << compiled->diagnostics;
}

} // namespace
