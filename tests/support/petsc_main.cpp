// GoogleTest main for tests of Latke's PETSc face: PETSc and Latke initialized around the
// run, output from rank 0 only, a test failing on any rank fails on all.
#include <gtest/gtest.h>
#include <petscsys.h>

#include "latke/latke.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (PetscInitialize(&argc, &argv, nullptr, nullptr)) return 1;
  if (LatkeInitialize()) return 1;
  int rank = 0;
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int local = RUN_ALL_TESTS(), global = 0;
  MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_MAX, PETSC_COMM_WORLD);
  LatkeFinalize();
  PetscFinalize();
  return global;
}
