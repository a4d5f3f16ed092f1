// Multigrid transfer kernels (transfer.h): P, R and the block orthonormalization. Compiled
// by nvcc in CUDA builds.
#include "preconditioners/mg/transfer.h"

#include <algorithm>
#include <cmath>

#include "latke/core/error.h"
#include "latke/core/indexing.h"
#include "latke/core/launch.h"
#include "preconditioners/mg/probe_classes.h"

namespace latke::mg {

void check_aggregates(const Lattice& fine, const Coords& block, int level) {
  for (int mu = 0; mu < 4; ++mu) {
    const int b = block[mu], l = fine.local()[mu];
    require(b >= 2 && l % b == 0, "multigrid level ", level, ": aggregate ", block[0], ",", block[1], ",", block[2],
            ",", block[3], " has extent ", b, " in dimension ", mu,
            ", which must be at least 2 and divide the local extent ", l, " of the level above");
    require((l / b) % 2 == 0, "multigrid level ", level, ": aggregate ", block[0], ",", block[1], ",", block[2], ",",
            block[3], " leaves a coarse local extent ", l / b, " in dimension ", mu, " (local extent ", l,
            "); coarse lattices need even local extents: use smaller aggregates or fewer levels");
  }
}

namespace {

/// Aggregates as kernels see them: the fine and coarse local geometries and the block.
struct AggregateMap {
  LocalGeometry fine, coarse;
  int block[4];
  int block_volume;

  /// Fine site i (lexicographic within the block) of the aggregate at coarse coordinates cc.
  LATKE_HOST_DEVICE LATKE_INLINE int fine_site(const int (&cc)[4], int i, int (&fc)[4]) const {
    for (int mu = 0; mu < 4; ++mu) {
      fc[mu] = cc[mu] * block[mu] + i % block[mu];
      i /= block[mu];
    }
    return fine.full_index(fc);
  }
  /// The aggregate (coarse x_cb) holding fine coordinates fc, and its parity.
  LATKE_HOST_DEVICE LATKE_INLINE int coarse_site(const int (&fc)[4], int& parity) const {
    int cc[4];
    for (int mu = 0; mu < 4; ++mu) cc[mu] = fc[mu] / block[mu];
    parity = (cc[0] + cc[1] + cc[2] + cc[3]) & 1;
    return coarse.full_index(cc) >> 1;
  }
};

/// The basis as kernels see it: vector k, parity block b is RealArray at a fixed stride.
template <typename S>
struct BasisView {
  S* data;
  float* norm;
  long block_reals;  ///< reals per parity block of one vector
  int stride, lv;

  LATKE_HOST_DEVICE LATKE_INLINE RealArray<S> at(int k, int b) const {
    RealArray<S> a;
    a.data = data + (2L * k + b) * block_reals;
    a.norm = norm ? norm + (2L * k + b) * stride : nullptr;
    a.stride = stride;
    a.lv = lv;
    return a;
  }
};

/// The basis packed for the transfers: per parity, site and fine component m the nvec values
/// V_k(x)_m contiguous ([parity][x][m][k] complex), so that threads of consecutive k read
/// consecutive words (R) and a thread reads one component of every vector in one sweep (P).
/// Half storage scales each (site, m) by its largest |re| or |im| over k.
template <typename S>
struct PackedBasis {
  S* data = nullptr;
  float* scale = nullptr;
  int vcb = 0, n_comp = 0, nvec = 0;

