//===- AttentionTest.cpp - Fused attention against formulas ---------------===//
//
// attention and attention_grad on the backend under test against the
// formulas of docs/mprog.md#attention in double, with the whole softmax of
// each row at once (not blockwise): charlm's geometry with its causal mask,
// dims in unusual orders with several group, query, head and value dims, a
// bias over some of them only, no head dim, sizes that are no multiple of a
// block and rows longer than several blocks of keys, rows without keys, the
// 16-bit float types, and the gradients also against finite differences of
// the forward formula and end to end from the backend's own forward pass.
//
//===----------------------------------------------------------------------===//

#include "Conformance.h"

#include <algorithm>
#include <cmath>

using namespace meshc::runtime;
using namespace meshc::runtime::testing;
using nlohmann::json;

namespace {

using Sizes = std::map<std::string, int64_t>;
using Names = std::vector<std::string>;

/// An attention step's dims: the operands' dim orders, the key and head
/// dims, the scale and the sizes.
struct Geometry {
  Sizes sizes;
  Names q, k, v, o, lse, bias;
  bool hasBias = false;
  std::string key;
  Names head;
  double scale = 1;

  int64_t count(const Names &dims) const {
    int64_t total = 1;
    for (const std::string &dim : dims)
      total *= sizes.at(dim);
    return total;
  }
  static bool has(const Names &dims, const std::string &name) {
    return std::find(dims.begin(), dims.end(), name) != dims.end();
  }
  /// The roles, as docs/mprog.md derives them.
  Names group() const {
    Names dims;
    for (const std::string &d : k)
      if (d != key && !has(head, d))
        dims.push_back(d);
    return dims;
  }
  Names query() const {
    Names dims, g = group();
    for (const std::string &d : q)
      if (!has(g, d) && !has(head, d))
        dims.push_back(d);
    return dims;
  }
  Names value() const {
    Names dims, g = group();
    for (const std::string &d : v)
      if (!has(g, d) && d != key)
        dims.push_back(d);
    return dims;
  }
  /// Entry i: the offset in a tensor of dims `tensor` of the i-th index
  /// (row-major) of `role`'s dims; 0 along a role dim the tensor lacks.
  std::vector<int64_t> offsets(const Names &tensor, const Names &role) const {
    std::map<std::string, int64_t> strides;
    int64_t stride = 1;
    for (size_t d = tensor.size(); d-- > 0;) {
      strides[tensor[d]] = stride;
      stride *= sizes.at(tensor[d]);
    }
    std::vector<int64_t> table;
    for (int64_t i = 0; i < count(role); ++i) {
      int64_t rest = i, offset = 0;
      for (size_t d = role.size(); d-- > 0;) {
        int64_t coordinate = rest % sizes.at(role[d]);
        rest /= sizes.at(role[d]);
        if (strides.count(role[d]))
          offset += coordinate * strides[role[d]];
      }
      table.push_back(offset);
    }
    return table;
  }

