//===- StartedCollectives.cpp - Collectives that overlap later steps ------===//

#include "runtime/StartedCollectives.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace meshc::runtime {

namespace {

/// A byte range [begin, end) of the arena.
struct Range {
  int64_t begin = 0, end = 0;
  bool overlaps(const Range &other) const {
    return begin < other.end && other.begin < end;
  }
};

/// The operands a started collective keeps busy until its wait: all of
/// them, or for one that copies its inputs into its scratch where it starts
/// (readsInputsAtStart) those it writes.
std::vector<const Operand *> busyOperands(const Step &step) {
  if (!readsInputsAtStart(step.op()))
    return step.operands();
  std::vector<const Operand *> busy = step.outputs();
  auto outs = [&](const std::vector<MovePart> &parts) {
    for (const MovePart &part : parts)
      busy.push_back(&part.out);
  };
  if (const auto *gather = std::get_if<AllGatherAttrs>(&step.attrs))
    outs(gather->parts);
  if (const auto *scatter = std::get_if<ReduceScatterAttrs>(&step.attrs))
    outs(scatter->parts);
  return busy;
}

/// A started collective between its start and its wait.
struct InFlight {
  int64_t ticket = 0;
  const Step *start = nullptr;
  /// The start step's node, for messages.
  std::optional<JsonNode> node;
  /// The step list it was started in (its depth of loop nesting).
  size_t list = 0;
  std::vector<std::pair<size_t, Range>> ranges;
  Range scratch;
  /// Completed by a carried wait (in the next iteration or when the loop
  /// ends), not by the end of its body.
  bool carried = false;
};

class Planner {
public:
  explicit Planner(Program &program) : program(program) {
    for (size_t i = 0; i < program.stepCount(); ++i)
      if (const Step &step = program.step(i);
          step.ticket < 0 && step.op() != OpKind::Loop)
        scratchEnd = std::max(scratchEnd, align(step.scratchBytes));
    firstSlot = scratchEnd;
  }

  void walk(const std::vector<JsonNode> &nodes, std::vector<Step> &steps,
            size_t list) {
    // The collectives a carried wait completes are in flight from the
    // body's first step (started in the iteration before) to that wait.
    std::vector<int64_t> carriedHere = carryIn(nodes, steps, list);
    for (size_t i = 0; i < steps.size(); ++i) {
      Step &step = steps[i];
      const JsonNode &node = nodes[i];
      if (step.op() == OpKind::Loop) {
        walk(node.member("body").elements(),
             program.loopBodies[step.as<LoopAttrs>().body], list + 1);
        continue;
      }
      if (step.op() == OpKind::Wait) {
        finish(node, step, list);
        continue;
      }
      requireUntouched(node, step);
      if (step.ticket >= 0)
        begin(node, step, list);
    }
    for (const InFlight &flight : inFlight)
      if (flight.list == list && !flight.carried)
        flight.node->member("start").fail(
            describe(flight) + " is not waited for by the end of its " +
            (list == 0 ? "steps" : "loop body") +
            "; a wait step there must complete it");
    // The carried ones complete when the loop ends; their scratch is free
    // after it.
    inFlight.erase(std::remove_if(inFlight.begin(), inFlight.end(),
                                  [&](const InFlight &flight) {
                                    return flight.list == list;
                                  }),
                   inFlight.end());
    for (int64_t ticket : carriedHere) {
      Range scratch = carried.at(ticket);
      reserved.erase(std::remove_if(reserved.begin(), reserved.end(),
                                    [&](const Range &range) {
                                      return range.begin == scratch.begin &&
                                             range.end == scratch.end;
                                    }),
                     reserved.end());
    }
  }

  int64_t scratchBytes() const { return scratchEnd; }