  LATKE_HOST_DEVICE LATKE_INLINE long slot(int parity, int x, int m) const {
    return (static_cast<long>(parity) * vcb + x) * n_comp + m;
  }
  LATKE_HOST_DEVICE LATKE_INLINE Complex<double> get(long sl, int k) const {
    const long i = 2 * (sl * nvec + k);
    if constexpr (sizeof(S) == 2) {
      const double u = static_cast<double>(scale[sl]) / fixed_max;
      return Complex<double>(from_fixed(data[i]) * u, from_fixed(data[i + 1]) * u);
    } else {
      return Complex<double>(data[i], data[i + 1]);
    }
  }
};

template <typename S>
BasisView<S> basis_view(const std::vector<ColorSpinorField>& v) {
  const ColorSpinorField& f = v.front();
  BasisView<S> b;
  b.data = static_cast<S*>(f.block_data(0));
  b.norm = f.block_norm(0);
  b.block_reals = static_cast<long>(f.site_reals()) * f.lattice().volume_cb();
  b.stride = f.lattice().volume_cb();
  b.lv = vector_shift<S>(f.site_reals());
  return b;
}

template <typename S>
PackedBasis<S> packed_view(const Buffer& data, const Buffer& scale, int vcb, int n_comp, int nvec) {
  PackedBasis<S> p;
  p.data = static_cast<S*>(data.data());
  p.scale = static_cast<float*>(scale.data());
  p.vcb = vcb;
  p.n_comp = n_comp;
  p.nvec = nvec;
  return p;
}

AggregateMap aggregate_map(const Lattice& fine, const Lattice& coarse, const Coords& block) {
  AggregateMap m;
  m.fine = LocalGeometry::of(fine);
  m.coarse = LocalGeometry::of(coarse);
  m.block_volume = 1;
  for (int mu = 0; mu < 4; ++mu) {
    m.block[mu] = block[mu];
    m.block_volume *= block[mu];
  }
  return m;
}

/// coarse(a)_{chi,k} = sum over the aggregate's sites (or over two slices of it) of <V_k, f>
/// on chirality chi, in two passes so that every level keeps the device busy: one thread per
/// (chunk of the aggregate's sites, aggregate, k), k fastest (a warp reads consecutive words
/// of the packed basis and one value of f for all its threads), writes its partial sums; one
/// thread per (aggregate, k) adds the chunks. Face mode (face_mu >= 0): the last slice in mu
/// into side 0, the first into side 1.
template <typename SV, typename SF>
struct RestrictPartsKernel {
  AggregateMap map;
  PackedBasis<SV> basis;
  RealArray<SF> fine[2];   ///< by parity
  Complex<double>* parts;  ///< [chunk][aggregate][k][side][chi]
  int nvec, fine_reals, parity, face_mu, chunks;

  /// Site j of the aggregate's list: all its sites, or those of one slice in face_mu.
  LATKE_HOST_DEVICE LATKE_INLINE int site(int j, int side) const {
    if (face_mu < 0) return j;
    const int b = map.block[face_mu];
    int i = 0, stride = 1;
    for (int nu = 0; nu < 4; ++nu) {
      const int c = nu == face_mu ? (side == 0 ? b - 1 : 0) : j % map.block[nu];
      if (nu != face_mu) j /= map.block[nu];
      i += c * stride;
      stride *= map.block[nu];
    }
    return i;
  }
  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    const int k = idx % nvec, rest = idx / nvec, vcb = map.coarse.volume_cb;
    const int cx = rest % vcb, chunk = rest / vcb;
    int cc[4];
    map.coarse.coords(cx, parity, cc);
    const int sides = face_mu < 0 ? 1 : 2;
    const int n_sites = face_mu < 0 ? map.block_volume : map.block_volume / map.block[face_mu];
    const int begin = static_cast<int>(static_cast<long>(n_sites) * chunk / chunks);
    const int end = static_cast<int>(static_cast<long>(n_sites) * (chunk + 1) / chunks);
    const int n_comp = fine_reals / 2;
    Complex<double>* out = parts + ((static_cast<long>(chunk) * vcb + cx) * nvec + k) * 4;
    for (int side = 0; side < sides; ++side) {
      Complex<double> s[2];
      for (int j = begin; j < end; ++j) {
        int fc[4];
        const int full = map.fine_site(cc, site(j, side), fc);
        const int fp = (fc[0] + fc[1] + fc[2] + fc[3]) & 1, fx = full >> 1;
        for (int m = 0; m < n_comp; ++m) {
          const Complex<double> v = basis.get(basis.slot(fp, fx, m), k);
          const Complex<double> f(fine[fp].template get<double>(2 * m, fx),
                                  fine[fp].template get<double>(2 * m + 1, fx));
          s[2 * m >= n_comp] += conj_mul(v, f);
        }
      }
      out[2 * side] = s[0];
      out[2 * side + 1] = s[1];
    }
  }
};

template <typename SC>
struct RestrictCombineKernel {
  RealArray<SC> coarse[2];  ///< sides
  const Complex<double>* parts;
  int nvec, vcb, chunks, sides;
  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    const int k = idx % nvec, cx = idx / nvec;
    for (int side = 0; side < sides; ++side)
      for (int chi = 0; chi < 2; ++chi) {
        Complex<double> s;
        for (int c = 0; c < chunks; ++c)
          s += parts[((static_cast<long>(c) * vcb + cx) * nvec + k) * 4 + 2 * side + chi];
        coarse[side].set(2 * (chi * nvec + k), cx, s.re);
        coarse[side].set(2 * (chi * nvec + k) + 1, cx, s.im);
      }
  }
};

