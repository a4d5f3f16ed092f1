// Site fields on the backend with a ghost layer one site deep in every direction, corners
// included: ExtendedSites holds any number of complex components per site; ExtendedLinks, its
// four links per site, is the working field of the gauge generator, the observables and link
// smearing, and the quark smearing keeps its spinors in one too. Every site's staples,
// plaquettes and neighbours are then a fixed pattern of loads, the same on every rank and in
// every process grid.
//
// Layout (private to these users): extended extents E_mu = L_mu + 2, local site x at extended
// coordinates x + (1,1,1,1), extended index
//   e = ((c_t E_z + c_z) E_y + c_y) E_x + c_x,
// and component k at data[k * ext_volume + e], so that neighbouring threads (sites) read
// neighbouring words; for links, complex entry 3 row + col of U_mu is component mu * 9 + 3 row
// + col.
//
// refresh_components(k_begin, k_end, parity) brings the ghosts of components k_begin..k_end-1
// (of the sites of one parity, or of both) up to date: for each split dimension in turn, its
// two faces (over the full extended extents of the other dimensions, so corners of split
// dimensions travel with them) are packed on the comm stream, exchanged with the neighbours
// through a HaloExchange (peer to peer where the neighbour's GPU is reachable, else CUDA-aware
// or staged MPI) and unpacked; then one kernel copies the periodic images along every
// dimension that is not split, the received ghost slices included. ExtendedLinks::refresh
// names links mu_begin..mu_end-1 instead.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "src/core/algebra.h"
#include "src/core/halo.h"
#include "src/core/indexing.h"
#include "src/core/lattice.h"
#include "src/core/memory.h"

namespace latke::gauge {

/// A kernel's view of an extended site field (trivially copyable).
struct ExtSites {
  Complex<double>* data;
  long ext_volume;
  int E[4];
  long stride[4];  ///< index step of one site in direction mu

  /// Extended index of local coordinates c (each in [-1, L_mu]).
  LATKE_HOST_DEVICE LATKE_INLINE long index_of_local(const int (&c)[4]) const {
    return (c[0] + 1) + (c[1] + 1) * stride[1] + (c[2] + 1) * stride[2] + (c[3] + 1) * stride[3];
  }
  /// Component k of extended site e.
  LATKE_HOST_DEVICE LATKE_INLINE Complex<double>& at(int k, long e) const {
    return data[static_cast<long>(k) * ext_volume + e];
  }
};

/// A kernel's view of the extended links.
struct ExtLinks : ExtSites {
  LATKE_HOST_DEVICE LATKE_INLINE void load(long e, int mu, ColorMatrix<double, 3>& u) const {
    const Complex<double>* p = data + static_cast<long>(mu) * 9 * ext_volume + e;
    LATKE_UNROLL for (int k = 0; k < 9; ++k) u.e[k / 3][k % 3] = p[k * ext_volume];
  }
  LATKE_HOST_DEVICE LATKE_INLINE void save(long e, int mu, const ColorMatrix<double, 3>& u) const {
    Complex<double>* p = data + static_cast<long>(mu) * 9 * ext_volume + e;
    LATKE_UNROLL for (int k = 0; k < 9; ++k) p[k * ext_volume] = u.e[k / 3][k % 3];
  }
};

/// `components` complex numbers per site, with ghosts.
class ExtendedSites {
 public:
  /// @param ghost_dims bit mu set: refresh brings the ghosts across dimension mu up to date
  ///        (the others stay unset; corners need every dimension).
  ExtendedSites(const Lattice& lat, Backend backend, int components, unsigned ghost_dims = 0xF);

  /// @brief Bring the ghosts of components k_begin .. k_end - 1 up to date: of the sites of
  /// one parity (those an update wrote), or of both (parity -1).
  /// @param overlap if given, work on the compute stream that neither reads a ghost of a split
  ///        dimension nor writes a site on a split face (the rest of an update): it is
  ///        launched once the faces are packed, and the exchanges and unpacking run on the
  ///        comm stream meanwhile; the compute stream waits for the ghosts after it, and the
  ///        periodic images of unsplit dimensions are copied after that.
  /// @param dims if non-zero, only the ghosts across these dimensions (a subset of ghost_dims:
  ///        a sweep that reads no others, as Coulomb gauge fixing reads none across t)
  void refresh_components(int k_begin, int k_end, int parity = -1, const std::function<void()>& overlap = {},
                          unsigned dims = 0);

  ExtSites sites() const { return sites_; }
  int components() const { return components_; }
  const Lattice& lattice() const { return lat_; }
  Backend backend() const { return backend_; }
  LocalGeometry geometry() const { return LocalGeometry::of(lat_); }

 protected:
  const Lattice& lat_;
  Backend backend_;
  int components_;
  unsigned ghost_dims_;
  Buffer data_;
  ExtSites sites_{};
  /// Exchanges per payload (components per site, one parity or both) and split dimension,
  /// made on first use.
  std::map<std::array<int, 3>, std::unique_ptr<HaloExchange>> halo_;
  HaloExchange& halo_for(int ncomp, bool one_parity, int d);
};

/// The four links of every site (36 components).
class ExtendedLinks : public ExtendedSites {
 public:
  ExtendedLinks(const Lattice& lat, Backend backend);

  /// @brief Set the links from a host array over the local volume (conventions.h layout)
  /// and fill the ghosts.
  void upload(const std::vector<Complex<double>>& host);
  /// @brief The local links as a host array (conventions.h layout).
  std::vector<Complex<double>> download() const;
  /// @brief Bring the ghosts of links mu_begin .. mu_end - 1 up to date (refresh_components).
  void refresh(int mu_begin = 0, int mu_end = 4, int parity = -1, const std::function<void()>& overlap = {}) {
    refresh_components(9 * mu_begin, 9 * mu_end, parity, overlap);
  }

  ExtLinks view() const {
    ExtLinks v;
    static_cast<ExtSites&>(v) = sites_;
    return v;
  }
};

}  // namespace latke::gauge