  json step(const std::vector<int64_t> &in, int64_t out, int64_t lseBuf) const {
    json inputs = {operand(in[0], q), operand(in[1], k), operand(in[2], v)};
    if (hasBias)
      inputs.push_back(operand(in[3], bias));
    return {{"op", "attention"},
            {"in", inputs},
            {"out", operand(out, o)},
            {"lse", operand(lseBuf, lse)},
            {"key", key},
            {"head", head},
            {"scale", scale},
            {"sizes", sizes}};
  }
  json gradStep(const std::vector<int64_t> &in, int64_t dq, int64_t dk,
                int64_t dv) const {
    json inputs = {operand(in[0], q), operand(in[1], k),   operand(in[2], v),
                   operand(in[3], o), operand(in[4], lse), operand(in[5], o)};
    if (hasBias)
      inputs.push_back(operand(in[6], bias));
    return {{"op", "attention_grad"}, {"in", inputs},
            {"out", operand(dq, q)},  {"dk", operand(dk, k)},
            {"dv", operand(dv, v)},   {"key", key},
            {"head", head},           {"scale", scale},
            {"sizes", sizes},         {"phase", "backward"}};
  }
};

/// The operands' values (as stored), by name.
struct Values {
  std::vector<float> q, k, v, bias, o, lse, dout;
};

/// The tables of every operand by role.
struct Tables {
  std::vector<int64_t> qG, qM, qD, kG, kN, kD, vG, vN, vE, bG, bM, bN, oG, oM,
      oE, lG, lM;
  int64_t G, M, N, D, E;
  explicit Tables(const Geometry &geo) {
    Names g = geo.group(), m = geo.query(), n = {geo.key}, d = geo.head,
          e = geo.value();
    qG = geo.offsets(geo.q, g), qM = geo.offsets(geo.q, m),
    qD = geo.offsets(geo.q, d);
    kG = geo.offsets(geo.k, g), kN = geo.offsets(geo.k, n),
    kD = geo.offsets(geo.k, d);
    vG = geo.offsets(geo.v, g), vN = geo.offsets(geo.v, n),
    vE = geo.offsets(geo.v, e);
    bG = geo.offsets(geo.bias, g), bM = geo.offsets(geo.bias, m),
    bN = geo.offsets(geo.bias, n);
    oG = geo.offsets(geo.o, g), oM = geo.offsets(geo.o, m),
    oE = geo.offsets(geo.o, e);
    lG = geo.offsets(geo.lse, g), lM = geo.offsets(geo.lse, m);
    G = geo.count(g), M = geo.count(m), N = geo.count(n), D = geo.count(d),
    E = geo.count(e);
  }
};

/// The scores of row (g, m): scale q·k + bias, in double.
std::vector<double> scoresOf(const Geometry &geo, const Tables &t,
                             const Values &x, int64_t g, int64_t m) {
  std::vector<double> s(t.N);
  for (int64_t n = 0; n < t.N; ++n) {
    double dot = 0;
    for (int64_t d = 0; d < t.D; ++d)
      dot += double(x.q[t.qG[g] + t.qM[m] + t.qD[d]]) *
             x.k[t.kG[g] + t.kN[n] + t.kD[d]];
    s[n] = geo.scale * dot;
    if (geo.hasBias)
      s[n] += x.bias[t.bG[g] + t.bM[m] + t.bN[n]];
  }
  return s;
}

/// o and lse (in their operands' orders) from q, k, v and bias.
void forwardOf(const Geometry &geo, const Values &x, std::vector<double> &o,
               std::vector<double> &lse) {
  Tables t(geo);
  o.assign(geo.count(geo.o), 0.0);
  lse.assign(geo.count(geo.lse), 0.0);
  for (int64_t g = 0; g < t.G; ++g)
    for (int64_t m = 0; m < t.M; ++m) {
      std::vector<double> s = scoresOf(geo, t, x, g, m);
      double top = -INFINITY;
      for (double score : s)
        top = std::max(top, score);
      double &l = lse[t.lG[g] + t.lM[m]];
      if (top == -INFINITY) {
        l = -INFINITY;
        continue;
      }
      double sum = 0;
      for (double score : s)
        sum += std::exp(score - top);
      l = top + std::log(sum);
      for (int64_t e = 0; e < t.E; ++e) {
        double acc = 0;
        for (int64_t n = 0; n < t.N; ++n)
          acc += std::exp(s[n] - l) * x.v[t.vG[g] + t.vN[n] + t.vE[e]];
        o[t.oG[g] + t.oM[m] + t.oE[e]] = acc;
      }
    }
}

/// dq, dk, dv (in q's, k's and v's orders) by the formulas, from the
/// values' o, lse and dout.
void gradOf(const Geometry &geo, const Values &x, std::vector<double> &dq,
            std::vector<double> &dk, std::vector<double> &dv) {
  Tables t(geo);
  dq.assign(x.q.size(), 0.0);
  dk.assign(x.k.size(), 0.0);
  dv.assign(x.v.size(), 0.0);
  for (int64_t g = 0; g < t.G; ++g)
    for (int64_t m = 0; m < t.M; ++m) {
      double l = x.lse[t.lG[g] + t.lM[m]];
      if (l == -INFINITY)
        continue;
      std::vector<double> s = scoresOf(geo, t, x, g, m);
      double di = 0;
      for (int64_t e = 0; e < t.E; ++e) {
        int64_t at = t.oG[g] + t.oM[m] + t.oE[e];
        di += double(x.dout[at]) * x.o[at];
      }
      for (int64_t n = 0; n < t.N; ++n) {
        double p = std::exp(s[n] - l), dp = 0;
        for (int64_t e = 0; e < t.E; ++e) {
          double dout = x.dout[t.oG[g] + t.oM[m] + t.oE[e]];
          dv[t.vG[g] + t.vN[n] + t.vE[e]] += p * dout;
          dp += dout * x.v[t.vG[g] + t.vN[n] + t.vE[e]];
        }
        double ds = p * (dp - di);
        for (int64_t d = 0; d < t.D; ++d) {
          dq[t.qG[g] + t.qM[m] + t.qD[d]] +=
              geo.scale * ds * x.k[t.kG[g] + t.kN[n] + t.kD[d]];
          dk[t.kG[g] + t.kN[n] + t.kD[d]] +=
              geo.scale * ds * x.q[t.qG[g] + t.qM[m] + t.qD[d]];
        }
      }
    }
}

/// Expects |got - want| <= tolerance * max(1, the largest |want|) element
/// for element (the tensor's scale), -inf exactly where `want` is.
void expectClose(const std::vector<float> &got, const std::vector<double> &want,
                 double tolerance, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 1;
  for (double w : want)
    if (std::isfinite(w))
      scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(want[i])) {
      ASSERT_EQ(double(got[i]), want[i]) << what << " element " << i;
      continue;
    }
    ASSERT_NEAR(got[i], want[i], tolerance * scale) << what << " element " << i;
  }
}

