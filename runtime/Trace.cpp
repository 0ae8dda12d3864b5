//===- Trace.cpp - The step timeline behind meshrun --trace ---------------===//
//
// Recording, the gather to rank 0, and the Chrome trace JSON, written by
// hand (one snprintf per event) since a long trace holds many events.
//
//===----------------------------------------------------------------------===//

#include "runtime/Trace.h"

#include "runtime/Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace meshc::runtime {

namespace {

/// Runs recorded up front without growing the buffers.
constexpr int64_t kReservedRuns = 64;

/// The bytes a collective step moves per device: its largest operand (a
/// combined all_reduce's buffers together).
int64_t collectiveBytes(const Step &step) {
  int64_t elements = step.out.shape.elements();
  for (const Operand &operand : step.in)
    elements = std::max(elements, operand.shape.elements());
  if (const auto *reduce = std::get_if<AllReduceAttrs>(&step.attrs);
      reduce && !reduce->buffers.empty()) {
    elements = 0;
    for (const Operand &buffer : reduce->buffers)
      elements += buffer.shape.elements();
  }
  const std::vector<MovePart> *parts = nullptr;
  if (const auto *gather = std::get_if<AllGatherAttrs>(&step.attrs))
    parts = &gather->parts;
  if (const auto *scatter = std::get_if<ReduceScatterAttrs>(&step.attrs))
    parts = &scatter->parts;
  if (parts && !parts->empty()) {
    elements = 0;
    for (const MovePart &part : *parts)
      elements += std::max(part.in.shape.elements(), part.out.shape.elements());
  }
  return elements * 4;
}

/// "device 3 (a=1,b=1)".
std::string deviceName(const layout::Mesh &mesh, int64_t device) {
  std::string name = "device " + std::to_string(device);
  if (mesh.rank() == 0)
    return name;
  std::vector<int64_t> coords = mesh.coordinates(device);
  name += " (";
  for (size_t axis = 0; axis < mesh.rank(); ++axis)
    name += (axis ? "," : "") + mesh.axisName(axis) + "=" +
            std::to_string(coords[axis]);
  return name + ")";
}

/// Appends the events of `device` (process `pid`) to `out`.
void appendEvents(std::string &out, const Program &program, int64_t pid,
                  int64_t device, const TraceEvent *events, size_t count) {
  char line[512];
  std::snprintf(line, sizeof(line),
                ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%lld,"
                "\"tid\":%lld,\"args\":{\"name\":\"%s\"}}"
                ",\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%lld,"
                "\"tid\":%lld,\"args\":{\"sort_index\":%lld}}",
                static_cast<long long>(pid), static_cast<long long>(device),
                deviceName(program.mesh, device).c_str(),
                static_cast<long long>(pid), static_cast<long long>(device),
                static_cast<long long>(device));
  out += line;
  for (size_t e = 0; e < count; ++e) {
    const TraceEvent &event = events[e];
    // Under device weights the device's own sizes give its bytes.
    const Step &step = program.on(device).step(event.step);
    std::string extra;
    if (stepGroup(step.op()) == StepGroup::Collective) {
      std::string axes;
      for (const std::string &axis : program.groupAxes[*step.group()])
        axes += (axes.empty() ? "" : ",") + axis;
      extra = ",\"bytes\":" + std::to_string(collectiveBytes(step)) +
              ",\"group\":\"" + axes + "\"";
    }
    if (event.iteration >= 0)
      extra += ",\"iteration\":" + std::to_string(event.iteration);
    // A training run is numbered from 1; an eval run by the training runs
    // before it.
    uint64_t run = event.eval ? event.run : event.run + 1;
    std::snprintf(
        line, sizeof(line),
        ",\n{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"%s\",\"pid\":%lld,"
        "\"tid\":%lld,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"step\":%u,"
        "\"phase\":\"%s\",\"run\":%llu,\"eval\":%s%s}}",
        opName(step.op()), stepCategory(step), static_cast<long long>(pid),
        static_cast<long long>(device), event.startNs / 1e3,
        (event.endNs - event.startNs) / 1e3, event.step, phaseName(step.phase),
        static_cast<unsigned long long>(run), event.eval ? "true" : "false",
        extra.c_str());
    out += line;
  }
}

std::string processMetadata(int64_t pid, const std::string &name) {
  return ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" +
         std::to_string(pid) + ",\"args\":{\"name\":\"" + name + "\"}}";
}

} // namespace

