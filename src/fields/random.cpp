// Counter-based random fields: splitmix64 of (seed, global site, component).
#include "src/fields/random.h"

#include <cmath>
#include <string>

#include "src/core/error.h"
#include "src/core/memory.h"

namespace latke {

namespace {
std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
}  // namespace

std::uint64_t random_bits(std::uint64_t seed, std::uint64_t key, std::uint64_t k) { return mix(mix(seed ^ mix(key)) + k); }

namespace {
double uniform(std::uint64_t seed, std::uint64_t key, std::uint64_t k) {
  const std::uint64_t h = random_bits(seed, key, k);
  return (static_cast<double>(h >> 11) + 0.5) * 0x1.0p-53;  // (0, 1)
}
/// Two Gaussians (Box-Muller) from counters k and k + 1.
Complex<double> gaussian_pair(std::uint64_t seed, std::uint64_t key, std::uint64_t k) {
  const double r = std::sqrt(-2.0 * std::log(uniform(seed, key, k)));
  const double phi = 2.0 * M_PI * uniform(seed, key, k + 1);
  return {r * std::cos(phi), r * std::sin(phi)};
}
}  // namespace

std::uint64_t global_site(const Lattice& lat, long local_full) {
  const Coords c = lat.coords_of(local_full);
  const Coords& g = lat.global();
  std::uint64_t s = 0;
  for (int mu = 3; mu >= 0; --mu) s = s * g[mu] + (c[mu] + lat.offset()[mu]);
  return s;
}

void random_su3(std::uint64_t seed, std::uint64_t key, double spread, Complex<double> (&u)[9]) {
  for (int i = 0; i < 9; ++i) {
    const Complex<double> g = gaussian_pair(seed, key, 2 * i);
    u[i] = spread < 0 ? g : Complex<double>((i % 4 == 0 ? 1.0 : 0.0) + spread * g.re, spread * g.im);
  }
  // Gram-Schmidt on rows 0 and 1, row 2 = conj(row0 x row1): unitary with det 1.
  auto normalize = [&](int r) {
    double n = 0;
    for (int j = 0; j < 3; ++j) n += norm2(u[3 * r + j]);
    n = 1.0 / std::sqrt(n);
    for (int j = 0; j < 3; ++j) u[3 * r + j] = n * u[3 * r + j];
  };
  normalize(0);
  Complex<double> p;
  for (int j = 0; j < 3; ++j) p += conj_mul(u[j], u[3 + j]);
  for (int j = 0; j < 3; ++j) u[3 + j] -= p * u[j];
  normalize(1);
  u[6] = conj(u[1] * u[5] - u[2] * u[4]);
  u[7] = conj(u[2] * u[3] - u[0] * u[5]);
  u[8] = conj(u[0] * u[4] - u[1] * u[3]);
}

std::vector<Complex<double>> random_gauge(const Lattice& lat, std::uint64_t seed, double spread) {
  const std::size_t n = static_cast<std::size_t>(lat.volume()) * 36;
  require_host_memory(n * sizeof(Complex<double>), "the gauge field of a " + std::to_string(lat.volume()) +
                                                       "-site local lattice in double precision");
  std::vector<Complex<double>> host(n);
#pragma omp parallel for schedule(static)
  for (long s = 0; s < lat.volume(); ++s) {
    const std::uint64_t gs = global_site(lat, s);
    for (int mu = 0; mu < 4; ++mu) {
      Complex<double> u[9];
      random_su3(seed, gs * 4 + mu, spread, u);
      for (int k = 0; k < 9; ++k) host[(s * 4 + mu) * 9 + k] = u[k];
    }
  }
  return host;
}

std::vector<Complex<double>> random_spinor(const Lattice& lat, std::uint64_t seed, int nspin, int ncolor) {
  const int n = nspin * ncolor;
  std::vector<Complex<double>> host(static_cast<std::size_t>(lat.volume()) * n);
#pragma omp parallel for schedule(static)
  for (long s = 0; s < lat.volume(); ++s) {
    const std::uint64_t gs = global_site(lat, s);
    for (int k = 0; k < n; ++k) host[s * n + k] = gaussian_pair(seed ^ 0x5bd1e995ull, gs, 2 * k);
  }
  return host;
}

}  // namespace latke
