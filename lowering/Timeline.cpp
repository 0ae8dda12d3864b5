//===- Timeline.cpp - The predicted step as a Chrome trace ----------------===//

#include "lowering/Timeline.h"

#include "dialect/MtfDialect.h"
#include "lowering/ProgramCost.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

namespace meshc {

using namespace mlir;

namespace {

/// "charlm.mtf:12:5", or "" without a file location.
std::string sourceOf(Operation *op) {
  auto loc = op->getLoc()->findInstanceOf<FileLineColLoc>();
  if (!loc)
    return "";
  return llvm::sys::path::filename(loc.getFilename()).str() + ":" +
         std::to_string(loc.getLine()) + ":" + std::to_string(loc.getColumn());
}

/// One complete event of `seconds` at `start` (seconds), in microseconds,
/// on track `track` (0: the device, 1 + StepClock::Link: a collective
/// lane).
llvm::json::Object event(llvm::StringRef name, llvm::StringRef category,
                         double start, double seconds, int64_t track,
                         llvm::json::Object args) {
  return llvm::json::Object{{"ph", "X"},
                            {"name", name},
                            {"cat", category},
                            {"pid", 0},
                            {"tid", track},
                            {"ts", start * 1e6},
                            {"dur", seconds * 1e6},
                            {"args", std::move(args)}};
}

llvm::json::Object trackName(int64_t track, llvm::StringRef name) {
  return llvm::json::Object{{"ph", "M"},
                            {"name", "thread_name"},
                            {"pid", 0},
                            {"tid", track},
                            {"args", llvm::json::Object{{"name", name}}}};
}

} // namespace

void writePredictedTimeline(ModuleOp spmd, const layout::Mesh &mesh,
                            const cost::MachineProfile &machine,
                            llvm::raw_ostream &os) {
  std::string program;
  spmd.walk([&](mtf::ProgramOp op) { program = op.getSymName().str(); });
  llvm::json::Array events;
  events.push_back(llvm::json::Object{
      {"ph", "M"},
      {"name", "process_name"},
      {"pid", 0},
      {"args", llvm::json::Object{{"name", "meshc --timeline (predicted on " +
                                               machine.name + ")"}}}});
  events.push_back(trackName(0, "every device (predicted)"));
  events.push_back(trackName(1 + StepClock::InNode,
                             "its started collectives in a node (predicted)"));
  events.push_back(
      trackName(1 + StepClock::BetweenNodes,
                "its started collectives between nodes (predicted)"));
  // The steps on one device's clocks (StepClock): started collectives on
  // their lane, the device stalled only where a wait finds one unfinished.
  StepClock clock(machine.overlapsCommunication);
  double computing = 0, communicating = 0;
  int64_t steps = 0;
  forEachPredictedStep(spmd, mesh, machine, [&](const PredictedStep &step) {
    llvm::json::Object args{{"step", steps++}};
    if (std::string where = sourceOf(step.op); !where.empty())
      args["loc"] = where;
    if (step.iteration >= 0)
      args["iteration"] = step.iteration;
    double start = 0, seconds = step.seconds;
    int64_t track = 0;
    if (step.kind == runtime::OpKind::Wait) {
      start = clock.wait(llvm::cast<mtf::WaitOp>(step.op).getStart());
      seconds = clock.now() - start;
    } else if (const CollectiveCost *collective = step.collective;
               collective && runtime::communicates(step.kind)) {
      std::string axes;
      for (size_t axis : collective->axes)
        axes += (axes.empty() ? "" : ",") + mesh.axisName(axis);
      args["bytes"] = collective->inBytes;
      args["group"] = axes;
      args["link"] = collective->interNode ? "between nodes" : "in a node";
      bool started = bool(mtf::WaitOp::of(step.op));
      if (started)
        args["started"] = true;
      StepClock::Link link = StepClock::linkOf(*collective);
      track = started && machine.overlapsCommunication ? 1 + link : 0;
      start = clock.collective(step.op, step.seconds, started, link);
      communicating += step.seconds;
    } else {
      start = clock.compute(step.seconds);
      computing += step.seconds;
    }
    events.push_back(event(runtime::opName(step.kind),
                           runtime::opCategory(step.kind), start, seconds,
                           track, std::move(args)));
  });
  // (With microbatches, every run's overhead, one event.)
  double now = clock.end(), overhead = stepRunOverhead(spmd, machine);
  events.push_back(event("run overhead", "overhead", now, overhead, 0,
                         llvm::json::Object{}));
  double exposed = std::max(0.0, now - computing);
  now += overhead;
  llvm::json::Object top{
      {"displayTimeUnit", "ms"},
      {"otherData",
       llvm::json::Object{{"program", program},
                          {"mesh", mesh.str()},
                          {"machine", machine.name},
                          {"predicted step seconds", now},
                          {"compute seconds", computing},
                          {"communication seconds", communicating},
                          {"exposed communication seconds", exposed}}},
      {"traceEvents", std::move(events)}};
  os << llvm::formatv("{0}", llvm::json::Value(std::move(top))) << "\n";
}

} // namespace meshc
