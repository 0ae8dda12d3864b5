//===- TraceTest.cpp - The step timeline of --trace -----------------------===//
//
// A session on a 2x2 mesh with tracing on: the Chrome trace JSON parses, has
// one complete event per step per device per recorded run with the step's
// op, category, phase and run, collectives carry their bytes and group, each
// device's events follow each other in time, and the run limit holds.
//
//===----------------------------------------------------------------------===//

#include "runtime/Loader.h"
#include "runtime/Session.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <map>

using namespace meshc::runtime;
using nlohmann::json;

namespace {

/// y (4 floats, replicated) = fill 1, all_reduce over a, copied to z.
json traceProgram() {
  return json::parse(R"({
    "format": "meshc-mprog", "version": 1, "program": "traced",
    "mesh": [{"name": "a", "size": 2}, {"name": "b", "size": 2}],
    "seed": 1, "arena_bytes": 64,
    "buffers": [
      {"id": 0, "dtype": "f32", "shape": [4], "offset": 0, "bytes": 16},
      {"id": 1, "dtype": "f32", "shape": [4], "offset": 16, "bytes": 16}],
    "tensors": [
      {"role": "output", "name": "y", "buffer": 0, "dtype": "f32",
       "dims": [{"name": "n", "size": 4}]},
      {"role": "output", "name": "z", "buffer": 1, "dtype": "f32",
       "dims": [{"name": "n", "size": 4}]}],
    "steps": [
      {"op": "fill", "out": 0, "value": 1},
      {"op": "all_reduce", "buf": 0, "axes": ["a"], "reduction": "sum"},
      {"op": "copy", "in": 0, "out": 1}]
  })");
}

json traceOf(int64_t runs, int64_t limit) {
  Program program = parseProgram(traceProgram().dump(), "traced.mprog");
  SessionOptions options;
  options.trace = true;
  options.traceRuns = limit;
  Session session(program, options);
  for (int64_t run = 0; run < runs; ++run)
    session.runStep();
  json trace = json::parse(session.traceJson(), nullptr, false);
  EXPECT_FALSE(trace.is_discarded());
  return trace;
}

std::vector<json> completeEvents(const json &trace) {
  std::vector<json> events;
  for (const json &event : trace["traceEvents"])
    if (event["ph"] == "X")
      events.push_back(event);
  return events;
}

TEST(TraceTest, OneEventPerStepPerDevicePerRun) {
  json trace = traceOf(3, 0);
  EXPECT_EQ(trace["displayTimeUnit"], "ms");
  std::vector<json> events = completeEvents(trace);
  ASSERT_EQ(events.size(), 3u * 3u * 4u);
  std::map<std::pair<int64_t, int64_t>, int> perDeviceRun;
  std::map<std::string, int> perCategory;
  for (const json &event : events) {
    EXPECT_EQ(event["pid"], 0);
    ++perDeviceRun[{event["tid"].get<int64_t>(),
                    event["args"]["run"].get<int64_t>()}];
    ++perCategory[event["cat"].get<std::string>()];
    EXPECT_EQ(event["args"]["phase"], "forward");
    if (event["name"] == "all_reduce") {
      EXPECT_EQ(event["cat"], "collective");
      EXPECT_EQ(event["args"]["bytes"], 16);
      EXPECT_EQ(event["args"]["group"], "a");
    } else {
      EXPECT_FALSE(event["args"].contains("bytes"));
    }
  }
  for (int64_t device = 0; device < 4; ++device)
    for (int64_t run = 1; run <= 3; ++run)
      EXPECT_EQ((perDeviceRun[{device, run}]), 3) << device << " " << run;
  EXPECT_EQ(perCategory,
            (std::map<std::string, int>{
                {"collective", 12}, {"copy", 12}, {"elementwise", 12}}));
  // The threads are named after their devices.
  std::map<int64_t, std::string> names;
  for (const json &event : trace["traceEvents"])
    if (event["ph"] == "M" && event["name"] == "thread_name")
      names[event["tid"]] = event["args"]["name"];
  EXPECT_EQ(names, (std::map<int64_t, std::string>{{0, "device 0 (a=0,b=0)"},
                                                   {1, "device 1 (a=0,b=1)"},
                                                   {2, "device 2 (a=1,b=0)"},
                                                   {3, "device 3 (a=1,b=1)"}}));
}

TEST(TraceTest, EachDeviceStepsFollowEachOtherInTime) {
  std::vector<json> events = completeEvents(traceOf(4, 0));
  std::map<int64_t, double> endOf;
  std::map<int64_t, int64_t> lastStep;
  for (const json &event : events) {
    int64_t device = event["tid"];
    double start = event["ts"], duration = event["dur"];
    EXPECT_GE(duration, 0.0);
    if (endOf.count(device)) {
      // ts and dur are printed to the nanosecond.
      EXPECT_GE(start, endOf[device] - 1e-3) << event.dump();
      // Steps in program order within a run, wrapping to the next run.
      EXPECT_EQ(event["args"]["step"], (lastStep[device] + 1) % 3);
    }
    endOf[device] = start + duration;
    lastStep[device] = event["args"]["step"];
  }
}

TEST(TraceTest, RecordsOnlyTheFirstRuns) {
  std::vector<json> events = completeEvents(traceOf(5, 2));
  EXPECT_EQ(events.size(), 2u * 3u * 4u);
  for (const json &event : events)
    EXPECT_LE(event["args"]["run"], 2);
}

TEST(TraceTest, NoTraceWhenOff) {
  Program program = parseProgram(traceProgram().dump(), "traced.mprog");
  Session session(program, SessionOptions());
  session.runStep();
  EXPECT_EQ(session.traceJson(), "");
}

} // namespace
