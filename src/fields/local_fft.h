// Discrete Fourier transforms over chosen dimensions of complex fields on this rank's local
// lattice, each dimension whole on the rank (not split by the process grid): what the
// Fourier-accelerated gauge fixing (gauge_fixing.h) needs. One source for both backends.
//
// A field is `ncomp` complex components, component-major, each over the local volume in
// lexicographic order (x fastest: LocalGeometry::full_index). A transform along dimension mu
// runs the mixed-radix Stockham algorithm on every line of the lattice along mu: one
// out-of-place pass per radix (4, 2, 3, 5 with unrolled butterflies; 7, 11 and 13 by a loop),
// each a kernel over all lines and components at once, between the field and one scratch
// field. Extents with a prime factor above 13 are refused.
#pragma once

#include <vector>

#include "src/core/backend.h"
#include "src/core/complex.h"
#include "src/core/lattice.h"
#include "src/core/memory.h"

namespace latke {

class LocalFFT {
 public:
  /// @param dims mask of the dimensions transformed (bit mu); each must be whole on the rank.
  /// @param ncomp components of the fields transformed.
  LocalFFT(const Lattice& lat, Backend b, unsigned dims, int ncomp);
  /// @brief data <- sum_x exp(-2 pi i k.x / L) data(x) over the chosen dimensions, in place.
  void forward(Complex<double>* data) { run(data, -1); }
  /// @brief The same with exp(+2 pi i k.x / L), unnormalised (forward then inverse multiplies by
  /// the product of the transformed extents).
  void inverse(Complex<double>* data) { run(data, +1); }

  /// @brief The radices of a length's passes (largest first), or empty where a prime factor
  /// exceeds 13.
  static std::vector<int> radices(int n);
  /// @brief Whether every dimension in dims is whole on the rank and of an extent radices() takes.
  static bool supports(const Lattice& lat, unsigned dims);

 private:
  void run(Complex<double>* data, int sign);
  const Lattice& lat_;
  Backend backend_;
  unsigned dims_;
  int ncomp_;
  Buffer scratch_;
};

}  // namespace latke
