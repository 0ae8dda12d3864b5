//===- ScheduleForOverlap.h - A loop body's ops ordered for overlap -*- C++
//-*-===//
//
// The order mtf-overlap-collectives starts and waits for collectives in:
// a list scheduler that moves a body's ops, uses after definitions, so that
// each collective the body reads the result of starts as soon as its inputs
// are made, and the ops that do not need it run before its first reader.
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_LOWERING_SCHEDULEFOROVERLAP_H
#define MESHC_LOWERING_SCHEDULEFOROVERLAP_H

#include "mlir/IR/Block.h"

namespace meshc {

/// Reorders the ops of loop body `body` (partitioned, before any start or
/// wait is placed) for overlap. Within each run of ops that have no effect
/// but their results, it picks, of the ops whose operands are made: a
/// collective; else an op that reads no collective in flight, leading to
/// the collective (read in the body, or yielded as a carried value) that
/// came first; else any op that
/// reads none in flight; else the first in the old order. A collective that
/// reads its inputs until its wait comes after the other readers of its
/// inputs. Ops that stay in place (waits, started collectives, resume
/// points, loops, writes) bound the runs.
void scheduleForOverlap(mlir::Block &body);

} // namespace meshc

#endif // MESHC_LOWERING_SCHEDULEFOROVERLAP_H
