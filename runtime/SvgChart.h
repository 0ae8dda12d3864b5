//===- SvgChart.h - Line charts as plain SVG --------------------*- C++ -*-===//
//
// meshrun --plot draws the training loss curve, with the eval points as
// markers, as a self-contained SVG document: axes with "nice" ticks (1, 2 or
// 5 times a power of ten), tick labels, axis labels, a title and a legend.
// No plotting library: the chart is a few dozen SVG elements.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_SVGCHART_H
#define MESHC_RUNTIME_SVGCHART_H

#include <string>
#include <utility>
#include <vector>

namespace meshc::runtime {

/// One series of (x, y) points.
struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;
  /// Draw a marker per point instead of a line through them.
  bool markers = false;
  /// An SVG color ("#1f77b4").
  std::string color;
};

/// What to draw.
struct ChartSpec {
  std::string title;
  std::string xLabel;
  std::string yLabel;
  std::vector<ChartSeries> series;
};

/// Ticks covering [lo, hi]: multiples of a step of 1, 2 or 5 times a power
/// of ten, about `target` of them, the first <= lo and the last >= hi.
std::vector<double> niceTicks(double lo, double hi, int target);

/// The SVG document of `chart`. Non-finite points are left out; an empty
/// chart still has its axes.
std::string svgLineChart(const ChartSpec &chart);

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_SVGCHART_H
