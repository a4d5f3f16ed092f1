// Quenched gauge configurations: the Wilson gauge action S = beta sum_P (1 - Re tr U_P / 3)
// sampled by Cabibbo-Marinari pseudo-heatbath (Creutz / Kennedy-Pendleton SU(2) heat bath
// in the three SU(2) subgroups) and over-relaxation, on the CPU or the GPU from one kernel
// source, distributed over the ranks of the lattice.
//
// A sweep is one heat-bath pass followed by `overrelax` over-relaxation passes. A pass
// updates, for mu = 0..3 and parity = even, odd, all links U_mu(x) of that direction and
// parity at once (their staples do not involve each other), then refreshes the ghost copies
// of U_mu. Each updated link is projected back onto SU(3).
//
// Random numbers: Philox4x32-10 keyed by the seed, with counter (global site, heat-bath pass
// number, direction, subgroup, draw). A run with a given seed, start and number of passes
// therefore gives the same configuration bit for bit on any process grid (same backend, same
// build); CPU and GPU runs differ in the last bits of log/cos and then decorrelate, and agree
// statistically.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "src/core/backend.h"
#include "src/core/complex.h"
#include "src/core/lattice.h"
#include "src/fields/gauge_observables.h"

namespace latke {

/// cold: every link 1; hot: Haar-like random SU(3) links; weak: SU(3) projections of
/// 1 + spread G with G Gaussian (random_gauge in random.h).
enum class GaugeStart { cold, hot, weak };

const char* to_string(GaugeStart s);
/// @brief "cold", "hot" or "weak"; anything else is an error naming the value.
GaugeStart parse_gauge_start(const std::string& name);

struct HeatbathParam {
  double beta = 6.0;
  int overrelax = 4;         ///< over-relaxation passes per heat-bath pass
  std::uint64_t seed = 1;    ///< keys every random number, and the hot and weak starts
  double weak_spread = 0.2;  ///< spread of the weak-field start
};

class QuenchedGenerator {
 public:
  /// @brief A generator on backend b; the links start cold until start() or set_links().
  QuenchedGenerator(std::shared_ptr<const Lattice> lattice, Backend b, const HeatbathParam& param);
  ~QuenchedGenerator();
  QuenchedGenerator(const QuenchedGenerator&) = delete;
  QuenchedGenerator& operator=(const QuenchedGenerator&) = delete;

  /// @brief Start a chain: links from s, heat-bath pass counter 0.
  void start(GaugeStart s);
  /// @brief Continue a chain from links (host array over the local volume, conventions.h
  /// layout) after `passes_done` heat-bath passes, which keys the next random numbers.
  void set_links(const std::vector<Complex<double>>& links, long passes_done = 0);
  /// @brief The current links as a host array over the local volume.
  std::vector<Complex<double>> links() const;

  /// @brief n sweeps: each a heat-bath pass and param.overrelax over-relaxation passes.
  void sweep(int n = 1);
  /// @brief One heat-bath pass over every link.
  void heatbath_pass();
  /// @brief One over-relaxation pass over every link (leaves the action unchanged).
  void overrelax_pass();

  /// @brief Observables of the current links (collective).
  GaugeObservables measure() const;
  /// @brief The Wilson gauge action of the current links (collective).
  double action() const;

  /// Heat-bath passes done so far in this chain (the next one uses this number).
  long heatbath_passes() const;
  /// Link updates (heat bath and over-relaxation, all ranks) made by this object.
  double link_updates() const;
  const HeatbathParam& param() const;
  const Lattice& lattice() const;
  Backend backend() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// @brief A thermalized quenched configuration for tests and demonstrations: `sweeps`
/// sweeps of `param` from a hot start, as a host array over this rank's local volume. With a
/// non-empty cache_dir the configuration is read from
///   cache_dir/quenched_<X>x<Y>x<Z>x<T>_b<beta>_or<overrelax>_s<seed>_n<sweeps>.nersc
/// when that file exists (and verified), and otherwise generated and written there (double
/// precision NERSC, written to a temporary name and renamed). Collective.
/// @param loaded when not null, set to whether the cache file was used.
/// progress (may be null) hears (sweeps done, sweeps) about ten times while it generates; the
/// configuration is the same with or without it.
std::vector<Complex<double>> thermalized_configuration(std::shared_ptr<const Lattice> lattice, Backend b,
                                                       const HeatbathParam& param, int sweeps,
                                                       const std::string& cache_dir, bool* loaded = nullptr,
                                                       const std::function<void(int, int)>& progress = nullptr);

/// @brief The cache file name thermalized_configuration uses (without the directory).
std::string thermalized_cache_name(const Coords& dims, const HeatbathParam& param, int sweeps, Backend b);

}  // namespace latke