/// Random values for every operand of `geo` (bias: `bias` when given),
/// rounded to `dtype`.
Values valuesOf(const Geometry &geo, const std::string &dtype,
                std::vector<float> bias = {}) {
  Values x;
  x.q = roundedTo(dtype, testData("q", geo.count(geo.q)));
  x.k = roundedTo(dtype, testData("k", geo.count(geo.k)));
  x.v = roundedTo(dtype, testData("v", geo.count(geo.v)));
  if (geo.hasBias)
    x.bias = roundedTo(
        dtype, bias.empty() ? testData("bias", geo.count(geo.bias)) : bias);
  x.dout = roundedTo(dtype, testData("dout", geo.count(geo.o)));
  return x;
}

/// Runs attention on `geo` and `x` in `dtype` (lse in `lseType`) and
/// checks o and lse against the formula; returns them as stored.
std::pair<std::vector<float>, std::vector<float>>
checkForward(StepHarness h, const Geometry &geo, const Values &x,
             const std::string &dtype, const std::string &lseType) {
  std::vector<int64_t> in = {h.floats(dtype, x.q), h.floats(dtype, x.k),
                             h.floats(dtype, x.v)};
  if (geo.hasBias)
    in.push_back(h.floats(dtype, x.bias));
  // Outputs start as garbage: the step overwrites them.
  int64_t o = h.floats(dtype, std::vector<float>(geo.count(geo.o), 9)),
          lse = h.floats(lseType, std::vector<float>(geo.count(geo.lse), 9));
  h.run(geo.step(in, o, lse));
  std::vector<double> wantO, wantLse;
  forwardOf(geo, x, wantO, wantLse);
  double tolerance = storedTolerance(dtype);
  expectClose(h.readFloats(o), wantO, tolerance, "o");
  expectClose(h.readFloats(lse), wantLse, storedTolerance(lseType), "lse");
  return {h.readFloats(o), h.readFloats(lse)};
}