/// fine(x)_m = sum_k V_k(x)_m e(a(x))_{chi(m), k}; one thread per (fine site, component) of
/// one parity, sites fastest (coalesced writes; each thread sweeps its own nvec values).
template <typename SV, typename SC, typename SF>
struct ProlongKernel {
  AggregateMap map;
  PackedBasis<SV> basis;
  RealArray<SC> coarse[2];  ///< by parity
  RealArray<SF> fine;       ///< the parity block being written
  int nvec, n_comp;
  int parity;
  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    const int x_cb = idx % map.fine.volume_cb, m = idx / map.fine.volume_cb;
    int fc[4];
    map.fine.coords(x_cb, parity, fc);
    int cp;
    const int cx = map.coarse_site(fc, cp);
    const RealArray<SC>& e = coarse[cp];
    const int c0 = 2 * (2 * m >= n_comp ? nvec : 0);
    const long sl = basis.slot(parity, x_cb, m);
    double ar = 0, ai = 0;
    for (int k = 0; k < nvec; ++k) {
      const Complex<double> v = basis.get(sl, k);
      const double er = e.template get<double>(c0 + 2 * k, cx), ei = e.template get<double>(c0 + 2 * k + 1, cx);
      ar += v.re * er - v.im * ei;
      ai += v.re * ei + v.im * er;
    }
    fine.set(2 * m, x_cb, ar);
    fine.set(2 * m + 1, x_cb, ai);
  }
};

/// The packed basis from the vectors: one thread per (site, component) of one parity.
template <typename SV, typename SP>
struct PackKernel {
  BasisView<SV> basis;
  PackedBasis<SP> packed;
  int parity;
  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    const int m = idx % packed.n_comp, x = idx / packed.n_comp;
    const long sl = packed.slot(parity, x, m);
    double mx = 0;
    if constexpr (sizeof(SP) == 2) {
      for (int k = 0; k < packed.nvec; ++k) {
        const RealArray<SV> v = basis.at(k, parity);
        mx = fmax(mx, fmax(fabs(v.template get<double>(2 * m, x)), fabs(v.template get<double>(2 * m + 1, x))));
      }
      packed.scale[sl] = static_cast<float>(mx);
    }
    for (int k = 0; k < packed.nvec; ++k) {
      const RealArray<SV> v = basis.at(k, parity);
      const double re = v.template get<double>(2 * m, x), im = v.template get<double>(2 * m + 1, x);
      SP* d = packed.data + 2 * (sl * packed.nvec + k);
      if constexpr (sizeof(SP) == 2) {
        const double inv = mx > 0 ? fixed_max / mx : 0.0;
        d[0] = to_fixed(static_cast<float>(re * inv));
        d[1] = to_fixed(static_cast<float>(im * inv));
      } else {
        d[0] = static_cast<SP>(re);
        d[1] = static_cast<SP>(im);
      }
    }
  }
};

/// fine(x) = V_k(x) on chirality chi (col = chi nvec + k) where x's aggregate is in class
/// cls, zero elsewhere: P applied to a unit vector on a class of aggregates.
template <typename SV, typename SF>
struct ProlongUnitKernel {
  AggregateMap map;
  BasisView<SV> basis;
  RealArray<SF> fine;
  int nvec, fine_reals, parity, col, cls;
  LATKE_HOST_DEVICE void operator()(int x_cb, int) const {
    int fc[4], cc[4], cp;
    map.fine.coords(x_cb, parity, fc);
    for (int mu = 0; mu < 4; ++mu) cc[mu] = fc[mu] / map.block[mu];
    cp = (cc[0] + cc[1] + cc[2] + cc[3]) & 1;
    const int chi = col / nvec, k = col % nvec, half = fine_reals / 2;
    const bool on = in_probe_class(cc, cp, cls);
    const RealArray<SV> vk = basis.at(k, parity);
    for (int r = 0; r < fine_reals; ++r)
      fine.set(r, x_cb, on && (r >= half) == (chi == 1) ? vk.template get<double>(r, x_cb) : 0.0);
  }
};

