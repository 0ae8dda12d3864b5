//===- TrainingReportTest.cpp - Progress, eval lines, CSV and SVG ---------===//
//
// The formatting of meshrun's training output, pinned: numbers, the
// progress line, the eval line, the CSV log, nice ticks and a chart that is
// well-formed enough to name its parts.
//
//===----------------------------------------------------------------------===//

#include "runtime/TrainingReport.h"
#include "runtime/SvgChart.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace meshc::runtime;

namespace {

TEST(MeshrunReportTest, Numbers) {
  EXPECT_EQ(groupThousands(0), "0");
  EXPECT_EQ(groupThousands(999), "999");
  EXPECT_EQ(groupThousands(12345), "12,345");
  EXPECT_EQ(groupThousands(1234567), "1,234,567");
  EXPECT_EQ(clockTime(12.4), "0:12");
  EXPECT_EQ(clockTime(754), "12:34");
  EXPECT_EQ(clockTime(3723), "1:02:03");
  EXPECT_EQ(clockTime(NAN), "0:00");
  EXPECT_EQ(shortNumber(0.41321), "0.4132");
  EXPECT_EQ(shortNumber(0.965), "0.9650");
  EXPECT_EQ(shortNumber(0), "0.0000");
  EXPECT_EQ(shortNumber(1.25e-5), "1.25e-05");
  EXPECT_EQ(shortNumber(NAN), "nan");
}

TEST(MeshrunReportTest, ProgressLine) {
  Progress progress;
  progress.step = 120;
  progress.steps = 500;
  progress.lossName = "loss";
  progress.loss = 0.41321;
  progress.examplesPerSecond = 12345.4;
  progress.etaSeconds = 12;
  EXPECT_EQ(progressLine(progress, 10),
            "step 120/500 [=>        ] loss 0.4132 | 12,345 examples/s | "
            "ETA 0:12");
  progress.tokensPerSecond = 12345.4 * 64;
  EXPECT_EQ(progressLine(progress, 10),
            "step 120/500 [=>        ] loss 0.4132 | 12,345 examples/s, "
            "790,106 tokens/s | ETA 0:12");
  progress.tokensPerSecond.reset();
  progress.step = 500;
  progress.loss.reset();
  progress.examplesPerSecond.reset();
  progress.stepsPerSecond = 250;
  progress.etaSeconds = 0;
  EXPECT_EQ(progressLine(progress, 10),
            "step 500/500 [==========] | 250.0000 steps/s | ETA 0:00");
}

TEST(MeshrunReportTest, EvalLine) {
  EXPECT_EQ(evalLine(40, {"loss", "accuracy"}, {0.12341, 0.965}),
            "eval after step 40: loss 0.1234  accuracy 0.9650");
}

TEST(MeshrunReportTest, CsvHasOneRowPerRunAndEvalColumns) {
  TrainingLog log({"loss", "acc"});
  log.addEval(0, {3, 0.1});
  log.addRun(1, 0.5, {2.5, 0.25});
  log.addRun(2, 0.25, {1.5, 0.5});
  log.addEval(2, {1.25, 0.75});
  EXPECT_EQ(log.csv(), "step,time_s,loss,acc,eval_loss,eval_acc\n"
                       "1,0.5,2.5,0.25,,\n"
                       "2,0.25,1.5,0.5,1.25,0.75\n");
}

TEST(MeshrunReportTest, NiceTicks) {
  EXPECT_EQ(niceTicks(0, 50, 5), (std::vector<double>{0, 10, 20, 30, 40, 50}));
  EXPECT_EQ(niceTicks(1, 49, 8), (std::vector<double>{0, 10, 20, 30, 40, 50}));
  EXPECT_EQ(niceTicks(1, 49, 12),
            (std::vector<double>{0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50}));
  std::vector<double> small = niceTicks(0.013, 0.42, 6);
  EXPECT_DOUBLE_EQ(small.front(), 0.0);
  EXPECT_NEAR(small[1], 0.1, 1e-12);
  EXPECT_GE(small.back(), 0.42);
  // A single value still gets an interval around it.
  std::vector<double> flat = niceTicks(2, 2, 4);
  EXPECT_LT(flat.front(), 2);
  EXPECT_GT(flat.back(), 2);
}

TEST(MeshrunReportTest, PlotDrawsTheCurveAndEvalMarkers) {
  TrainingLog log({"loss"});
  for (int step = 1; step <= 30; ++step)
    log.addRun(step, 0.1, {1.0 / step});
  log.addEval(10, {0.2});
  log.addEval(30, {0.05});
  std::string svg = log.plot("loss", "linreg & co: loss");
  EXPECT_EQ(svg.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg ", 0),
            0u);
  EXPECT_NE(svg.find("linreg &amp; co: loss"), std::string::npos);
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  EXPECT_NE(svg.find(">step</text>"), std::string::npos);
  EXPECT_NE(svg.find(">eval loss</text>"), std::string::npos);
  size_t markers = 0;
  for (size_t at = svg.find("<circle"); at != std::string::npos;
       at = svg.find("<circle", at + 1))
    ++markers;
  EXPECT_EQ(markers, 3u); // two eval points and the legend's
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
}

} // namespace