/// Runs attention_grad on `geo` and `x` (whose o and lse are set) in
/// `dtype` and checks dq, dk, dv against the formulas with `tolerance`.
void checkGrad(StepHarness h, const Geometry &geo, const Values &x,
               const std::string &dtype, const std::string &lseType,
               double tolerance) {
  std::vector<int64_t> in = {h.floats(dtype, x.q),     h.floats(dtype, x.k),
                             h.floats(dtype, x.v),     h.floats(dtype, x.o),
                             h.floats(lseType, x.lse), h.floats(dtype, x.dout)};
  if (geo.hasBias)
    in.push_back(h.floats(dtype, x.bias));
  int64_t dq = h.floats(dtype, std::vector<float>(x.q.size(), 9)),
          dk = h.floats(dtype, std::vector<float>(x.k.size(), 9)),
          dv = h.floats(dtype, std::vector<float>(x.v.size(), 9));
  h.run(geo.gradStep(in, dq, dk, dv));
  std::vector<double> wantQ, wantK, wantV;
  gradOf(geo, x, wantQ, wantK, wantV);
  expectClose(h.readFloats(dq), wantQ, tolerance, "dq");
  expectClose(h.readFloats(dk), wantK, tolerance, "dk");
  expectClose(h.readFloats(dv), wantV, tolerance, "dv");
}

/// Sets x.o and x.lse to the formula's, rounded to `dtype` and `lseType`.
void setForward(const Geometry &geo, Values &x, const std::string &dtype,
                const std::string &lseType) {
  std::vector<double> o, lse;
  forwardOf(geo, x, o, lse);
  x.o = roundedTo(dtype, std::vector<float>(o.begin(), o.end()));
  x.lse = roundedTo(lseType, std::vector<float>(lse.begin(), lse.end()));
}

/// charlm's attention: q [batch, seq, heads, d_k], k and v [batch, memory,
/// heads, d_k], a causal mask [seq, memory] of 0 and -1e9; d_k is the head
/// dim of q and k and the value dim of v and o.
Geometry charlm(int64_t batch, int64_t seq, int64_t memory, int64_t heads,
                int64_t dk) {
  Geometry geo;
  geo.sizes = {{"batch", batch},
               {"seq", seq},
               {"memory", memory},
               {"heads", heads},
               {"d_k", dk}};
  geo.q = {"batch", "seq", "heads", "d_k"};
  geo.k = geo.v = {"batch", "memory", "heads", "d_k"};
  geo.o = geo.q;
  geo.lse = {"batch", "heads", "seq"};
  geo.bias = {"seq", "memory"};
  geo.hasBias = true;
  geo.key = "memory";
  geo.head = {"d_k"};
  geo.scale = 1 / std::sqrt(double(dk));
  return geo;
}

std::vector<float> causalMask(int64_t seq, int64_t memory) {
  std::vector<float> mask(seq * memory);
  for (int64_t s = 0; s < seq; ++s)
    for (int64_t m = 0; m < memory; ++m)
      mask[s * memory + m] = m <= s + (memory - seq) ? 0.0f : -1e9f;
  return mask;
}

/// Group dims g1, g2, query dims m1, m2, head dims d1, d2 (listed d2, d1),
/// value dims e1, e2: every operand in its own order, the bias over g1, m2
/// and the key only.
Geometry scrambled(int64_t keys) {
  Geometry geo;
  geo.sizes = {{"g1", 2}, {"g2", 3}, {"m1", 5}, {"m2", 7}, {"key", keys},
               {"d1", 3}, {"d2", 4}, {"e1", 2}, {"e2", 5}};
  geo.q = {"d1", "m1", "g1", "m2", "g2", "d2"};
  geo.k = {"d1", "g2", "key", "d2", "g1"};
  geo.v = {"e1", "key", "g1", "e2", "g2"};
  geo.o = {"e2", "m2", "g1", "e1", "g2", "m1"};
  geo.lse = {"m1", "g2", "m2", "g1"};
  geo.bias = {"key", "g1", "m2"};
  geo.hasBias = true;
  geo.key = "key";
  geo.head = {"d2", "d1"};
  geo.scale = 0.3;
  return geo;
}

TEST_P(Conformance, Attention_CharlmGeometryWithCausalMask) {
  // 37 rows and 131 keys: no multiple of a block, and two blocks of keys.
  for (const std::string &dtype : kFloatTypes) {
    SCOPED_TRACE(dtype);
    Geometry geo = charlm(2, 37, 131, 2, 16);
    Values x = valuesOf(geo, dtype, causalMask(37, 131));
    checkForward(steps(), geo, x, dtype, dtype);
  }
}

