//===- SvgChart.cpp - Line charts as plain SVG ----------------------------===//
//
// The plot area is a fixed 640x400 box inside an 800x520 canvas; data
// coordinates map linearly onto it over the range of the ticks.
//
//===----------------------------------------------------------------------===//

#include "runtime/SvgChart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace meshc::runtime {

namespace {

constexpr double kWidth = 800, kHeight = 520;
constexpr double kLeft = 100, kRight = 760, kTop = 50, kBottom = 440;

/// `value` for an attribute: "%.2f".
std::string coordinate(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f", value);
  return text;
}

/// A tick label: "%g" without "-0".
std::string tickLabel(double value, double step) {
  if (std::abs(value) < step * 1e-9)
    value = 0;
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

/// `text` with the XML special characters escaped.
std::string escaped(const std::string &text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

std::string text(double x, double y, const std::string &anchor,
                 const std::string &content, const std::string &extra = "") {
  return "<text x=\"" + coordinate(x) + "\" y=\"" + coordinate(y) +
         "\" text-anchor=\"" + anchor + "\"" + extra + ">" + escaped(content) +
         "</text>\n";
}

std::string line(double x1, double y1, double x2, double y2,
                 const std::string &style) {
  return "<line x1=\"" + coordinate(x1) + "\" y1=\"" + coordinate(y1) +
         "\" x2=\"" + coordinate(x2) + "\" y2=\"" + coordinate(y2) + "\" " +
         style + "/>\n";
}

} // namespace

std::vector<double> niceTicks(double lo, double hi, int target) {
  if (!(hi > lo)) {
    double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  double raw = (hi - lo) / std::max(1, target);
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double factor : {1.0, 2.0, 5.0, 10.0})
    if (factor * power >= raw) {
      step = factor * power;
      break;
    }
  std::vector<double> ticks;
  double first = std::floor(lo / step) * step;
  for (double tick = first; tick < hi + step * 0.999; tick += step)
    ticks.push_back(tick);
  if (ticks.size() < 2)
    ticks.push_back(first + step);
  return ticks;
}

std::string svgLineChart(const ChartSpec &chart) {
  double xMin = INFINITY, xMax = -INFINITY, yMin = INFINITY, yMax = -INFINITY;
  for (const ChartSeries &series : chart.series)
    for (const auto &[x, y] : series.points)
      if (std::isfinite(x) && std::isfinite(y)) {
        xMin = std::min(xMin, x);
        xMax = std::max(xMax, x);
        yMin = std::min(yMin, y);
        yMax = std::max(yMax, y);
      }
  if (!std::isfinite(xMin)) {
    xMin = yMin = 0;
    xMax = yMax = 1;
  }
  std::vector<double> xTicks = niceTicks(xMin, xMax, 8);
  std::vector<double> yTicks = niceTicks(yMin, yMax, 6);
  double x0 = xTicks.front(), x1 = xTicks.back();
  double y0 = yTicks.front(), y1 = yTicks.back();
  auto px = [&](double x) {
    return kLeft + (x - x0) / (x1 - x0) * (kRight - kLeft);
  };
  auto py = [&](double y) {
    return kBottom - (y - y0) / (y1 - y0) * (kBottom - kTop);
  };

  std::string svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    coordinate(kWidth) + "\" height=\"" + coordinate(kHeight) +
                    "\" viewBox=\"0 0 " + coordinate(kWidth) + " " +
                    coordinate(kHeight) +
                    "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += text(kWidth / 2, 28, "middle", chart.title, " font-size=\"16\"");
  // Grid, ticks and tick labels.
  double xStep = xTicks[1] - xTicks[0], yStep = yTicks[1] - yTicks[0];
  for (double tick : xTicks) {
    svg += line(px(tick), kTop, px(tick), kBottom, "stroke=\"#e5e5e5\"");
    svg += line(px(tick), kBottom, px(tick), kBottom + 5, "stroke=\"black\"");
    svg += text(px(tick), kBottom + 20, "middle", tickLabel(tick, xStep));
  }
  for (double tick : yTicks) {
    svg += line(kLeft, py(tick), kRight, py(tick), "stroke=\"#e5e5e5\"");
    svg += line(kLeft - 5, py(tick), kLeft, py(tick), "stroke=\"black\"");
    svg += text(kLeft - 8, py(tick) + 4, "end", tickLabel(tick, yStep));
  }
  // Axes and their labels.
  svg += line(kLeft, kBottom, kRight, kBottom, "stroke=\"black\"");
  svg += line(kLeft, kTop, kLeft, kBottom, "stroke=\"black\"");
  svg += text((kLeft + kRight) / 2, kBottom + 45, "middle", chart.xLabel);
  svg += text(30, (kTop + kBottom) / 2, "middle", chart.yLabel,
              " transform=\"rotate(-90 30 " + coordinate((kTop + kBottom) / 2) +
                  ")\"");
  // The series, then the legend.
  double legendY = kTop + 10;
  for (const ChartSeries &series : chart.series) {
    std::string color = series.color.empty() ? "black" : series.color;
    if (series.markers) {
      for (const auto &[x, y] : series.points)
        if (std::isfinite(x) && std::isfinite(y))
          svg += "<circle cx=\"" + coordinate(px(x)) + "\" cy=\"" +
                 coordinate(py(y)) + "\" r=\"4\" fill=\"" + color + "\"/>\n";
    } else {
      std::string points;
      for (const auto &[x, y] : series.points)
        if (std::isfinite(x) && std::isfinite(y))
          points += (points.empty() ? "" : " ") + coordinate(px(x)) + "," +
                    coordinate(py(y));
      if (!points.empty())
        svg += "<polyline fill=\"none\" stroke=\"" + color +
               "\" stroke-width=\"1.5\" points=\"" + points + "\"/>\n";
    }
    svg += series.markers
               ? "<circle cx=\"" + coordinate(kRight - 150) + "\" cy=\"" +
                     coordinate(legendY - 4) + "\" r=\"4\" fill=\"" + color +
                     "\"/>\n"
               : line(kRight - 160, legendY - 4, kRight - 140, legendY - 4,
                      "stroke=\"" + color + "\" stroke-width=\"1.5\"");
    svg += text(kRight - 132, legendY, "start", series.name);
    legendY += 18;
  }
  return svg + "</svg>\n";
}

} // namespace meshc::runtime
