//===- StepClockTest.cpp - One device's clocks in the cost model ----------===//
//
// StepClock (lowering/ProgramCost.h): a compute stream and one lane per
// link class. Started collectives of different classes run beside each
// other; those of one class queue; a blocking one holds the device.
//
//===----------------------------------------------------------------------===//

#include "lowering/ProgramCost.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"

#include <gtest/gtest.h>

namespace {

using meshc::StepClock;

/// Distinct operations to key the clock's collectives by.
class StepClockTest : public ::testing::Test {
protected:
  StepClockTest() {
    context.allowUnregisteredDialects();
    mlir::OpBuilder builder(&context);
    for (int i = 0; i < 4; ++i)
      ops.push_back(builder.create(mlir::OperationState(
          builder.getUnknownLoc(), "test.collective" + std::to_string(i))));
  }
  ~StepClockTest() override {
    for (mlir::Operation *op : ops)
      op->destroy();
  }
  mlir::MLIRContext context;
  std::vector<mlir::Operation *> ops;
};

TEST_F(StepClockTest, StartedCollectivesOfTwoLinksRunBesideEachOther) {
  StepClock clock;
  EXPECT_EQ(clock.collective(ops[0], 3.0, true, StepClock::InNode), 0.0);
  EXPECT_EQ(clock.collective(ops[1], 5.0, true, StepClock::BetweenNodes), 0.0);
  EXPECT_EQ(clock.compute(1.0), 0.0);
  EXPECT_EQ(clock.wait(ops[0]), 1.0);
  EXPECT_EQ(clock.now(), 3.0);
  EXPECT_EQ(clock.wait(ops[1]), 3.0);
  EXPECT_EQ(clock.now(), 5.0);
  EXPECT_EQ(clock.end(), 5.0);
}

TEST_F(StepClockTest, CollectivesOfOneLinkQueue) {
  StepClock clock;
  clock.collective(ops[0], 3.0, true, StepClock::BetweenNodes);
  EXPECT_EQ(clock.collective(ops[1], 2.0, true, StepClock::BetweenNodes), 3.0);
  clock.wait(ops[1]);
  EXPECT_EQ(clock.now(), 5.0);
}

TEST_F(StepClockTest, ABlockingCollectiveWaitsOnlyForItsOwnLink) {
  StepClock clock;
  clock.collective(ops[0], 10.0, true, StepClock::BetweenNodes);
  // A blocking in-node collective starts at once and holds the device.
  EXPECT_EQ(clock.collective(ops[1], 2.0, false, StepClock::InNode), 0.0);
  EXPECT_EQ(clock.now(), 2.0);
  // A blocking one between nodes queues behind the started one.
  EXPECT_EQ(clock.collective(ops[2], 1.0, false, StepClock::BetweenNodes),
            10.0);
  EXPECT_EQ(clock.now(), 11.0);
  EXPECT_EQ(clock.end(), 11.0);
}

TEST_F(StepClockTest, WithoutOverlapEveryCollectiveBlocks) {
  StepClock clock(/*overlaps=*/false);
  clock.collective(ops[0], 3.0, true, StepClock::InNode);
  EXPECT_EQ(clock.now(), 3.0);
  EXPECT_EQ(clock.collective(ops[1], 4.0, true, StepClock::BetweenNodes), 3.0);
  EXPECT_EQ(clock.wait(ops[1]), 7.0);
  EXPECT_EQ(clock.now(), 7.0);
}

TEST_F(StepClockTest, AdvanceMovesTheRepeatedStepsInFlight) {
  StepClock clock;
  clock.collective(ops[0], 4.0, true, StepClock::InNode);       // before
  clock.collective(ops[1], 4.0, true, StepClock::BetweenNodes); // repeated
  clock.compute(1.0);
  clock.advance(10.0, {ops[1]});
  EXPECT_EQ(clock.now(), 11.0);
  // ops[0] ran on from before the repeated steps; ops[1] is carried.
  EXPECT_EQ(clock.wait(ops[0]), 11.0);
  EXPECT_EQ(clock.now(), 11.0);
  clock.wait(ops[1]);
  EXPECT_EQ(clock.now(), 14.0);
  EXPECT_EQ(clock.end(), 14.0);
}

TEST_F(StepClockTest, AdvanceKeepsALaneWhoseLastCollectiveCameBefore) {
  // A collective between nodes started before a loop whose iterations
  // queue theirs in a node: the loop's iterations do not push its end.
  StepClock clock;
  clock.collective(ops[0], 10.0, true, StepClock::BetweenNodes);
  clock.collective(ops[1], 0.5, true, StepClock::InNode);
  clock.compute(1.0);
  clock.wait(ops[1]);
  clock.advance(5.0, {ops[1]});
  EXPECT_EQ(clock.now(), 6.0);
  EXPECT_EQ(clock.end(), 10.0);
  EXPECT_EQ(clock.wait(ops[0]), 6.0);
  EXPECT_EQ(clock.now(), 10.0);
}

} // namespace