/// Modified Gram-Schmidt (twice) of the basis within one (aggregate, chirality): one thread
/// each. bad[thread] = 1 when some vector vanished there.
template <typename SV>
struct OrthonormalizeKernel {
  AggregateMap map;
  BasisView<SV> basis;
  int nvec, fine_reals;
  int parity;
  int* bad;
  template <typename F>
  LATKE_HOST_DEVICE LATKE_INLINE void for_each(const int (&cc)[4], int chi, F&& f) const {
    const int half = fine_reals / 2;
    for (int i = 0; i < map.block_volume; ++i) {
      int fc[4];
      const int full = map.fine_site(cc, i, fc);
      const int fp = (fc[0] + fc[1] + fc[2] + fc[3]) & 1;
      for (int r = chi * half; r < (chi + 1) * half; r += 2) f(fp, full >> 1, r);
    }
  }
  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    const int chi = idx & 1, cx = idx >> 1;
    int cc[4];
    map.coarse.coords(cx, parity, cc);
    for (int k = 0; k < nvec; ++k) {
      for (int pass = 0; pass < 2; ++pass) {
        for (int j = 0; j < k; ++j) {
          double dr = 0, di = 0;  // <V_j, V_k>
          for_each(cc, chi, [&](int fp, int x, int r) {
            const RealArray<SV> a = basis.at(j, fp), b = basis.at(k, fp);
            const double ar = a.template get<double>(r, x), ai = a.template get<double>(r + 1, x);
            const double br = b.template get<double>(r, x), bi = b.template get<double>(r + 1, x);
            dr += ar * br + ai * bi;
            di += ar * bi - ai * br;
          });
          for_each(cc, chi, [&](int fp, int x, int r) {
            const RealArray<SV> a = basis.at(j, fp), b = basis.at(k, fp);
            const double ar = a.template get<double>(r, x), ai = a.template get<double>(r + 1, x);
            b.set(r, x, b.template get<double>(r, x) - (dr * ar - di * ai));
            b.set(r + 1, x, b.template get<double>(r + 1, x) - (dr * ai + di * ar));
          });
        }
      }
      double n = 0;
      for_each(cc, chi, [&](int fp, int x, int r) {
        const RealArray<SV> b = basis.at(k, fp);
        const double br = b.template get<double>(r, x), bi = b.template get<double>(r + 1, x);
        n += br * br + bi * bi;
      });
      if (!(n > 0)) {
        bad[idx] = 1;
        n = 1;
      }
      const double inv = 1.0 / sqrt(n);
      for_each(cc, chi, [&](int fp, int x, int r) {
        const RealArray<SV> b = basis.at(k, fp);
        b.set(r, x, b.template get<double>(r, x) * inv);
        b.set(r + 1, x, b.template get<double>(r + 1, x) * inv);
      });
    }
  }
};

/// f(S{}) for double or single; half is refused naming what.
template <typename F>
void dispatch_full(Precision p, const char* what, F&& f) {
  require(p != Precision::half, what, ": half precision is not supported here (double or single)");
  if (p == Precision::double_)
    f(double{});
  else
    f(float{});
}

}  // namespace

Transfer::Transfer(std::shared_ptr<const Lattice> fine, const SpinorParam& fine_param, const Coords& block, int nvec,
                   int level, Precision packed)
    : fine_(std::move(fine)), fine_param_(fine_param), block_(block), nvec_(nvec), packed_precision_(packed) {
  require(nvec >= 1, "multigrid level ", level, ": ", nvec, " null vectors; expected at least 1");
  require(fine_param.nspin % 2 == 0, "multigrid transfer: fine fields with ", fine_param.nspin,
          " spins have no chirality split (expected an even spin count)");
  require(fine_param.precision != Precision::half, "multigrid level ", level,
          ": the null-space basis is stored in double or single precision, not half");
  check_aggregates(*fine_, block, level);
  Coords global;
  for (int mu = 0; mu < 4; ++mu) global[mu] = fine_->global()[mu] / block[mu];
  coarse_ = std::make_shared<Lattice>(fine_->comm(), global, fine_->grid());
  SpinorParam p = fine_param_;
  p.subset = Subset::full;
  v_ = ColorSpinorField::make_set(fine_, p, nvec);
}

SpinorParam Transfer::fine_param(Precision p) const {
  SpinorParam q = fine_param_;
  q.precision = p;
  q.subset = Subset::full;
  return q;
}

SpinorParam Transfer::coarse_param(Precision p) const {
  return SpinorParam{2, nvec_, p, Subset::full, fine_param_.backend};
}

