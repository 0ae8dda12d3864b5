//===- MpiTestMain.h - gtest under mpirun -----------------------*- C++ -*-===//
//
// The process group of the MPI tests (MpiTestMain.cpp sets it up).
//
//===----------------------------------------------------------------------===//

#ifndef MESHC_TESTS_UNIT_MPI_MPITESTMAIN_H
#define MESHC_TESTS_UNIT_MPI_MPITESTMAIN_H

#include "runtime/mpi/MpiCollectives.h"

namespace meshc::runtime::mpitest {

/// MPI_COMM_WORLD of this test run.
MpiProcessGroup &world();

} // namespace meshc::runtime::mpitest

#endif // MESHC_TESTS_UNIT_MPI_MPITESTMAIN_H