/// How many steps a device runs for `steps` (loops run their bodies
/// `count` times).
static size_t leafRuns(const Program &program, const std::vector<Step> &steps) {
  size_t runs = 0;
  for (const Step &step : steps)
    runs += step.op() == OpKind::Loop
                ? size_t(step.as<LoopAttrs>().count) *
                      leafRuns(program, program.bodyOf(step))
                : 1;
  return runs;
}

const char *stepCategory(const Step &step) {
  if (step.op() == OpKind::Einsum) {
    for (const EinsumStage &stage : step.as<EinsumAttrs>().plan.stages)
      if (stage.isGemm)
        return "gemm";
    return "reduction";
  }
  return opCategory(step.op());
}

TraceRecorder::TraceRecorder(const Program &program, size_t localDevices,
                             int64_t runLimit)
    : program(program), runLimit(runLimit), origin(Clock::now()),
      events(localDevices) {
  size_t steps = leafRuns(program, program.steps) +
                 (program.training && program.training->sync
                      ? program.training->sync->steps.size()
                      : 0);
  int64_t runs =
      runLimit > 0 ? std::min(runLimit, kReservedRuns) : kReservedRuns;
  for (std::vector<TraceEvent> &device : events)
    device.reserve(steps * static_cast<size_t>(runs));
}

bool TraceRecorder::beginRun(const RunContext &context) {
  ++runsSeen;
  currentEval = context.eval ? 1 : 0;
  currentRun = context.run;
  return runLimit == 0 || runsSeen <= runLimit;
}

void TraceRecorder::alignClock() {
  if (aligned)
    return;
  aligned = true;
  origin = Clock::now();
}

std::string TraceRecorder::json(const std::vector<int64_t> &localIds,
                                ProcessGroup *processes) const {
  std::string out = "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"program\":" +
                    nlohmann::json(program.name).dump() + ",\"mesh\":\"" +
                    program.mesh.str() +
                    "\"},\n\"traceEvents\":[\n"
                    "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":0,"
                    "\"args\":{\"sort_index\":0}}";
  if (!processes) {
    out += processMetadata(0, "meshrun (" + std::to_string(localIds.size()) +
                                  " devices)");
    for (size_t d = 0; d < localIds.size(); ++d)
      appendEvents(out, program, 0, localIds[d], events[d].data(),
                   events[d].size());
    return out + "\n]}\n";
  }
  // One device per process, the same runs and steps on each: the same
  // number of events, which gatherToRoot needs. Checked first.
  const std::vector<TraceEvent> &mine = events[0];
  uint64_t count = mine.size();
  std::vector<char> counts = processes->gatherToRoot(&count, sizeof(count));
  std::string error;
  for (size_t r = 0; r < counts.size() / sizeof(count); ++r) {
    uint64_t theirs;
    std::memcpy(&theirs, counts.data() + r * sizeof(count), sizeof(count));
    if (theirs != count && error.empty())
      error = "--trace: rank " + std::to_string(r) + " recorded " +
              std::to_string(theirs) + " steps but rank 0 " +
              std::to_string(count);
  }
  if (std::string agreed = processes->agreeOnError(error); !agreed.empty())
    throw RuntimeError(agreed);
  std::vector<char> all = processes->gatherToRoot(
      mine.data(), static_cast<int64_t>(count * sizeof(TraceEvent)));
  if (processes->rank() != 0)
    return "";
  for (int64_t rank = 0; rank < processes->size(); ++rank) {
    out += processMetadata(rank, processes->transport() + " rank " +
                                     std::to_string(rank));
    appendEvents(
        out, program, rank, rank,
        reinterpret_cast<const TraceEvent *>(all.data()) + rank * count, count);
  }
  return out + "\n]}\n";
}

} // namespace meshc::runtime
