//===- StartedCollectives.h - Overlapped collectives ------------*- C++ -*-===//
//
// A collective step with "start": T runs beside the steps after it until the
// wait step that names ticket T (XLA's all-reduce-start / all-reduce-done):
// the device computes while the collective communicates. The loader checks
// here that such a program means the same as the one without "start" and
// "wait" (docs/mprog.md#overlapped-collectives):
//
//   - every started ticket is waited exactly once, by a later wait step of
//     the same step list (the top level or one loop body) and phase, and a
//     wait names only tickets started before it there;
//   - no step between a start and its wait reads or writes a byte of the
//     collective's buffers (loops' moves included), so the collective may
//     run at any moment in that span;
//   - a ticket is started by one step only.
//
// It also gives each started collective a scratch area of its own, past
// what the steps that run to completion use, so that they never share one.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_RUNTIME_STARTEDCOLLECTIVES_H
#define MESHC_RUNTIME_STARTEDCOLLECTIVES_H

#include "runtime/JsonNode.h"
#include "runtime/Program.h"

namespace meshc::runtime {

/// Checks the started collectives and waits of `program` (its steps parsed
/// and numbered; `steps` is the "steps" array, for messages), failing at
/// the offending step, and plans their scratch: sets Step::scratchOffset of
/// every started collective and grows program.scratchBytes to cover them.
void planStartedCollectives(const JsonNode &steps, Program &program);

/// True when `program` starts some collective (and so has waits).
bool startsCollectives(const Program &program);

} // namespace meshc::runtime

#endif // MESHC_RUNTIME_STARTEDCOLLECTIVES_H