std::size_t Transfer::bytes() const { return nvec_ * v_.front().bytes() + packed_.bytes() + packed_scale_.bytes(); }

void Transfer::orthonormalize() {
  const AggregateMap map = aggregate_map(*fine_, *coarse_, block_);
  const Backend be = fine_param_.backend;
  const int n = coarse_->volume_cb() * 2;
  Buffer bad(memory_for(be), n * sizeof(int));
  zero_bytes(bad.data(), n * sizeof(int), memory_for(be), compute_stream());
  dispatch_full(fine_param_.precision, "multigrid basis", [&](auto s) {
    using S = decltype(s);
    for (int parity = 0; parity < 2; ++parity) {
      OrthonormalizeKernel<S> k{
          map, basis_view<S>(v_), nvec_, v_.front().site_reals(), parity, static_cast<int*>(bad.data())};
      launch(be, k, {n}, compute_stream(), false);
      // The flags of both parities share the buffer: count after each.
      std::vector<int> host(n);
      synchronize(be);
      copy_bytes(host.data(), bad.data(), n * sizeof(int));
      int count = 0;
      for (int f : host) count += f;
      require(count == 0, "multigrid: the null-space basis vanishes on ", count,
              " (aggregate, chirality) pairs of this rank; the ", nvec_, " vectors do not span the coarse space there");
    }
  });
  pack();
}

void Transfer::pack() {
  const int vcb = fine_->volume_cb(), n_comp = fine_param_.nspin * fine_param_.ncolor;
  const std::size_t slots = static_cast<std::size_t>(2) * vcb * n_comp;
  const MemoryKind mk = memory_for(fine_param_.backend);
  if (!packed_.data()) {
    packed_ = Buffer(mk, slots * nvec_ * 2 * real_bytes(packed_precision_));
    if (packed_precision_ == Precision::half) packed_scale_ = Buffer(mk, slots * sizeof(float));
  }
  dispatch_full(fine_param_.precision, "multigrid basis", [&](auto sv) {
    using SV = decltype(sv);
    auto run = [&](auto sp) {
      using SP = decltype(sp);
      for (int parity = 0; parity < 2; ++parity)
        launch(
            fine_param_.backend,
            PackKernel<SV, SP>{basis_view<SV>(v_), packed_view<SP>(packed_, packed_scale_, vcb, n_comp, nvec_), parity},
            {vcb * n_comp}, compute_stream(), false);
    };
    switch (packed_precision_) {
      case Precision::double_:
        run(double{});
        break;
      case Precision::single:
        run(float{});
        break;
      default:
        run(short{});
        break;
    }
  });
}

template <typename F>
void Transfer::with_packed(F&& f) const {
  require(packed_.data() != nullptr, "multigrid transfer used before its basis was orthonormalized");
  const int vcb = fine_->volume_cb(), n_comp = fine_param_.nspin * fine_param_.ncolor;
  dispatch_precision(packed_precision_, [&](auto sp) {
    using SP = decltype(sp);
    f(packed_view<SP>(packed_, packed_scale_, vcb, n_comp, nvec_));
  });
}

void Transfer::prolongate(ColorSpinorField& fine, const ColorSpinorField& coarse) const {
  require(fine.nspin() == fine_param_.nspin && fine.ncolor() == fine_param_.ncolor && fine.n_parity() == 2,
          "prolongate: the fine field is not a full field of the level's shape");
  require(coarse.nspin() == 2 && coarse.ncolor() == nvec_ && coarse.n_parity() == 2 &&
              coarse.lattice().volume_cb() == coarse_->volume_cb(),
          "prolongate: the coarse field is not a full field of the coarse level's shape");
  const AggregateMap map = aggregate_map(*fine_, *coarse_, block_);
  with_packed([&](auto basis) {
    using SV = std::remove_pointer_t<decltype(basis.data)>;
    dispatch_full(coarse.precision(), "prolongate (coarse field)", [&](auto sc) {
      dispatch_full(fine.precision(), "prolongate (fine field)", [&](auto sf) {
        using SC = decltype(sc);
        using SF = decltype(sf);
        for (int parity = 0; parity < 2; ++parity) {
          ProlongKernel<SV, SC, SF> k{map,
                                      basis,
                                      {real_array<SC>(coarse, 0), real_array<SC>(coarse, 1)},
                                      real_array<SF>(fine, parity),
                                      nvec_,
                                      fine.site_reals() / 2,
                                      parity};
          launch(fine.backend(), k, {fine_->volume_cb() * (fine.site_reals() / 2)});
        }
      });
    });
  });
}

