// Discrete Fourier transforms over chosen dimensions of complex fields on the distributed lattice:
// what the Fourier-accelerated gauge fixing (gauge_fixing.h) needs. One source for both backends.
//
// A field is `ncomp` complex components, component-major, each over this rank's local volume in
// lexicographic order (x fastest: LocalGeometry::full_index). A transform along a dimension whole
// on the rank runs the mixed-radix Stockham algorithm on every local line: one out-of-place pass
// per radix (4, 2, 3, 5 with unrolled butterflies; 7, 11 and 13 by a loop), each a kernel over all
// lines and components at once, between the field and one scratch field. Local extents with a
// prime factor above 13 are refused.
//
// Along a dimension split over P ranks (global extent L = P l, rank a holding x = a l + j) the
// transform is the four-step one: a length-P transform across the ranks (each rank scales its
// field by exp(-2 pi i a' a / P) for every a', and a reduce-scatter over the ranks of that
// dimension leaves rank a' the sum), a twiddle exp(-2 pi i a' j / L), and the local transform
// of length l. Rank a' then holds the momenta k = a' + P b at local position b (momentum()); the
// inverse runs the steps backwards and returns the fields to position space in place. On a GPU
// the reduce-scatter takes the device buffers where MPI is CUDA-aware (mpi_cuda_aware()), and
// goes through pinned host memory otherwise.
#pragma once

#include <mpi.h>

#include <vector>

#include "src/core/backend.h"
#include "src/core/complex.h"
#include "src/core/lattice.h"
#include "src/core/memory.h"

namespace latke {

/// Where a transformed field's momenta are: along mu, local position b holds the global momentum
/// k = offset[mu] + step[mu] b of the extent global[mu] (step 1 and offset 0 where mu is whole).
struct MomentumLayout {
  int offset[4];
  int step[4];
  int global[4];
};

class LatticeFFT {
 public:
  /// @param dims mask of the dimensions transformed (bit mu).
  /// @param ncomp components of the fields transformed.
  LatticeFFT(const Lattice& lat, Backend b, unsigned dims, int ncomp);
  ~LatticeFFT();
  LatticeFFT(const LatticeFFT&) = delete;
  LatticeFFT& operator=(const LatticeFFT&) = delete;

  /// @brief data <- sum_x exp(-2 pi i k.x / L) data(x) over the chosen dimensions, in place, the
  /// momenta laid out as momentum() says. Collective over the ranks of each split dimension.
  void forward(Complex<double>* data) { run(data, -1); }
  /// @brief The same with exp(+2 pi i k.x / L) from momenta back to positions, unnormalised
  /// (forward then inverse multiplies by the product of the transformed global extents).
  void inverse(Complex<double>* data) { run(data, +1); }
  MomentumLayout momentum() const;

  /// @brief The radices of a length's passes (largest first), or empty where a prime factor
  /// exceeds 13.
  static std::vector<int> radices(int n);
  /// @brief Whether every dimension in dims has a local extent radices() takes.
  static bool supports(const Lattice& lat, unsigned dims);

 private:
  void run(Complex<double>* data, int sign);
  /// Sites between neighbours along mu in the lexicographic local order.
  long stride_of(int mu) const;
  void local_passes(Complex<double>* data, int mu, int sign);
  void across_ranks(Complex<double>* data, int mu, int sign);
  const Lattice& lat_;
  Backend backend_;
  unsigned dims_;
  int ncomp_;
  Buffer scratch_;
  MPI_Comm line_comm_[4] = {MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL};
  Buffer send_, recv_, send_host_, recv_host_;  ///< the reduce-scatter's (host copies on a GPU)
};

}  // namespace latke