  /// Checks the carried waits of step list `list` (a loop body's; a carried
  /// wait elsewhere is refused) and puts each collective they complete in
  /// flight, its scratch reserved for the whole body. Returns their
  /// tickets.
  std::vector<int64_t> carryIn(const std::vector<JsonNode> &nodes,
                               std::vector<Step> &steps, size_t list) {
    std::vector<int64_t> tickets;
    for (size_t i = 0; i < steps.size(); ++i) {
      if (steps[i].op() != OpKind::Wait || !steps[i].as<WaitAttrs>().carried)
        continue;
      const JsonNode &node = nodes[i];
      if (list == 0)
        node.member("carried").fail(
            "a carried wait completes collectives of a loop body's iteration "
            "before; this wait is not in a loop body");
      std::vector<JsonNode> names = node.member("tickets").elements();
      const std::vector<int64_t> &waited = steps[i].as<WaitAttrs>().tickets;
      for (size_t t = 0; t < waited.size(); ++t) {
        size_t at = i + 1;
        while (at < steps.size() && steps[at].ticket != waited[t])
          ++at;
        std::string ticket = "ticket " + std::to_string(waited[t]);
        if (at == steps.size())
          names[t].fail(ticket +
                        " is not started after this carried wait in its loop "
                        "body; a carried wait completes the collectives the "
                        "body starts after it, in the iteration before");
        if (auto other = carriedBy.find(waited[t]); other != carriedBy.end())
          names[t].fail(ticket + " is waited for by the carried wait " +
                        program.stepLabel(other->second->index) + " already");
        // (A body's steps all run in its loop's phase: the loader's rule.)
        InFlight flight = inFlightOf(nodes[at], steps[at], list);
        flight.carried = true;
        flight.scratch = reserve(steps[at].scratchBytes);
        if (flight.scratch.end > flight.scratch.begin)
          reserved.push_back(flight.scratch);
        carried[waited[t]] = flight.scratch;
        carriedBy[waited[t]] = &steps[i];
        inFlight.push_back(std::move(flight));
        tickets.push_back(waited[t]);
      }
    }
    return tickets;
  }

private:
  static int64_t align(int64_t bytes) { return (bytes + 63) / 64 * 64; }

  Range rangeOf(const Operand &operand) const {
    const Buffer &buffer = program.buffers[operand.buffer];
    int64_t reach =
        program.loopReach.empty() ? 0 : program.loopReach[operand.buffer];
    return {buffer.offset, buffer.offset + buffer.bytes + reach};
  }

  std::string describe(const InFlight &flight) const {
    return "ticket " + std::to_string(flight.ticket) + " (" +
           program.stepLabel(flight.start->index) + ", " +
           opName(flight.start->op()) + ")";
  }

  /// Fails when `step` uses a byte of a collective in flight.
  void requireUntouched(const JsonNode &node, const Step &step) const {
    for (const Operand *operand : step.operands()) {
      Range range = rangeOf(*operand);
      for (const InFlight &flight : inFlight)
        for (const auto &[buffer, busy] : flight.ranges)
          if (range.overlaps(busy))
            node.fail("buffer " +
                      std::to_string(program.buffers[operand->buffer].id) +
                      " [" + std::to_string(range.begin) + ", " +
                      std::to_string(range.end) + ") overlaps buffer " +
                      std::to_string(program.buffers[buffer].id) + " [" +
                      std::to_string(busy.begin) + ", " +
                      std::to_string(busy.end) + ") of " + describe(flight) +
                      ", which runs until its wait; use it after the wait");
    }
  }

  /// The started collective `step`, in flight (its scratch still to place).
  InFlight inFlightOf(const JsonNode &node, const Step &step,
                      size_t list) const {
    InFlight flight;
    flight.ticket = step.ticket;
    flight.start = &step;
    flight.node = node;
    flight.list = list;
    for (const Operand *operand : busyOperands(step))
      flight.ranges.emplace_back(operand->buffer, rangeOf(*operand));
    return flight;
  }