TEST_P(Conformance, Attention_LongRowsRescaleAsTheMaximumGrows) {
  // 700 keys (several blocks) whose bias grows along the key, so that each
  // block of keys raises the rows' maximum and rescales what came before.
  Geometry geo = charlm(1, 70, 700, 2, 8);
  std::vector<float> bias(70 * 700);
  for (int64_t s = 0; s < 70; ++s)
    for (int64_t m = 0; m < 700; ++m)
      bias[s * 700 + m] = 0.01f * float(m) - 0.02f * float(s);
  Values x = valuesOf(geo, "f32", bias);
  checkForward(steps(), geo, x, "f32", "f32");
}

TEST_P(Conformance, Attention_DimsInAnyOrderWithSeveralDimsPerRole) {
  for (int64_t keys : {6, 150})
    for (const std::string &dtype : {std::string("f32"), std::string("bf16")}) {
      SCOPED_TRACE(dtype + " keys=" + std::to_string(keys));
      Geometry geo = scrambled(keys);
      Values x = valuesOf(geo, dtype);
      checkForward(steps(), geo, x, dtype, "f32");
    }
}

TEST_P(Conformance, Attention_WithoutHeadDims) {
  // No head dim: the scores are the bias alone (here over every dim).
  Geometry geo;
  geo.sizes = {{"b", 3}, {"s", 9}, {"key", 20}, {"e", 4}};
  geo.q = {"s", "b"};
  geo.k = {"key", "b"};
  geo.v = {"b", "key", "e"};
  geo.o = {"b", "s", "e"};
  geo.lse = {"s", "b"};
  geo.bias = {"b", "s", "key"};
  geo.hasBias = true;
  geo.key = "key";
  geo.scale = 2;
  Values x = valuesOf(geo, "f32");
  checkForward(steps(), geo, x, "f32", "f32");
}

TEST_P(Conformance, Attention_RowsWithoutKeys) {
  // No keys at all: o = 0 and lse = -inf.
  {
    Geometry geo = charlm(2, 3, 0, 2, 4);
    geo.hasBias = false;
    Values x = valuesOf(geo, "f32");
    checkForward(steps(), geo, x, "f32", "f32");
  }
  // A row whose every key the bias removes (-inf) has o = 0 and lse = -inf;
  // the others are ordinary.
  Geometry geo = charlm(1, 4, 5, 1, 4);
  std::vector<float> bias(4 * 5, 0.0f);
  for (int64_t m = 0; m < 5; ++m)
    bias[2 * 5 + m] = -INFINITY;
  Values x = valuesOf(geo, "f32", bias);
  checkForward(steps(), geo, x, "f32", "f32");
}

TEST_P(Conformance, AttentionGrad_CharlmGeometryWithCausalMask) {
  // One group (the threads of a device split its keys and queries) and
  // eight (each takes whole groups).
  for (int64_t heads : {1, 8})
    for (const std::string &dtype : kFloatTypes) {
      SCOPED_TRACE(dtype + " heads=" + std::to_string(heads));
      Geometry geo = charlm(1, 37, 131, heads, 16);
      Values x = valuesOf(geo, dtype, causalMask(37, 131));
      setForward(geo, x, dtype, "f32");
      checkGrad(steps(), geo, x, dtype, "f32",
                dtype == "f32" ? 1e-5 : storedTolerance(dtype));
    }
}

TEST_P(Conformance, AttentionGrad_DimsInAnyOrderWithSeveralDimsPerRole) {
  for (int64_t keys : {6, 150}) {
    SCOPED_TRACE("keys=" + std::to_string(keys));
    Geometry geo = scrambled(keys);
    Values x = valuesOf(geo, "f32");
    setForward(geo, x, "f32", "f32");
    checkGrad(steps(), geo, x, "f32", "f32", 1e-5);
  }
  // bf16 lse too: the step reads it as it is.
  Geometry geo = scrambled(150);
  Values x = valuesOf(geo, "bf16");
  setForward(geo, x, "bf16", "bf16");
  checkGrad(steps(), geo, x, "bf16", "bf16", storedTolerance("bf16"));
}

