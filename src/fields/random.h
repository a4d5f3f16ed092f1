// Reproducible random fields for tests and benchmarks. Every number is a function of
// (seed, global site, component) through a counter-based hash, so a field is the same on
// any process grid and any backend.
#pragma once

#include <cstdint>
#include <vector>

#include "src/core/complex.h"
#include "src/core/lattice.h"

namespace latke {

/// @brief Links over this rank's local volume (lexicographic, conventions.h). spread < 0:
/// independent random SU(3) matrices; spread >= 0: SU(3) projection of 1 + spread * G with
/// G Gaussian (a smooth "weak" field; spread = 0 is the unit gauge).
std::vector<Complex<double>> random_gauge(const Lattice& lat, std::uint64_t seed, double spread = -1.0);

/// @brief Gaussian spinor (unit variance per real) over this rank's local volume.
std::vector<Complex<double>> random_spinor(const Lattice& lat, std::uint64_t seed, int nspin = 4,
                                           int ncolor = 3);

/// @brief A random SU(3) matrix (row-major) from (seed, key); spread as in random_gauge.
void random_su3(std::uint64_t seed, std::uint64_t key, double spread, Complex<double> (&u)[9]);

/// @brief 64 random bits, a function of (seed, key, counter k) only.
std::uint64_t random_bits(std::uint64_t seed, std::uint64_t key, std::uint64_t k);

/// @brief Global lexicographic index of local site `local_full` of this rank.
std::uint64_t global_site(const Lattice& lat, long local_full);

}  // namespace latke
