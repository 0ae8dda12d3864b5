//===- TrainingReport.cpp - What meshrun shows while training -------------===//
//
// Formatting of the progress and eval lines, the CSV rows and the loss
// chart (drawn by SvgChart).
//
//===----------------------------------------------------------------------===//

#include "runtime/TrainingReport.h"

#include "runtime/Error.h"
#include "runtime/SvgChart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace meshc::runtime {

std::string groupThousands(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string grouped;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0)
      grouped += ',';
    grouped += digits[i];
  }
  return (value < 0 ? "-" : "") + grouped;
}

std::string clockTime(double seconds) {
  int64_t total = std::isfinite(seconds) && seconds > 0
                      ? static_cast<int64_t>(std::llround(seconds))
                      : 0;
  char text[32];
  if (total >= 3600)
    std::snprintf(text, sizeof(text), "%lld:%02lld:%02lld",
                  static_cast<long long>(total / 3600),
                  static_cast<long long>(total / 60 % 60),
                  static_cast<long long>(total % 60));
  else
    std::snprintf(text, sizeof(text), "%lld:%02lld",
                  static_cast<long long>(total / 60),
                  static_cast<long long>(total % 60));
  return text;
}

std::string shortNumber(double value) {
  char text[32];
  double magnitude = std::abs(value);
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  if (value == 0 || (magnitude >= 1e-3 && magnitude < 1e6))
    std::snprintf(text, sizeof(text), "%.4f", value);
  else
    std::snprintf(text, sizeof(text), "%.4g", value);
  return text;
}

std::string progressLine(const Progress &progress, int width) {
  int64_t filled =
      progress.steps > 0 ? progress.step * width / progress.steps : width;
  std::string bar(static_cast<size_t>(width), ' ');
  for (int64_t i = 0; i < filled; ++i)
    bar[i] = '=';
  if (filled > 0 && filled < width)
    bar[filled - 1] = '>';
  std::string line = "step " + std::to_string(progress.step) + "/" +
                     std::to_string(progress.steps) + " [" + bar + "]";
  if (progress.loss)
    line += " " + progress.lossName + " " + shortNumber(*progress.loss);
  if (progress.examplesPerSecond)
    line += " | " +
            groupThousands(static_cast<int64_t>(
                std::llround(*progress.examplesPerSecond))) +
            " examples/s";
  if (progress.examplesPerSecond && progress.tokensPerSecond)
    line += ", " +
            groupThousands(
                static_cast<int64_t>(std::llround(*progress.tokensPerSecond))) +
            " tokens/s";
  if (!progress.examplesPerSecond)
    line += " | " + shortNumber(progress.stepsPerSecond) + " steps/s";
  return line + " | ETA " + clockTime(progress.etaSeconds);
}

std::string evalLine(int64_t step, const std::vector<std::string> &names,
                     const std::vector<double> &values) {
  std::string line = "eval after step " + std::to_string(step) + ":";
  for (size_t i = 0; i < names.size(); ++i)
    line += (i ? "  " : " ") + names[i] + " " + shortNumber(values[i]);
  return line;
}

void TrainingLog::addRun(int64_t step, double seconds,
                         std::vector<double> values) {
  runs.push_back({step, seconds, std::move(values)});
}

void TrainingLog::addEval(int64_t step, std::vector<double> values) {
  evals.emplace_back(step, std::move(values));
}

/// "%.9g": enough digits to read an f32 back exactly.
static std::string csvNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", value);
  return text;
}

std::string TrainingLog::csv() const {
  std::string text = "step,time_s";
  for (const std::string &name : names)
    text += "," + name;
  for (const std::string &name : names)
    text += ",eval_" + name;
  text += "\n";
  for (const Row &row : runs) {
    text += std::to_string(row.step) + "," + csvNumber(row.seconds);
    for (double value : row.values)
      text += "," + csvNumber(value);
    const std::vector<double> *eval = nullptr;
    for (const auto &[step, values] : evals)
      if (step == row.step)
        eval = &values;
    for (size_t i = 0; i < names.size(); ++i)
      text += "," + (eval ? csvNumber((*eval)[i]) : std::string());
    text += "\n";
  }
  return text;
}

std::string TrainingLog::plot(const std::string &name,
                              const std::string &title) const {
  size_t column = std::find(names.begin(), names.end(), name) - names.begin();
  ChartSeries train{"training " + name, {}, false, "#1f77b4"};
  ChartSeries eval{"eval " + name, {}, true, "#d62728"};
  if (column < names.size()) {
    for (const Row &row : runs)
      train.points.emplace_back(row.step, row.values[column]);
    for (const auto &[step, values] : evals)
      eval.points.emplace_back(step, values[column]);
  }
  ChartSpec chart{title, "step", name, {train}};
  if (!eval.points.empty())
    chart.series.push_back(eval);
  return svgLineChart(chart);
}

} // namespace meshc::runtime