TEST_P(Conformance, AttentionGrad_LongRowsWithoutHeadOrBias) {
  Geometry geo = charlm(1, 70, 700, 2, 8);
  geo.hasBias = false;
  Values x = valuesOf(geo, "f32");
  setForward(geo, x, "f32", "f32");
  checkGrad(steps(), geo, x, "f32", "f32", 1e-5);
  // Without head dims nothing reaches dq or dk.
  Geometry flat;
  flat.sizes = {{"b", 2}, {"s", 9}, {"key", 20}, {"e", 4}};
  flat.q = {"s", "b"};
  flat.k = {"key", "b"};
  flat.v = {"b", "key", "e"};
  flat.o = {"b", "s", "e"};
  flat.lse = {"s", "b"};
  flat.bias = {"b", "s", "key"};
  flat.hasBias = true;
  flat.key = "key";
  Values y = valuesOf(flat, "f32");
  setForward(flat, y, "f32", "f32");
  checkGrad(steps(), flat, y, "f32", "f32", 1e-5);
}

TEST_P(Conformance, AttentionGrad_RowsWithoutKeys) {
  {
    Geometry geo = charlm(2, 3, 0, 2, 4);
    geo.hasBias = false;
    Values x = valuesOf(geo, "f32");
    setForward(geo, x, "f32", "f32");
    checkGrad(steps(), geo, x, "f32", "f32", 1e-5);
  }
  Geometry geo = charlm(1, 4, 5, 1, 4);
  std::vector<float> bias(4 * 5, 0.0f);
  for (int64_t m = 0; m < 5; ++m)
    bias[2 * 5 + m] = -INFINITY;
  Values x = valuesOf(geo, "f32", bias);
  setForward(geo, x, "f32", "f32");
  checkGrad(steps(), geo, x, "f32", "f32", 1e-5);
}

TEST_P(Conformance, AttentionGrad_FormulasAreTheForwardPassDerivative) {
  // The formulas (gradOf) against central differences of the forward
  // formula's L = sum(dout * o), then the backend against the formulas.
  Geometry geo = scrambled(9);
  geo.sizes["m1"] = 2;
  geo.sizes["g2"] = 1;
  Values x = valuesOf(geo, "f32");
  setForward(geo, x, "f32", "f32");
  std::vector<double> dq, dk, dv;
  gradOf(geo, x, dq, dk, dv);
  auto loss = [&](const Values &at) {
    std::vector<double> o, lse;
    forwardOf(geo, at, o, lse);
    double total = 0;
    for (size_t i = 0; i < o.size(); ++i)
      total += o[i] * at.dout[i];
    return total;
  };
  const double h = 1e-3;
  auto check = [&](std::vector<float> Values::*operand,
                   const std::vector<double> &want, const char *what) {
    for (size_t i = 0; i < want.size(); i += 7) {
      Values plus = x, minus = x;
      // f32 values: a step of h moves each by about h (to 2^-24 relative).
      (plus.*operand)[i] += float(h);
      (minus.*operand)[i] -= float(h);
      double step = double((plus.*operand)[i]) - (minus.*operand)[i];
      double numeric = (loss(plus) - loss(minus)) / step;
      EXPECT_NEAR(numeric, want[i], 1e-4 * std::max(1.0, std::abs(want[i])))
          << what << " element " << i;
    }
  };
  check(&Values::q, dq, "dq");
  check(&Values::k, dk, "dk");
  check(&Values::v, dv, "dv");
  checkGrad(steps(), geo, x, "f32", "f32", 1e-5);
}

TEST_P(Conformance, AttentionGrad_FromTheBackendsForwardPass) {
  // attention, then attention_grad on its o and lse, as a training step
  // runs them.
  Geometry geo = charlm(2, 45, 150, 2, 8);
  Values x = valuesOf(geo, "f32", causalMask(45, 150));
  auto [o, lse] = checkForward(steps(), geo, x, "f32", "f32");
  x.o = o;
  x.lse = lse;
  checkGrad(steps(), geo, x, "f32", "f32", 1e-5);
}

} // namespace
