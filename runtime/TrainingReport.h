//===- TrainingReport.h - What meshrun shows while training -----*- C++ -*-===//
//
// The pieces of meshrun's training output that do not touch devices: the
// progress line
//   step 120/500 [=======>      ] loss 0.4132 | 12,345 examples/s | ETA 0:12
//   step 120/500 [=======>      ] loss 2.7013 | 64 examples/s, 4,096 tokens/s |
//   ETA 0:12
// the eval line, and the run log behind --csv and --plot (one row per
// training run with every scalar output, and the eval averages where an
// evaluation followed the run).
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_TRAININGREPORT_H
#define MESHC_RUNTIME_TRAININGREPORT_H

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace meshc::runtime {

/// "12,345".
std::string groupThousands(int64_t value);

/// "0:07", "12:34", "1:02:03" (seconds rounded).
std::string clockTime(double seconds);

/// A scalar for people: "0.4132" (4 decimals) between 1e-3 and 1e6, else
/// "1.234e-05"; "nan", "inf".
std::string shortNumber(double value);

/// What the progress line shows.
struct Progress {
  int64_t step = 0;
  int64_t steps = 0;
  /// The loss output's name and value, if any.
  std::string lossName;
  std::optional<double> loss;
  /// Examples per second (none: steps per second are shown).
  std::optional<double> examplesPerSecond;
  /// Tokens per second, shown as well for language models.
  std::optional<double> tokensPerSecond;
  double stepsPerSecond = 0;
  double etaSeconds = 0;
};

/// The progress line (no newline), with a bar of `width` characters.
std::string progressLine(const Progress &progress, int width = 30);

/// "eval after step 40: loss 0.1234  accuracy 0.9650".
std::string evalLine(int64_t step, const std::vector<std::string> &names,
                     const std::vector<double> &values);

/// The scalar outputs of every training run, and of the evaluations.
class TrainingLog {
public:
  /// A log of the scalar outputs called `names`.
  explicit TrainingLog(std::vector<std::string> names)
      : names(std::move(names)) {}

  /// Records training run `step` (1-based), which took `seconds`, with the
  /// values of the scalar outputs.
  void addRun(int64_t step, double seconds, std::vector<double> values);
  /// Records an evaluation after training run `step` (0: before any).
  void addEval(int64_t step, std::vector<double> values);

  /// "step,time_s,<names>,eval_<names>" and one row per training run; the
  /// eval columns are empty except after an evaluation.
  std::string csv() const;
  /// The SVG chart of output `name` (a scalar output) over the training
  /// runs, with the evaluations as markers.
  std::string plot(const std::string &name, const std::string &title) const;

private:
  struct Row {
    int64_t step;
    double seconds;
    std::vector<double> values;
  };
  std::vector<std::string> names;
  std::vector<Row> runs;
  std::vector<std::pair<int64_t, std::vector<double>>> evals;
};

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_TRAININGREPORT_H
