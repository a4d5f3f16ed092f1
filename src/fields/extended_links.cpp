// Extended site fields: ghost refresh; extended links: upload and download (extended_links.h).
#include "src/fields/extended_links.h"

#include <mpi.h>

#include <algorithm>

#include "src/core/error.h"
#include "src/core/launch.h"

namespace latke::gauge {

namespace {

/// Local links between the lexicographic layout (conventions.h; on the backend) and the
/// extended field.
struct LexCopyKernel {
  ExtLinks ext;
  Complex<double>* host;
  LocalGeometry geom;
  bool to_ext;
  LATKE_HOST_DEVICE void operator()(int x_cb, int parity) const {
    int c[4];
    const long site = geom.coords(x_cb, parity, c);
    const long e = ext.index_of_local(c);
    for (int mu = 0; mu < 4; ++mu) {
      ColorMatrix<double, 3> u;
      Complex<double>* h = host + (site * 4 + mu) * 9;
      if (to_ext) {
        for (int k = 0; k < 9; ++k) u.e[k / 3][k % 3] = h[k];
        ext.save(e, mu, u);
      } else {
        ext.load(e, mu, u);
        for (int k = 0; k < 9; ++k) h[k] = u.e[k / 3][k % 3];
      }
    }
  }
};

/// Ghost sites with an out-of-range coordinate in a dimension that is not split take the links
/// of their periodic image in those dimensions (keeping a ghost coordinate of a split
/// dimension: the image is then in a ghost slice received from a neighbour).
struct WrapKernel {
  ExtSites ext;
  int split[4];
  int k_begin, k_end;
  LATKE_HOST_DEVICE void operator()(int e, int) const {
    int c[4], img[4];
    long r = e;
    bool wrapped = false;
    for (int d = 0; d < 4; ++d) {
      c[d] = static_cast<int>(r % ext.E[d]);
      r /= ext.E[d];
      img[d] = c[d];
      if (!split[d] && (c[d] == 0 || c[d] == ext.E[d] - 1)) {
        wrapped = true;
        img[d] = c[d] == 0 ? ext.E[d] - 2 : 1;
      }
    }
    if (!wrapped) return;
    const long src = img[0] + img[1] * ext.stride[1] + img[2] * ext.stride[2] + img[3] * ext.stride[3];
    for (int k = k_begin; k < k_end; ++k) ext.at(k, e) = ext.at(k, src);
  }
};

/// One slice x_d = slice of the extended field (all extended coordinates of the other
/// dimensions; with parity >= 0 only its sites of that parity) to or from a packed buffer
/// [site][k - k_begin]. Extended extents are even (local ones are), so a parity's sites
/// are every other site along the first dimension other than d.
struct SliceKernel {
  ExtSites ext;
  Complex<double>* buf;
  int d, slice, k_begin, k_end, parity;
  bool pack;
  LATKE_HOST_DEVICE void operator()(int i, int) const {
    const int k0 = d == 0 ? 1 : 0;
    long r = i, e = static_cast<long>(slice) * ext.stride[d];
    int c[4] = {0, 0, 0, 0}, sum = slice;
    for (int k = 0; k < 4; ++k) {
      if (k == d) continue;
      const int n = k == k0 && parity >= 0 ? ext.E[k] / 2 : ext.E[k];
      c[k] = static_cast<int>(r % n);
      r /= n;
      if (k != k0 || parity < 0) sum += c[k];
    }
    if (parity >= 0) {  // extended and global coordinates have the same parity (local extents even)
      c[k0] = 2 * c[k0] + ((parity - sum) & 1);
    }
    for (int k = 0; k < 4; ++k)
      if (k != d) e += c[k] * ext.stride[k];
    const int n = k_end - k_begin;
    for (int k = k_begin; k < k_end; ++k) {
      Complex<double>& f = ext.at(k, e);
      Complex<double>& b = buf[static_cast<long>(i) * n + (k - k_begin)];
      if (pack)
        b = f;
      else
        f = b;
    }
  }
};

}  // namespace

ExtendedSites::ExtendedSites(const Lattice& lat, Backend backend, int components, unsigned ghost_dims)
    : lat_(lat), backend_(backend), components_(components), ghost_dims_(ghost_dims) {
  require(components > 0, "extended site field: ", components, " components per site, expected at least 1");
  long v = 1, stride = 1;
  for (int mu = 0; mu < 4; ++mu) {
    sites_.E[mu] = lat.local()[mu] + 2;
    sites_.stride[mu] = stride;
    stride *= sites_.E[mu];
    v *= sites_.E[mu];
  }
  sites_.ext_volume = v;
  data_ = Buffer(memory_for(backend), static_cast<std::size_t>(v) * components * sizeof(Complex<double>));
  sites_.data = static_cast<Complex<double>*>(data_.data());
}

ExtendedLinks::ExtendedLinks(const Lattice& lat, Backend backend) : ExtendedSites(lat, backend, 36) {}

void ExtendedLinks::upload(const std::vector<Complex<double>>& host) {
  require(host.size() == static_cast<std::size_t>(lat_.volume()) * 36, "gauge links: host array has ", host.size(),
          " complex numbers, expected ", lat_.volume() * 36, " (local volume x 4 directions x 3 x 3)");
  if (backend_ == Backend::cpu) {
    launch_cpu(LexCopyKernel{view(), const_cast<Complex<double>*>(host.data()), geometry(), true},
               {lat_.volume_cb(), 0, 2});
  } else {  // the host array as it is (through pinned chunks), reordered on the device
    const std::size_t bytes = host.size() * sizeof(Complex<double>);
    Buffer lex(memory_for(backend_), bytes);
    PinnedStager().upload(lex.data(), host.data(), bytes, compute_stream());
    launch(backend_, LexCopyKernel{view(), static_cast<Complex<double>*>(lex.data()), geometry(), true},
           {lat_.volume_cb(), 0, 2});
    synchronize(compute_stream());
  }
  refresh();
}

std::vector<Complex<double>> ExtendedLinks::download() const {
  std::vector<Complex<double>> host(static_cast<std::size_t>(lat_.volume()) * 36);
  if (backend_ == Backend::cpu) {
    launch_cpu(LexCopyKernel{view(), host.data(), geometry(), false}, {lat_.volume_cb(), 0, 2});
    return host;
  }
  const std::size_t bytes = host.size() * sizeof(Complex<double>);  // reordered on the device
  Buffer lex(memory_for(backend_), bytes);
  synchronize(backend_);
  launch(backend_, LexCopyKernel{view(), static_cast<Complex<double>*>(lex.data()), geometry(), false},
         {lat_.volume_cb(), 0, 2});
  PinnedStager().download(host.data(), lex.data(), bytes, compute_stream());
  return host;
}

HaloExchange& ExtendedSites::halo_for(int ncomp, bool one_parity, int d) {
  std::unique_ptr<HaloExchange>& h = halo_[{ncomp, one_parity ? 1 : 0, d}];
  if (!h) {  // dimension d only: the dimensions go one after the other (corners)
    std::array<std::size_t, 4> bytes{};
    bytes[d] = static_cast<std::size_t>(sites_.ext_volume / sites_.E[d] / (one_parity ? 2 : 1)) * ncomp *
               sizeof(Complex<double>);
    h = std::make_unique<HaloExchange>(lat_, backend_, bytes);
  }
  return *h;
}

void ExtendedSites::refresh_components(int k_begin, int k_end, int parity, const std::function<void()>& overlap,
                                       unsigned dims) {
  require(parity >= -1 && parity <= 1, "refresh: parity ", parity, ", expected 0, 1 or -1 (both)");
  require(0 <= k_begin && k_begin < k_end && k_end <= components_, "refresh: components ", k_begin, " to ", k_end,
          ", expected a range within 0 to ", components_);
  require((dims & ~ghost_dims_) == 0, "refresh: dimensions ", dims, " are not among the field's ghost dimensions ",
          ghost_dims_);
  const unsigned ghost_dims = dims ? dims : ghost_dims_;
  WrapKernel wrap{sites_, {}, k_begin, k_end};
  bool any_unsplit = false;
  for (int d = 0; d < 4; ++d) {
    wrap.split[d] = lat_.partitioned(d) || !(ghost_dims >> d & 1) ? 1 : 0;  // 1: no periodic copy
    any_unsplit |= !wrap.split[d];
  }
  bool first = true;
  for (int d = 0; d < 4; ++d) {
    if (!lat_.partitioned(d) || !(ghost_dims >> d & 1)) continue;
    HaloExchange& halo = halo_for(k_end - k_begin, parity >= 0, d);
    const int n = static_cast<int>(sites_.ext_volume / sites_.E[d] / (parity >= 0 ? 2 : 1));
    // In dimension order, so that later split dimensions' slices carry the corners just
    // received. Slice 1 (my first local slice) goes behind, where it is the ghost at E-1;
    // slice E-2 goes ahead, where it is the ghost at 0. With overlap, every exchange after the
    // first follows the one before on the comm stream, not the compute stream's overlapping
    // work. (The ghosts of unsplit dimensions the slices carry are not yet the new ones: the
    // wrap below sets them after the exchanges.)
    halo.begin(static_cast<bool>(overlap), !overlap || first);
    for (int side = 0; side < 2; ++side)
      launch(backend_,
             SliceKernel{sites_, static_cast<Complex<double>*>(halo.send_face(d, side)), d,
                         side == 0 ? 1 : sites_.E[d] - 2, k_begin, k_end, parity, true},
             {n, 0, 1}, comm_stream());
    if (overlap && first) overlap();
    first = false;
    halo.finish();
    // From behind: their slice E-2, my ghost 0. From ahead: their slice 1, my ghost E-1.
    for (int side = 0; side < 2; ++side)
      launch(backend_,
             SliceKernel{sites_, static_cast<Complex<double>*>(halo.recv_face(d, side ? +1 : -1)), d,
                         side == 0 ? 0 : sites_.E[d] - 1, k_begin, k_end, parity, false},
             {n, 0, 1}, halo.exterior_stream());
    halo.end();
  }
  if (first && overlap) overlap();  // nothing split
  // The periodic images last, also of the ghost slices just received (their corners).
  if (any_unsplit) launch(backend_, wrap, {static_cast<int>(sites_.ext_volume), 0, 1});
}

}  // namespace latke::gauge