  /// `bytes` of scratch, first fit above the scratch of the steps that run
  /// to completion, beside that of the collectives in flight and reserved.
  Range reserve(int64_t bytes) {
    bytes = align(bytes);
    if (bytes == 0)
      return {firstSlot, firstSlot};
    std::vector<Range> taken(reserved);
    for (const InFlight &other : inFlight)
      if (other.scratch.end > other.scratch.begin)
        taken.push_back(other.scratch);
    std::sort(taken.begin(), taken.end(),
              [](const Range &a, const Range &b) { return a.begin < b.begin; });
    int64_t at = firstSlot;
    for (const Range &range : taken)
      if (Range{at, at + bytes}.overlaps(range))
        at = range.end;
    scratchEnd = std::max(scratchEnd, at + bytes);
    return {at, at + bytes};
  }

  void begin(const JsonNode &node, Step &step, size_t list) {
    auto [earlier, fresh] = started.emplace(step.ticket, &step);
    if (!fresh)
      node.member("start").fail(
          "ticket " + std::to_string(step.ticket) + " is started by " +
          program.stepLabel(earlier->second->index) +
          " already; each started collective has a ticket of its own");
    InFlight flight = inFlightOf(node, step, list);
    // A carried collective keeps the scratch reserved for it over the body.
    auto reservedFor = carried.find(step.ticket);
    flight.carried = reservedFor != carried.end();
    flight.scratch =
        flight.carried ? reservedFor->second : reserve(step.scratchBytes);
    step.scratchOffset = flight.scratch.begin;
    inFlight.push_back(std::move(flight));
  }

  void finish(const JsonNode &node, const Step &wait, size_t list) {
    std::vector<JsonNode> tickets = node.member("tickets").elements();
    const std::vector<int64_t> &names = wait.as<WaitAttrs>().tickets;
    for (size_t t = 0; t < names.size(); ++t) {
      auto flight =
          std::find_if(inFlight.begin(), inFlight.end(),
                       [&](const InFlight &f) { return f.ticket == names[t]; });
      std::string ticket = "ticket " + std::to_string(names[t]);
      if (!wait.as<WaitAttrs>().carried && carried.count(names[t]))
        tickets[t].fail(ticket +
                        " is completed by a carried wait; no other wait may "
                        "complete it");
      if (flight == inFlight.end())
        tickets[t].fail(ticket + (started.count(names[t])
                                      ? " is waited for already"
                                      : " is not started before this wait"));
      if (flight->list != list)
        tickets[t].fail(describe(*flight) +
                        " was started in another step list; a wait "
                        "completes the collectives started before it in its "
                        "own loop body (or at the top level)");
      if (flight->start->phase != wait.phase)
        tickets[t].fail(describe(*flight) + " runs in the " +
                        phaseName(flight->start->phase) +
                        " phase; its wait must too (this one is " +
                        phaseName(wait.phase) + ")");
      inFlight.erase(flight);
    }
  }

  Program &program;
  std::vector<InFlight> inFlight;
  std::map<int64_t, const Step *> started;
  /// The tickets carried waits complete -> the scratch reserved for them,
  /// and the carried wait.
  std::map<int64_t, Range> carried;
  std::map<int64_t, const Step *> carriedBy;
  /// The scratch of the carried collectives of the body being walked.
  std::vector<Range> reserved;
  int64_t firstSlot = 0, scratchEnd = 0;
};

} // namespace

void planStartedCollectives(const JsonNode &steps, Program &program) {
  if (!startsCollectives(program)) {
    // Waits with nothing started: the checks name the first.
    bool anyWait = false;
    for (size_t i = 0; i < program.stepCount() && !anyWait; ++i)
      anyWait = program.step(i).op() == OpKind::Wait;
    if (!anyWait)
      return;
  }
  Planner planner(program);
  planner.walk(steps.elements(), program.steps, 0);
  program.scratchBytes = std::max(program.scratchBytes, planner.scratchBytes());
}

bool startsCollectives(const Program &program) {
  for (size_t i = 0; i < program.stepCount(); ++i)
    if (program.step(i).ticket >= 0)
      return true;
  return false;
}

} // namespace meshc::runtime