void Transfer::prolongate_unit(ColorSpinorField& fine, int col, int cls) const {
  require(fine.nspin() == fine_param_.nspin && fine.ncolor() == fine_param_.ncolor && fine.n_parity() == 2,
          "prolongate_unit: the fine field is not a full field of the level's shape");
  require(col >= 0 && col < 2 * nvec_ && cls >= 0 && cls < n_probe_classes, "prolongate_unit: column ", col,
          " or class ", cls, " out of range");
  const AggregateMap map = aggregate_map(*fine_, *coarse_, block_);
  dispatch_full(fine_param_.precision, "multigrid basis", [&](auto sv) {
    dispatch_full(fine.precision(), "prolongate_unit (fine field)", [&](auto sf) {
      using SV = decltype(sv);
      using SF = decltype(sf);
      for (int parity = 0; parity < 2; ++parity)
        launch(fine.backend(),
               ProlongUnitKernel<SV, SF>{map, basis_view<SV>(v_), real_array<SF>(fine, parity), nvec_,
                                         fine.site_reals(), parity, col, cls},
               {fine_->volume_cb()});
    });
  });
}

void Transfer::restrict_to(ColorSpinorField& coarse, const ColorSpinorField& fine) const {
  restrict_impl(coarse, nullptr, fine, -1);
}

void Transfer::restrict_faces(ColorSpinorField& last, ColorSpinorField& first, const ColorSpinorField& fine,
                              int mu) const {
  require(mu >= 0 && mu < 4, "restrict_faces: dimension ", mu, ": expected 0..3");
  restrict_impl(last, &first, fine, mu);
}

void Transfer::restrict_impl(ColorSpinorField& coarse, ColorSpinorField* first, const ColorSpinorField& fine,
                             int mu) const {
  require(fine.nspin() == fine_param_.nspin && fine.ncolor() == fine_param_.ncolor && fine.n_parity() == 2,
          "restrict: the fine field is not a full field of the level's shape");
  for (const ColorSpinorField* c :
       {static_cast<const ColorSpinorField*>(&coarse), static_cast<const ColorSpinorField*>(first)})
    require(!c || (c->nspin() == 2 && c->ncolor() == nvec_ && c->n_parity() == 2 &&
                   c->lattice().volume_cb() == coarse_->volume_cb() && c->precision() == coarse.precision()),
            "restrict: a coarse field is not a full field of the coarse level's shape");
  const AggregateMap map = aggregate_map(*fine_, *coarse_, block_);
  // Chunks of each aggregate's sites: enough threads for the device (about 2^20), each
  // chunk at least 8 sites.
  const int vcb = coarse_->volume_cb();
  const int n_sites = mu < 0 ? map.block_volume : map.block_volume / block_[mu];
  const int chunks = std::max(1, std::min(n_sites / 8, (1 << 20) / std::max(1, vcb * nvec_)));
  const std::size_t part_bytes = static_cast<std::size_t>(chunks) * vcb * nvec_ * 4 * sizeof(Complex<double>);
  if (parts_.bytes() < part_bytes) parts_ = Buffer(memory_for(fine.backend()), part_bytes);
  auto* parts = static_cast<Complex<double>*>(parts_.data());
  with_packed([&](auto basis) {
    using SV = std::remove_pointer_t<decltype(basis.data)>;
    dispatch_precision(fine.precision(), [&](auto sf) {
      dispatch_full(coarse.precision(), "restrict (coarse field)", [&](auto sc) {
        using SF = decltype(sf);
        using SC = decltype(sc);
        for (int parity = 0; parity < 2; ++parity) {
          RestrictPartsKernel<SV, SF> k{map,    basis, {real_array<SF>(fine, 0), real_array<SF>(fine, 1)},
                                        parts,  nvec_, fine.site_reals(),
                                        parity, mu,    chunks};
          launch(fine.backend(), k, {chunks * vcb * nvec_}, compute_stream(), false);
          RestrictCombineKernel<SC> c{{real_array<SC>(coarse, parity), real_array<SC>(first ? *first : coarse, parity)},
                                      parts,
                                      nvec_,
                                      vcb,
                                      chunks,
                                      mu < 0 ? 1 : 2};
          launch(fine.backend(), c, {vcb * nvec_}, compute_stream(), false);
        }
      });
    });
  });
}

}  // namespace latke::mg
