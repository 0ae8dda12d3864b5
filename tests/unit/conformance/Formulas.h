//===- Formulas.h - The element functions as formulas in double -*- C++ -*-===//
//
// The reference of every unary and binary function of ElementFunctions.def,
// written plainly in double (gelu's derivative by central differences), for
// the unary, binary and fused cases. formulasCoverEveryFunction() says which
// function of the .def has no formula here.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_TESTS_UNIT_CONFORMANCE_FORMULAS_H
#define MESHC_TESTS_UNIT_CONFORMANCE_FORMULAS_H

#include "runtime/ElementFunctions.h"

#include <cmath>
#include <functional>
#include <map>
#include <string>

namespace meshc::runtime::testing {

inline double geluFormula(double x) {
  const double pi = 3.141592653589793;
  return 0.5 * x *
         (1 + std::tanh(std::sqrt(2 / pi) * (x + 0.044715 * x * x * x)));
}

/// Each unary fn by spelling; `scale` multiplies by the step's value, here
/// always 2.5.
inline const std::map<std::string, std::function<double(double)>> &
unaryFormulas() {
  static const std::map<std::string, std::function<double(double)>> formulas = {
      {"relu", [](double x) { return x > 0 ? x : 0.0; }},
      {"gelu", geluFormula},
      {"silu", [](double x) { return x / (1 + std::exp(-x)); }},
      {"sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"exp", [](double x) { return std::exp(x); }},
      {"log", [](double x) { return std::log(x); }},
      {"tanh", [](double x) { return std::tanh(x); }},
      {"sqrt", [](double x) { return std::sqrt(x); }},
      {"rsqrt", [](double x) { return 1 / std::sqrt(x); }},
      {"negate", [](double x) { return -x; }},
      {"scale", [](double x) { return 2.5 * x; }},
      {"positive", [](double x) { return x > 0 ? 1.0 : 0.0; }},
      {"gelu_grad", [](double x) {
         return (geluFormula(x + 1e-5) - geluFormula(x - 1e-5)) / 2e-5;
       }}};
  return formulas;
}

/// True for the unary fns defined only for positive arguments.
inline bool positiveDomain(const std::string &fn) {
  return fn == "log" || fn == "sqrt" || fn == "rsqrt";
}

/// Each binary fn by spelling; comparisons give 1 or 0.
inline const std::map<std::string, std::function<double(double, double)>> &
binaryFormulas() {
  static const std::map<std::string, std::function<double(double, double)>>
      formulas = {{"add", [](double x, double y) { return x + y; }},
                  {"sub", [](double x, double y) { return x - y; }},
                  {"mul", [](double x, double y) { return x * y; }},
                  {"div", [](double x, double y) { return x / y; }},
                  {"max", [](double x, double y) { return std::max(x, y); }},
                  {"min", [](double x, double y) { return std::min(x, y); }},
                  {"eq", [](double x, double y) { return x == y ? 1.0 : 0.0; }},
                  {"lt", [](double x, double y) { return x < y ? 1.0 : 0.0; }}};
  return formulas;
}

/// The first function of ElementFunctions.def without a formula here, or
/// "".
inline std::string functionWithoutFormula() {
  for (size_t fn = 0; fn < kUnaryFnCount; ++fn)
    if (!unaryFormulas().count(unaryFnName(static_cast<UnaryFn>(fn))))
      return unaryFnName(static_cast<UnaryFn>(fn));
  for (size_t fn = 0; fn < kBinaryFnCount; ++fn)
    if (!binaryFormulas().count(binaryFnName(static_cast<BinaryFn>(fn))))
      return binaryFnName(static_cast<BinaryFn>(fn));
  return "";
}

} // namespace meshc::runtime::testing

#endif // MESHC_TESTS_UNIT_CONFORMANCE_FORMULAS_H
