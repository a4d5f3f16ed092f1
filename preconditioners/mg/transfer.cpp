// Multigrid transfer kernels (transfer.h): P and R, the basis packed for them, and the
// Galerkin assembly's masked and split forms (the block orthonormalisation: block_ortho.cpp).
// Compiled by nvcc in CUDA builds.
#include "preconditioners/mg/transfer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "operators/coarse/probe_classes.h"
#include "preconditioners/mg/aggregates.h"
#include "src/core/error.h"
#include "src/core/indexing.h"
#include "src/core/launch.h"
#include "src/core/launch_team.h"

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

/// A walk over an aggregate's sites in the block's lexicographic order (x fastest), `step`
/// sites at a time, that keeps the block-local coordinates: dividing the index by the block
/// extents at every site cost R more instructions than the site's products.
struct BlockWalk {
  int lc[4];
  /// At block-local index i.
  LATKE_HOST_DEVICE LATKE_INLINE BlockWalk(const AggregateMap& m, int i) {
    for (int mu = 0; mu < 4; ++mu) {
      lc[mu] = i % m.block[mu];
      i /= m.block[mu];
    }
  }
  /// Forward by step (1, or 2 with an even block[0]).
  LATKE_HOST_DEVICE LATKE_INLINE void advance(const AggregateMap& m, int step) {
    lc[0] += step;
    if (lc[0] < m.block[0]) return;
    lc[0] -= m.block[0];
    for (int mu = 1; mu < 4; ++mu) {
      if (++lc[mu] < m.block[mu]) return;
      lc[mu] = 0;
    }
  }
  /// The fine coordinates in the aggregate at cc.
  LATKE_HOST_DEVICE LATKE_INLINE void fine(const AggregateMap& m, const int (&cc)[4], int (&fc)[4]) const {
    for (int mu = 0; mu < 4; ++mu) fc[mu] = cc[mu] * m.block[mu] + lc[mu];
  }
};

/// Whether R lists an aggregate's sites of fine parity only_parity (>= 0) as 2j or 2j + 1 in the
/// block: with an even block[0] (else it walks all sites and skips the others).
LATKE_HOST_DEVICE LATKE_INLINE bool lists_parity(const AggregateMap& m, int only_parity) {
  return only_parity >= 0 && m.block[0] % 2 == 0;
}

/// Sites R walks per aggregate (its chunks split them): one slice in face_mu (face_mu >= 0),
/// the listed sites of one parity, or all.
LATKE_HOST_DEVICE LATKE_INLINE int restrict_sites(const AggregateMap& m, int face_mu, int only_parity) {
  if (face_mu >= 0) return m.block_volume / m.block[face_mu];
  return lists_parity(m, only_parity) ? m.block_volume / 2 : m.block_volume;
}

/// f(fp, fx) for sites [begin, end) of the aggregate at coarse coordinates cc that R walks (all
/// of them, or those of fine parity only_parity >= 0): fp the site's parity, fx its
/// checkerboard index. Listed (lists_parity): the j-th site of the parity is 2j in the block, or
/// its neighbour 2j + 1 in x; otherwise the other parity's sites are skipped.
/// The site at walk position w of the aggregate at cc, as walk_aggregate lists it: its parity
/// fp and checkerboard index fx; false when R skips it (the other parity, not listed).
LATKE_HOST_DEVICE LATKE_INLINE bool walked_site(const AggregateMap& map, const int (&cc)[4], const BlockWalk& w,
                                                int only_parity, bool listed, int& fp, int& fx) {
  int fc[4];
  w.fine(map, cc, fc);
  fp = (fc[0] + fc[1] + fc[2] + fc[3]) & 1;
  if (listed && fp != only_parity) {
    ++fc[0];
    fp = only_parity;
  }
  fx = map.fine.full_index(fc) >> 1;
  return only_parity < 0 || fp == only_parity;
}

template <typename F>
LATKE_HOST_DEVICE LATKE_INLINE void walk_aggregate(const AggregateMap& map, const int (&cc)[4], int begin, int end,
                                                  int only_parity, F&& f) {
  const bool listed = lists_parity(map, only_parity);
  const int step = listed ? 2 : 1;
  BlockWalk w(map, begin * step);
  for (int j = begin; j < end; ++j, w.advance(map, step)) {
    int fp, fx;
    if (walked_site(map, cc, w, only_parity, listed, fp, fx)) f(fp, fx);
  }
}

/// The basis packed for the transfers: per parity, site and vector k one record of the site's
/// n_comp complex values ([parity][x][k][m] complex), so that threads of consecutive k (R) or
/// of consecutive m (P) read consecutive words, and a thread of R reads its record in 16-byte
/// vectors. Half storage scales each record (site, k) by its largest |re| or |im|.
template <typename S>
struct PackedBasis {
  static constexpr int W = 16 / static_cast<int>(sizeof(S));  ///< reals per 16-byte word
  S* data = nullptr;
  float* scale = nullptr;
  int vcb = 0, n_comp = 0, nvec = 0;
  bool words = false;  ///< records are whole 16-byte words (2 n_comp sizeof(S) % 16 == 0)

  LATKE_HOST_DEVICE LATKE_INLINE long record(int parity, int x, int k) const {
    return (static_cast<long>(parity) * vcb + x) * nvec + k;
  }
  LATKE_HOST_DEVICE LATKE_INLINE double unit(long rec) const {
    if constexpr (sizeof(S) == 2) return static_cast<double>(scale[rec]) / fixed_max;
    else return 1.0;
  }
  /// Value m of record rec.
  LATKE_HOST_DEVICE LATKE_INLINE Complex<double> get(long rec, int m) const {
    const long i = rec * 2 * n_comp + 2 * m;
    if constexpr (sizeof(S) == 2) {
      const double u = unit(rec);
      return Complex<double>(from_fixed(data[i]) * u, from_fixed(data[i + 1]) * u);
    } else {
      return Complex<double>(data[i], data[i + 1]);
    }
  }
  /// Reals [w W, (w + 1) W) of record rec as stored (half: the integers, unscaled); needs words.
  template <typename C>
  LATKE_HOST_DEVICE LATKE_INLINE void load_word(long rec, int w, C (&r)[W]) const {
    const Vector<S, W> v = reinterpret_cast<const Vector<S, W>*>(data + rec * 2 * n_comp)[w];
    if constexpr (sizeof(S) == 2) {
      Vector<unsigned, W / 2> u;
      memcpy(&u, &v, sizeof(u));
      LATKE_UNROLL for (int i = 0; i < W / 2; ++i) {
        float lo, hi;
        from_fixed2(u.v[i], lo, hi);
        r[2 * i] = static_cast<C>(lo);
        r[2 * i + 1] = static_cast<C>(hi);
      }
    } else {
      LATKE_UNROLL for (int i = 0; i < W; ++i) r[i] = static_cast<C>(v.v[i]);
    }
  }
};

template <typename S>
PackedBasis<S> packed_view(const Buffer& data, const Buffer& scale, int vcb, int n_comp, int nvec) {
  PackedBasis<S> p;
  p.data = static_cast<S*>(data.data());
  p.scale = static_cast<float*>(scale.data());
  p.vcb = vcb;
  p.n_comp = n_comp;
  p.nvec = nvec;
  p.words = (2L * n_comp * static_cast<long>(sizeof(S))) % 16 == 0;
  return p;
}

/// <V_k(x), f(x)> on each chirality, added into s0 and s1: record rec of the packed basis
/// against site fx of f (fs: the same field read as whole sites, when NR > 0). The record's
/// products are summed in T, the sites in double.
template <typename T, int NR, typename SV, typename SF>
LATKE_HOST_DEVICE LATKE_INLINE void record_dot(const PackedBasis<SV>& basis, const RealArray<SF>& f,
                                               const SiteArray<SF, (NR > 0 ? NR : 2), 1>& fs, int fine_reals, long rec,
                                               int fx, Complex<double>& s0, Complex<double>& s1) {
  constexpr int W = PackedBasis<SV>::W;
  if (!basis.words) {  // records that are not whole words (half, odd nvec on a coarse level)
    for (int m = 0; m < fine_reals / 2; ++m) {
      const Complex<double> v = basis.get(rec, m),
                            fm(f.template get<double>(2 * m, fx), f.template get<double>(2 * m + 1, fx));
      if (2 * m >= fine_reals / 2)
        s1 += conj_mul(v, fm);
      else
        s0 += conj_mul(v, fm);
    }
    return;
  }
  const int half = NR > 0 ? NR / 2 : fine_reals / 2;
  T a[4] = {};  // re, im of chirality 0, then of chirality 1
  // Word w of the record against f's reals from fget(r).
  auto word_dot = [&](int w, auto&& fget) {
    T v[W];
    basis.load_word(rec, w, v);
    LATKE_UNROLL for (int i = 0; i < W; i += 2) {
      const int r = w * W + i;
      const T fr = fget(r), fi = fget(r + 1);
      if (r >= half) {
        a[2] += v[i] * fr + v[i + 1] * fi;
        a[3] += v[i] * fi - v[i + 1] * fr;
      } else {
        a[0] += v[i] * fr + v[i + 1] * fi;
        a[1] += v[i] * fi - v[i + 1] * fr;
      }
    }
  };
  if constexpr (NR > 0) {
    static_assert(NR % W == 0, "records of whole words");
    T fv[NR];
    fs.load(fv, fx);
    LATKE_UNROLL for (int w = 0; w < NR / W; ++w) word_dot(w, [&](int r) { return fv[r]; });
  } else {
    for (int w = 0; w < fine_reals / W; ++w) word_dot(w, [&](int r) { return f.template get<T>(r, fx); });
  }
  const double u = basis.unit(rec);
  s0 += Complex<double>(a[0] * u, a[1] * u);
  s1 += Complex<double>(a[2] * u, a[3] * u);
}

/// Chunk `chunk` of `chunks` of n sites: [begin, end).
LATKE_HOST_DEVICE LATKE_INLINE void chunk_range(int n, int chunk, int chunks, int& begin, int& end) {
  begin = static_cast<int>(static_cast<long>(n) * chunk / chunks);
  end = static_cast<int>(static_cast<long>(n) * (chunk + 1) / chunks);
}

/// coarse(a)_{chi,k} = sum over the aggregate's sites (or over two slices of it) of <V_k, f>
/// on chirality chi, in two passes so that every level keeps the device busy: one thread per
/// (chunk of the aggregate's sites, aggregate, k), k fastest, so that a warp reads the packed
/// records of consecutive k (contiguous, in 16-byte words) and one value of f for all its
/// threads; it writes its partial sums, and one thread per (aggregate, k) adds the chunks.
/// Each site's products are summed in T (float unless the basis or f is double), the sites
/// in double. Face mode (face_mu >= 0): the last slice in mu into side 0, the first into side 1.
/// NR > 0: fine fields of that many reals per site (Wilson: 24), each site of f read whole
/// in vector loads (fsite); NR = 0: any shape, f read by components (fine).
template <typename SV, typename SF, int NR = 0>
struct RestrictPartsKernel {
  using T = std::conditional_t<sizeof(SV) == 8 || sizeof(SF) == 8, double, float>;
  AggregateMap map;
  PackedBasis<SV> basis;
  RealArray<SF> fine[2];  ///< by parity
  SiteArray<SF, (NR > 0 ? NR : 2), 1> fsite[2];  ///< by parity, when NR > 0
  Complex<double>* parts;  ///< [chunk][aggregate][k][side][chi]
  int nvec, fine_reals, parity, face_mu, chunks;
  /// >= 0: f holds only the fine sites of this parity (zero on the others), and only they are
  /// summed: half of the aggregate's sites, listed (block[0] even: the j-th is 2j or 2j + 1 in
  /// the block), or all of them with the others skipped (odd block[0]).
  int only_parity = -1;
  /// A set of fields in one launch (Transfer::restrict_set on coarse levels): field m's reals
  /// fine_stride after field m - 1's, its parts parts_stride after, per_field threads each
  /// (0: one field).
  long fine_stride = 0, parts_stride = 0;
  int per_field = 0;

  /// Site j of the aggregate's slice in face_mu: its last (side 0) or first (side 1).
  LATKE_HOST_DEVICE LATKE_INLINE int face_site(int j, int side) const {
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
    const int m = per_field > 0 ? idx / per_field : 0;
    if (per_field > 0) idx -= m * per_field;
    const int k = idx % nvec, rest = idx / nvec, vcb = map.coarse.volume_cb;
    const int cx = rest % vcb, chunk = rest / vcb;
    int cc[4];
    map.coarse.coords(cx, parity, cc);
    int begin, end;
    chunk_range(restrict_sites(map, face_mu, only_parity), chunk, chunks, begin, end);
    Complex<double>* out = parts + m * parts_stride + ((static_cast<long>(chunk) * vcb + cx) * nvec + k) * 4;
    if (face_mu < 0) {  // the whole aggregate, or its sites of one parity: walked, not divided out
      RealArray<SF> f[2] = {fine[0], fine[1]};
      for (auto& a : f)
        if (a.data) a.data += m * fine_stride;
      Complex<double> s0, s1;
      walk_aggregate(map, cc, begin, end, only_parity, [&](int fp, int fx) {
        record_dot<T, NR>(basis, f[fp], fsite[fp], fine_reals, basis.record(fp, fx, k), fx, s0, s1);
      });
      out[0] = s0;
      out[1] = s1;
      return;
    }
    for (int side = 0; side < 2; ++side) {  // face mode: the last slice, then the first
      Complex<double> s0, s1;
      for (int j = begin; j < end; ++j) {
        int fc[4];
        const int full = map.fine_site(cc, face_site(j, side), fc);
        const int fp = (fc[0] + fc[1] + fc[2] + fc[3]) & 1, fx = full >> 1;
        record_dot<T, NR>(basis, fine[fp], fsite[fp], fine_reals, basis.record(fp, fx, k), fx, s0, s1);
      }
      out[2 * side] = s0;
      out[2 * side + 1] = s1;
    }
  }
};

/// R of the split operator's five outputs in one pass over the basis (a column of the Galerkin
/// product, galerkin.cpp): the site term over all of each aggregate's sites (block 8) and
/// face[mu] over the aggregate's last slice in mu (block 2 mu) and its first slice (block
/// 2 mu + 1), as restrict_to and restrict_faces give them, but reading each basis record once
/// from memory rather than three times. Threads and chunks as in RestrictPartsKernel.
template <typename SV, typename SF, int NR = 0>
struct RestrictSplitKernel {
  using T = std::conditional_t<sizeof(SV) == 8 || sizeof(SF) == 8, double, float>;
  AggregateMap map;
  PackedBasis<SV> basis;
  RealArray<SF> fine[5][2];                         ///< [site term, face 0..3][parity]
  SiteArray<SF, (NR > 0 ? NR : 2), 1> fsite[5][2];  ///< the same, when NR > 0
  Complex<double>* parts;                           ///< [chunk][aggregate][k][block 0..8][chi]
  int nvec, fine_reals, parity, chunks;

  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    const int k = idx % nvec, rest = idx / nvec, vcb = map.coarse.volume_cb;
    const int cx = rest % vcb, chunk = rest / vcb;
    int cc[4];
    map.coarse.coords(cx, parity, cc);
    int begin, end;
    chunk_range(map.block_volume, chunk, chunks, begin, end);
    Complex<double> s[9][2];
    BlockWalk walk(map, begin);
    for (int j = begin; j < end; ++j, walk.advance(map, 1)) {
      int fc[4];
      walk.fine(map, cc, fc);
      const int fp = (fc[0] + fc[1] + fc[2] + fc[3]) & 1, fx = map.fine.full_index(fc) >> 1;
      const long rec = basis.record(fp, fx, k);
      record_dot<T, NR>(basis, fine[0][fp], fsite[0][fp], fine_reals, rec, fx, s[8][0], s[8][1]);
      static_for<4>([&](auto mu_) {
        constexpr int mu = decltype(mu_)::value;
        const int w = fc[mu] - cc[mu] * map.block[mu];
        if (w == map.block[mu] - 1)
          record_dot<T, NR>(basis, fine[1 + mu][fp], fsite[1 + mu][fp], fine_reals, rec, fx, s[2 * mu][0],
                            s[2 * mu][1]);
        if (w == 0)
          record_dot<T, NR>(basis, fine[1 + mu][fp], fsite[1 + mu][fp], fine_reals, rec, fx, s[2 * mu + 1][0],
                            s[2 * mu + 1][1]);
      });
    }
    Complex<double>* out = parts + ((static_cast<long>(chunk) * vcb + cx) * nvec + k) * 18;
    LATKE_UNROLL for (int b = 0; b < 9; ++b) {
      out[2 * b] = s[b][0];
      out[2 * b + 1] = s[b][1];
    }
  }
};

/// RestrictSplitKernel for a set of columns of the Galerkin product (Transfer::restrict_split_set)
/// of a Wilson fine level: one team per aggregate, so that each basis record is read from
/// memory once for the set rather than once per column. The team stages a tile of the
/// aggregate's sites in shared memory, in T: every basis record, each column's site term, and
/// its face in mu on the sites of the aggregate's two slices in mu (the only ones R reads).
/// Then each thread sums, over the tile's sites of one group, the products of one chirality for
/// KB vectors with CB columns (each value loaded serves CB or KB products): the groups are the
/// eight faces' outputs (one slice each) and the site term's output in `slices` parts (sites j
/// = s mod slices), so that the groups hold about as many sites each, and they go by whole warps
/// where their threads fill them, so that a group's sites outside its slice cost nothing. The
/// tile's sums go, in double, into the aggregate's sums in shared memory, and those into the
/// coarse fields at the end.
template <typename SV, typename SF, typename SC>
struct RestrictSplitSetKernel {
  using T = std::conditional_t<sizeof(SV) == 8 || sizeof(SF) == 8, double, float>;
  static constexpr int KB = 6, CB = 2, slices = 4, groups = 8 + slices, team = 256;
  static constexpr int RS = 25;  ///< T per staged record: a site's 24 reals and one of padding (banks)
  AggregateMap map;
  PackedBasis<SV> basis;
  SiteArray<SF, 24, 1> site[2], face[2];  ///< column 0's site term and face 0, by parity
  RealArray<SC> coarse;                   ///< column 0's block 0, coarse parity `parity`
  long fine_stride, coarse_stride;        ///< reals from one field of a set to the next
  int nvec, count, parity, tile;

  /// Threads per group: (chirality, vector block, column block).
  LATKE_HOST_DEVICE static int tasks(int nvec, int count) {
    return 2 * ((nvec + KB - 1) / KB) * ((count + CB - 1) / CB);
  }
  /// Shared bytes: the groups' sums (double), the tile's records and fields (T), its sites.
  LATKE_HOST_DEVICE static std::size_t bytes(int nvec, int count, int tile) {
    return sizeof(Complex<double>) * 2L * groups * count * nvec +
           sizeof(T) * static_cast<long>(RS) * tile * (nvec + 5 * count) + 3 * sizeof(int) * tile;
  }

  LATKE_HOST_DEVICE void operator()(const Team& t) const {
    const int cx = t.index, sites = map.block_volume, fields = 5 * count, nt = tasks(nvec, count),
              nkb = (nvec + KB - 1) / KB, ncb = (count + CB - 1) / CB;
    Complex<double>* sums = reinterpret_cast<Complex<double>*>(t.shared());        // [column][group][k][chirality]
    T* bv = reinterpret_cast<T*>(sums + 2L * groups * count * nvec);               // [site][k][RS]
    T* fv = bv + static_cast<long>(RS) * tile * nvec;                              // [site][column][input][RS]
    int* sp = reinterpret_cast<int*>(fv + static_cast<long>(RS) * tile * fields);  // the tile's sites: parity,
    int* sx = sp + tile;                                                           // x_cb,
    int* sm = sx + tile;                                                           // and groups (bit g: group g)
    int cc[4];
    map.coarse.coords(cx, parity, cc);
    t.for_each(2 * groups * count * nvec, [&](int i) { sums[i] = Complex<double>(0); });
    for (int j0 = 0; j0 < sites; j0 += tile) {
      const int cnt = sites - j0 < tile ? sites - j0 : tile;
      t.sync();  // the previous tile's products are done
      t.for_each(cnt, [&](int j) {
        int fc[4];
        BlockWalk(map, j0 + j).fine(map, cc, fc);
        sp[j] = (fc[0] + fc[1] + fc[2] + fc[3]) & 1;
        sx[j] = map.fine.full_index(fc) >> 1;
        int mask = 1 << (8 + (j0 + j) % slices);
        LATKE_UNROLL for (int mu = 0; mu < 4; ++mu) {
          const int w = fc[mu] - cc[mu] * map.block[mu];
          if (w == map.block[mu] - 1) mask |= 1 << (2 * mu);
          if (w == 0) mask |= 1 << (2 * mu + 1);
        }
        sm[j] = mask;
      });
      t.sync();
      t.for_each(cnt * nvec, [&](int i) {  // vectors fastest: a site's records are contiguous
        constexpr int W = PackedBasis<SV>::W;
        const int k = i % nvec, j = i / nvec;
        const long rec = basis.record(sp[j], sx[j], k);
        const T u = static_cast<T>(basis.unit(rec));
        T* d = bv + (static_cast<long>(j) * nvec + k) * RS;
        LATKE_UNROLL for (int q = 0; q < 24 / W; ++q) {
          T word[W];
          basis.load_word(rec, q, word);
          LATKE_UNROLL for (int r = 0; r < W; ++r) d[q * W + r] = word[r] * u;
        }
      });
      t.for_each(cnt * fields, [&](int i) {  // a face only on its aggregate's two slices
        const int j = i % cnt, f = i / cnt, c = f / 5, in = f % 5;
        if (in > 0 && !((sm[j] >> (2 * (in - 1))) & 3)) return;
        SiteArray<SF, 24, 1> a = in == 0 ? site[sp[j]] : face[sp[j]];
        a.data += (in == 0 ? c : 4L * c + in - 1) * fine_stride;
        T v[24];
        a.load(v, sx[j]);
        T* d = fv + (static_cast<long>(j) * fields + f) * RS;
        LATKE_UNROLL for (int r = 0; r < 24; ++r) d[r] = v[r];
      });
      t.sync();
      t.for_each(groups * nt, [&](int w) {
        const int g = w / nt, task = w - g * nt;  // group g: the same across a warp where nt fills warps
        const int cb = task % ncb, kb = (task / ncb) % nkb, chi = task / (ncb * nkb), k0 = kb * KB, c0 = cb * CB;
        const int in = g < 8 ? 1 + g / 2 : 0;
        T acc[KB][CB][2] = {};
        for (int j = 0; j < cnt; ++j) {
          if (!((sm[j] >> g) & 1)) continue;
          const T* v0 = bv + static_cast<long>(j) * nvec * RS + 12 * chi;
          const T* f[CB];
          LATKE_UNROLL for (int b = 0; b < CB; ++b) {  // past the last column: a copy, not kept
            f[b] =
                fv + (static_cast<long>(j) * fields + 5 * (c0 + b < count ? c0 + b : count - 1) + in) * RS + 12 * chi;
          }
          LATKE_UNROLL for (int r = 0; r < 12; r += 2) {
            T fr[CB], fi[CB];
            LATKE_UNROLL for (int b = 0; b < CB; ++b) {
              fr[b] = f[b][r];
              fi[b] = f[b][r + 1];
            }
            LATKE_UNROLL for (int u = 0; u < KB; ++u) {
              const T* v = v0 + (k0 + u < nvec ? k0 + u : nvec - 1) * RS;  // past the last vector: not kept
              const T vr = v[r], vi = v[r + 1];
              LATKE_UNROLL for (int b = 0; b < CB; ++b) {
                acc[u][b][0] += vr * fr[b];  // one product per statement: fused multiply-adds
                acc[u][b][0] += vi * fi[b];
                acc[u][b][1] += vr * fi[b];
                acc[u][b][1] -= vi * fr[b];
              }
            }
          }
        }
        LATKE_UNROLL for (int u = 0; u < KB; ++u) LATKE_UNROLL for (int b = 0; b < CB; ++b) {
          if (k0 + u >= nvec || c0 + b >= count) continue;
          sums[((static_cast<long>(c0 + b) * groups + g) * nvec + k0 + u) * 2 + chi] +=
              Complex<double>(acc[u][b][0], acc[u][b][1]);
        }
      });
    }
    t.sync();
    t.for_each(36 * count * nvec, [&](int i) {  // (column, output, k, chirality, re or im)
      const int q = i & 3, k = (i >> 2) % nvec, cb = (i >> 2) / nvec, c = cb / 9, b = cb % 9;
      Complex<double> v(0);
      for (int g = b; g < (b == 8 ? groups : b + 1); ++g)
        v += sums[((static_cast<long>(c) * groups + g) * nvec + k) * 2 + (q >> 1)];
      RealArray<SC> out = coarse;
      out.data += cb * coarse_stride;
      out.set(2 * ((q >> 1) * nvec + k) + (q & 1), cx, (q & 1) ? v.im : v.re);
    });
  }
};

/// The chunks of RestrictPartsKernel or RestrictSplitKernel added into the coarse fields'
/// parity `parity`: output b of `outs` from complex values 2 b, 2 b + 1 (the chiralities) of
/// each record of `width` complex values.
template <typename SC>
struct RestrictCombineKernel {
  RealArray<SC> coarse[9];
  const Complex<double>* parts;
  int nvec, vcb, chunks, outs, width;
  /// A set (one output): field m's coarse reals coarse_stride after field m - 1's, its parts
  /// parts_stride after; 0: one field.
  long coarse_stride = 0, parts_stride = 0;
  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    const int k = idx % nvec, cx = (idx / nvec) % vcb, m = idx / (nvec * vcb);
    const Complex<double>* p = parts + m * parts_stride;
    for (int b = 0; b < outs; ++b)
      for (int chi = 0; chi < 2; ++chi) {
        Complex<double> s;
        for (int c = 0; c < chunks; ++c) s += p[((static_cast<long>(c) * vcb + cx) * nvec + k) * width + 2 * b + chi];
        RealArray<SC> out = coarse[b];
        out.data += m * coarse_stride;
        out.set(2 * (chi * nvec + k), cx, s.re);
        out.set(2 * (chi * nvec + k) + 1, cx, s.im);
      }
  }
};

/// Adds the chunks of `parts` (records of `width` complex values) into parity `parity` of the
/// coarse fields outs[0, n_out) with RestrictCombineKernel; `fields` fields of a set, strides
/// as the kernel's (one field: 0).
template <typename SC>
void combine_parts(Backend be, const ColorSpinorField* const* outs, int n_out, int parity, const Complex<double>* parts,
                   int nvec, int vcb, int chunks, int width, int fields = 1, long coarse_stride = 0,
                   long parts_stride = 0) {
  RestrictCombineKernel<SC> c{};
  for (int b = 0; b < n_out; ++b) c.coarse[b] = real_array<SC>(*outs[b], parity);
  c.parts = parts;
  c.nvec = nvec;
  c.vcb = vcb;
  c.chunks = chunks;
  c.outs = n_out;
  c.width = width;
  c.coarse_stride = coarse_stride;
  c.parts_stride = parts_stride;
  launch(be, c, {fields * vcb * nvec}, compute_stream(), false);
}

/// fine(x)_m = sum_k V_k(x)_m e(a(x))_{chi(m), k}; one thread per (fine site, component) of
/// one parity, components fastest (a warp reads consecutive values of each packed record).
template <typename SV, typename SC, typename SF>
struct ProlongKernel {
  AggregateMap map;
  PackedBasis<SV> basis;
  RealArray<SC> coarse[2];  ///< by parity
  RealArray<SF> fine;       ///< the parity block being written
  int nvec, n_comp;
  int parity;
  /// A set of fields in one launch (Transfer::prolongate_set on coarse levels): field f's reals
  /// fine_stride / coarse_stride after field f - 1's, per_field threads each (0: one field).
  long fine_stride = 0, coarse_stride = 0;
  int per_field = 0;
  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    const int f = per_field > 0 ? idx / per_field : 0;
    if (per_field > 0) idx -= f * per_field;
    const int m = idx % n_comp, x_cb = idx / n_comp;
    int fc[4];
    map.fine.coords(x_cb, parity, fc);
    int cp;
    const int cx = map.coarse_site(fc, cp);
    RealArray<SC> e = coarse[cp];
    e.data += f * coarse_stride;
    RealArray<SF> out = fine;
    out.data += f * fine_stride;
    const int c0 = 2 * (2 * m >= n_comp ? nvec : 0);
    double ar = 0, ai = 0;
    for (int k = 0; k < nvec; ++k) {
      const Complex<double> v = basis.get(basis.record(parity, x_cb, k), m);
      const double er = e.template get<double>(c0 + 2 * k, cx), ei = e.template get<double>(c0 + 2 * k + 1, cx);
      ar += v.re * er - v.im * ei;
      ai += v.re * ei + v.im * er;
    }
    out.set(2 * m, x_cb, ar);
    out.set(2 * m + 1, x_cb, ai);
  }
};

/// P for fine fields of a compile-time shape (Wilson: 24 reals): one thread per fine site,
/// reading each basis vector's whole site with vector loads (coalesced across sites, as the
/// operators read spinors) and keeping the site's components in registers.
template <typename SV, typename SC, typename SF, int NR>
struct ProlongSiteKernel {
  AggregateMap map;
  BasisView<SV> basis;
  RealArray<SC> coarse[2];    ///< by parity
  SiteArray<SF, NR, 1> fine;  ///< the parity block being written
  int nvec, parity;
  LATKE_HOST_DEVICE void operator()(int x_cb, int) const {
    using T = typename compute_type<SV>::type;
    int fc[4];
    map.fine.coords(x_cb, parity, fc);
    int cp;
    const int cx = map.coarse_site(fc, cp);
    const RealArray<SC>& e = coarse[cp];
    T acc[NR] = {};
    for (int k = 0; k < nvec; ++k) {
      SiteArray<SV, NR, 1> vk;
      vk.data = basis.data + (2L * k + parity) * basis.block_reals;
      vk.norm = basis.norm ? basis.norm + (2L * k + parity) * basis.stride : nullptr;
      vk.stride = basis.stride;
      T v[NR];
      vk.load(v, x_cb);
      const T e0r = e.template get<T>(2 * k, cx), e0i = e.template get<T>(2 * k + 1, cx);
      const T e1r = e.template get<T>(2 * (nvec + k), cx), e1i = e.template get<T>(2 * (nvec + k) + 1, cx);
      LATKE_UNROLL for (int r = 0; r < NR; r += 2) {
        const T er = r < NR / 2 ? e0r : e1r, ei = r < NR / 2 ? e0i : e1i;
        acc[r] += v[r] * er - v[r + 1] * ei;
        acc[r + 1] += v[r] * ei + v[r + 1] * er;
      }
    }
    fine.save(acc, x_cb);
  }
};

/// R for a set of Wilson fine fields (Transfer::restrict_set), one team per aggregate. The
/// team stages a tile of the aggregate's sites in shared memory, in T: every field's values
/// there and every basis record (loads that do not wait on each other). Then each thread sums
/// over its slice of the tile's sites the products of one chirality for a block of KB vectors
/// by FB fields, from shared memory, so that each value loaded serves KB or FB products; the
/// tile's sums go, in double, into the slice's sums in shared memory, and the slices' sums into
/// the coarse fields at the end. (A thread per (aggregate, vector) kept 166 registers and
/// waited on a chain of loads per site.)
template <typename SV, typename SF, typename SC>
struct RestrictTeamSetKernel {
  using T = std::conditional_t<sizeof(SV) == 8 || sizeof(SF) == 8, double, float>;
  static constexpr int KB = 3, FB = 3, team = 128;
  AggregateMap map;
  PackedBasis<SV> basis;
  SiteArray<SF, 24, 1> fsite[2];  ///< field 0's blocks by parity
  RealArray<SC> coarse;           ///< field 0's block of the coarse parity `parity`
  long fine_stride, coarse_stride;
  int nvec, count, parity, only_parity, tile, slices;

  /// Blocks of outputs: (chirality, vector block, field block), chirality fastest.
  LATKE_HOST_DEVICE static int blocks(int nvec, int count) {
    return 2 * ((nvec + KB - 1) / KB) * ((count + FB - 1) / FB);
  }
  /// Shared bytes: the slices' sums (double), the tile's fields and records (T), its sites.
  LATKE_HOST_DEVICE static std::size_t bytes(int nvec, int count, int tile, int slices) {
    return sizeof(double) * 4L * slices * nvec * count + sizeof(T) * 24L * tile * (count + nvec) +
           2 * sizeof(int) * tile;
  }

  LATKE_HOST_DEVICE void operator()(const Team& t) const {
    const int cx = t.index, outs = 4 * nvec * count, nb = blocks(nvec, count), kblocks = (nvec + KB - 1) / KB;
    double* red = reinterpret_cast<double*>(t.shared());                   // [slice][k][m][chi re, chi im]
    T* fv = reinterpret_cast<T*>(red + static_cast<long>(slices) * outs);  // [j][m][24]
    T* bv = fv + 24L * tile * count;                                       // [j][k][24]
    int* sp = reinterpret_cast<int*>(bv + 24L * tile * nvec);              // the tile's sites' parities
    int* sx = sp + tile;                                                   // and indices (-1: skipped)
    int cc[4];
    map.coarse.coords(cx, parity, cc);
    const int sites = restrict_sites(map, -1, only_parity);
    const bool listed = lists_parity(map, only_parity);
    t.for_each(slices * outs, [&](int i) { red[i] = 0; });
    for (int j0 = 0; j0 < sites; j0 += tile) {
      const int cnt = sites - j0 < tile ? sites - j0 : tile;
      t.for_each(cnt, [&](int j) {  // walk_aggregate's j0 + j-th site
        int fx;
        const bool summed =
            walked_site(map, cc, BlockWalk(map, (j0 + j) * (listed ? 2 : 1)), only_parity, listed, sp[j], fx);
        sx[j] = summed ? fx : -1;
      });
      t.sync();
      t.for_each(cnt * count, [&](int i) {  // sites fastest: a field's neighbouring sites together
        const int j = i % cnt, m = i / cnt;
        T v[24] = {};
        if (sx[j] >= 0) {
          SiteArray<SF, 24, 1> f = fsite[sp[j]];
          f.data += m * fine_stride;
          f.load(v, sx[j]);
        }
        T* d = fv + (static_cast<long>(j) * count + m) * 24;
        LATKE_UNROLL for (int r = 0; r < 24; ++r) d[r] = v[r];
      });
      t.for_each(cnt * nvec, [&](int i) {  // vectors fastest: a site's records are contiguous
        constexpr int W = PackedBasis<SV>::W;
        const int k = i % nvec, j = i / nvec;
        T* d = bv + (static_cast<long>(j) * nvec + k) * 24;
        if (sx[j] < 0) {
          LATKE_UNROLL for (int r = 0; r < 24; ++r) d[r] = 0;
          return;
        }
        const long rec = basis.record(sp[j], sx[j], k);
        const T u = static_cast<T>(basis.unit(rec));
        LATKE_UNROLL for (int q = 0; q < 24 / W; ++q) {
          T word[W];
          basis.load_word(rec, q, word);
          LATKE_UNROLL for (int r = 0; r < W; ++r) d[q * W + r] = word[r] * u;
        }
      });
      t.sync();
      t.for_each(nb * slices, [&](int w) {
        const int s = w / nb, b = w - s * nb, chi = b & 1, kb = (b >> 1) % kblocks, mb = (b >> 1) / kblocks;
        const int k0 = kb * KB, m0 = mb * FB;
        T acc[KB][FB][2] = {};
        for (int j = s; j < cnt; j += slices) {
          T x[KB][12];
          LATKE_UNROLL for (int a = 0; a < KB; ++a) {
            const int k = k0 + a < nvec ? k0 + a : nvec - 1;  // past the last vector: a copy, not kept
            const T* src = bv + (static_cast<long>(j) * nvec + k) * 24 + 12 * chi;
            LATKE_UNROLL for (int r = 0; r < 12; ++r) x[a][r] = src[r];
          }
          LATKE_UNROLL for (int c = 0; c < FB; ++c) {
            const int m = m0 + c < count ? m0 + c : count - 1;
            const T* src = fv + (static_cast<long>(j) * count + m) * 24 + 12 * chi;
            T y[12];
            LATKE_UNROLL for (int r = 0; r < 12; ++r) y[r] = src[r];
            LATKE_UNROLL for (int a = 0; a < KB; ++a) LATKE_UNROLL for (int r = 0; r < 12; r += 2) {
              acc[a][c][0] += x[a][r] * y[r];  // one product per statement: fused multiply-adds
              acc[a][c][0] += x[a][r + 1] * y[r + 1];
              acc[a][c][1] += x[a][r] * y[r + 1];
              acc[a][c][1] -= x[a][r + 1] * y[r];
            }
          }
        }
        double* mine = red + static_cast<long>(s) * outs;
        LATKE_UNROLL for (int a = 0; a < KB; ++a) LATKE_UNROLL for (int c = 0; c < FB; ++c) {
          if (k0 + a >= nvec || m0 + c >= count) continue;
          double* o = mine + ((static_cast<long>(k0 + a) * count + m0 + c) * 2 + chi) * 2;
          o[0] += acc[a][c][0];
          o[1] += acc[a][c][1];
        }
      });
      t.sync();
    }
    t.for_each(nvec * count, [&](int i) {
      const int k = i % nvec, m = i / nvec;
      RealArray<SC> out = coarse;
      out.data += m * coarse_stride;
      LATKE_UNROLL for (int q = 0; q < 4; ++q) {  // chirality q / 2, re or im
        double v = 0;
        for (int s = 0; s < slices; ++s)
          v += red[static_cast<long>(s) * outs + (static_cast<long>(k) * count + m) * 4 + q];
        out.set(2 * ((q >> 1) * nvec + k) + (q & 1), cx, v);
      }
    });
  }
};

/// P for a set of Wilson fine fields (Transfer::prolongate_set): ProlongSiteKernel's thread per
/// fine site, for a group of MB fields, so that each basis vector's site is loaded once per
/// group rather than once per field. The warps of a window of 32 sites follow one another, one
/// per group, so that the groups after the first find the window's basis in cache rather than
/// in DRAM. Fields of a set: `fine_stride` / `coarse_stride` reals apart.
template <typename SV, typename SC, typename SF, int MB>
struct ProlongSiteSetKernel {
  AggregateMap map;
  BasisView<SV> basis;
  RealArray<SC> coarse[2];    ///< field 0's, by parity
  SiteArray<SF, 24, 1> fine;  ///< field 0's parity block being written
  long fine_stride, coarse_stride;
  int nvec, parity, count, groups;
  static constexpr int window = 32;
  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    using T = typename compute_type<SV>::type;
    const int w = idx / window, x_cb = (w / groups) * window + idx % window, m0 = (w % groups) * MB;
    if (x_cb >= map.fine.volume_cb) return;
    const int mn = count - m0 < MB ? count - m0 : MB;
    int fc[4];
    map.fine.coords(x_cb, parity, fc);
    int cp;
    const int cx = map.coarse_site(fc, cp);
    T acc[MB][24] = {};
    for (int k = 0; k < nvec; ++k) {
      SiteArray<SV, 24, 1> vk;
      vk.data = basis.data + (2L * k + parity) * basis.block_reals;
      vk.norm = basis.norm ? basis.norm + (2L * k + parity) * basis.stride : nullptr;
      vk.stride = basis.stride;
      T v[24];
      vk.load(v, x_cb);
      LATKE_UNROLL for (int m = 0; m < MB; ++m) {
        if (m >= mn) break;
        RealArray<SC> e = coarse[cp];
        e.data += (m0 + m) * coarse_stride;
        const T e0r = e.template get<T>(2 * k, cx), e0i = e.template get<T>(2 * k + 1, cx);
        const T e1r = e.template get<T>(2 * (nvec + k), cx), e1i = e.template get<T>(2 * (nvec + k) + 1, cx);
        LATKE_UNROLL for (int r = 0; r < 24; r += 2) {
          const T er = r < 12 ? e0r : e1r, ei = r < 12 ? e0i : e1i;
          acc[m][r] += v[r] * er - v[r + 1] * ei;
          acc[m][r + 1] += v[r] * ei + v[r + 1] * er;
        }
      }
    }
    LATKE_UNROLL for (int m = 0; m < MB; ++m) {
      if (m >= mn) break;
      SiteArray<SF, 24, 1> f = fine;
      f.data += (m0 + m) * fine_stride;
      f.save(acc[m], x_cb);
    }
  }
};

/// The packed basis from the vectors: one thread per (site, vector) of one parity.
template <typename SV, typename SP>
struct PackKernel {
  BasisView<SV> basis;
  PackedBasis<SP> packed;
  int parity;
  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    const int k = idx % packed.nvec, x = idx / packed.nvec, n_real = 2 * packed.n_comp;
    const long rec = packed.record(parity, x, k);
    const RealArray<SV> v = basis.at(k, parity);
    SP* d = packed.data + rec * n_real;
    if constexpr (sizeof(SP) == 2) {
      double mx = 0;
      for (int r = 0; r < n_real; ++r) mx = fmax(mx, fabs(v.template get<double>(r, x)));
      packed.scale[rec] = static_cast<float>(mx);
      const double inv = mx > 0 ? fixed_max / mx : 0.0;
      for (int r = 0; r < n_real; ++r) d[r] = to_fixed(static_cast<float>(v.template get<double>(r, x) * inv));
    } else {
      for (int r = 0; r < n_real; ++r) d[r] = static_cast<SP>(v.template get<double>(r, x));
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

std::size_t Transfer::bytes() const {
  return nvec_ * (v_.front().bytes() + (v_half_.empty() ? 0 : v_half_.front().bytes())) + packed_.bytes() +
         packed_scale_.bytes();
}

void Transfer::pack() {
  const int vcb = fine_->volume_cb(), n_comp = fine_param_.nspin * fine_param_.ncolor;
  const std::size_t records = static_cast<std::size_t>(2) * vcb * nvec_;
  const MemoryKind mk = memory_for(fine_param_.backend);
  if (!packed_.data()) {
    packed_ = Buffer(mk, records * n_comp * 2 * real_bytes(packed_precision_));
    if (packed_precision_ == Precision::half) packed_scale_ = Buffer(mk, records * sizeof(float));
  }
  // A Wilson fine level's P reads the vectors site by site (prolongate): with a half basis, from
  // a half copy of them (half P's bytes; 2.4 GB more for 24 vectors on 32^3x64).
  if (packed_precision_ == Precision::half && fine_param_.nspin * fine_param_.ncolor == 12) {
    if (v_half_.empty()) v_half_ = ColorSpinorField::make_set(fine_, fine_param(Precision::half), nvec_);
    for (int k = 0; k < nvec_; ++k) v_half_[k].copy_from(v_[k]);
  }
  dispatch_full(fine_param_.precision, "multigrid basis", [&](auto sv) {
    using SV = decltype(sv);
    auto run = [&](auto sp) {
      using SP = decltype(sp);
      for (int parity = 0; parity < 2; ++parity)
        launch(
            fine_param_.backend,
            PackKernel<SV, SP>{basis_view<SV>(v_), packed_view<SP>(packed_, packed_scale_, vcb, n_comp, nvec_), parity},
            {vcb * nvec_}, compute_stream(), false);
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
  require(fine.nspin() == fine_param_.nspin && fine.ncolor() == fine_param_.ncolor &&
              fine.lattice().volume_cb() == fine_->volume_cb(),
          "prolongate: the fine field is not a field of the level's shape");
  require(coarse.nspin() == 2 && coarse.ncolor() == nvec_ && coarse.n_parity() == 2 &&
              coarse.lattice().volume_cb() == coarse_->volume_cb(),
          "prolongate: the coarse field is not a full field of the coarse level's shape");
  const AggregateMap map = aggregate_map(*fine_, *coarse_, block_);
  // The Wilson fine level: one thread per site, from the basis vectors, or their half copy
  // with a half basis (a packed half basis read by records per site was slower than the single
  // vectors: one site's records of all vectors lie far from the next site's, so a warp's loads
  // do not coalesce).
  if (fine.site_reals() == 24) {
    const std::vector<ColorSpinorField>& basis = v_half_.empty() ? v_ : v_half_;
    dispatch_precision(basis.front().precision(), [&](auto sv) {
      dispatch_full(coarse.precision(), "prolongate (coarse field)", [&](auto sc) {
        dispatch_full(fine.precision(), "prolongate (fine field)", [&](auto sf) {
          using SV = decltype(sv);
          using SC = decltype(sc);
          using SF = decltype(sf);
          for (int b = 0; b < fine.n_parity(); ++b) {
            ProlongSiteKernel<SV, SC, SF, 24> k{map,
                                                basis_view<SV>(basis),
                                                {real_array<SC>(coarse, 0), real_array<SC>(coarse, 1)},
                                                fine.accessor<SF, 3, 4>(b).a,
                                                nvec_,
                                                fine.block_parity(b)};
            launch(fine.backend(), k, {fine_->volume_cb()});
          }
        });
      });
    });
    return;
  }
  prolongate_packed(fine, coarse, 1);
}

void Transfer::prolongate_unit(ColorSpinorField& fine, int col, int cls) const {
  require(fine.nspin() == fine_param_.nspin && fine.ncolor() == fine_param_.ncolor && fine.n_parity() == 2,
          "prolongate_unit: the fine field is not a full field of the level's shape");
  require(col >= 0 && col < 2 * nvec_ && (cls == probe_all || (cls >= 0 && cls < n_probe_classes)),
          "prolongate_unit: column ", col, " or class ", cls, " out of range");
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

namespace {

void require_restrict_fields(const ColorSpinorField& fine, const ColorSpinorField* const* coarse, int n_coarse,
                             const SpinorParam& fine_param, int nvec, const Lattice& coarse_lattice,
                             bool one_parity = false) {
  require(
      fine.nspin() == fine_param.nspin && fine.ncolor() == fine_param.ncolor && (fine.n_parity() == 2 || one_parity),
      "restrict: the fine field is not a ", one_parity ? "" : "full ", "field of the level's shape");
  for (int i = 0; i < n_coarse; ++i) {
    const ColorSpinorField* c = coarse[i];
    require(!c || (c->nspin() == 2 && c->ncolor() == nvec && c->n_parity() == 2 &&
                   c->lattice().volume_cb() == coarse_lattice.volume_cb() && c->precision() == coarse[0]->precision()),
            "restrict: a coarse field is not a full field of the coarse level's shape");
  }
}

}  // namespace

namespace {
/// Fields per thread of the set P (the basis read once per group from DRAM, the other groups
/// from cache): 2 beat 3, 4 and 6 (fewer registers, more warps in flight).
constexpr int prolong_group = 2;
/// Whether a set's fields can go through the set transfer kernels: a Wilson fine level's fields
/// in double or single (whole-site loads, no norms), and coarse fields of one precision.
bool wilson_set(const std::vector<ColorSpinorField>& fine, const std::vector<ColorSpinorField>& coarse) {
  return fine.size() > 1 && is_set(fine) && is_set(coarse) && fine[0].site_reals() == 24 &&
         fine[0].precision() != Precision::half && coarse[0].precision() != Precision::half;
}
/// Whether a coarse level's set goes through one launch of the one-field kernels for all its
/// fields (fine fields of any other shape, double or single, and coarse fields of one precision).
bool coarse_set(const std::vector<ColorSpinorField>& fine, const std::vector<ColorSpinorField>& coarse) {
  return fine.size() > 1 && is_set(fine) && is_set(coarse) && fine[0].site_reals() != 24 &&
         fine[0].precision() != Precision::half && coarse[0].precision() != Precision::half;
}
}  // namespace

void Transfer::restrict_set(std::vector<ColorSpinorField>& coarse, const std::vector<ColorSpinorField>& fine) const {
  require(coarse.size() == fine.size(), "restrict_set: sets of ", fine.size(), " and ", coarse.size(),
          " fields; expected equal sizes");
  bool words = false;
  if (packed_.data()) with_packed([&](auto basis) { words = basis.words; });
  const bool wilson = wilson_set(fine, coarse) && words;
  if (!wilson && !coarse_set(fine, coarse)) {
    for (std::size_t k = 0; k < fine.size(); ++k) restrict_to(coarse[k], fine[k]);
    return;
  }
  const ColorSpinorField& f0 = fine[0];
  const ColorSpinorField* const out[1] = {&coarse[0]};
  require_restrict_fields(f0, out, 1, fine_param_, nvec_, *coarse_, true);
  const int n = static_cast<int>(fine.size());
  const AggregateMap map = aggregate_map(*fine_, *coarse_, block_);
  const int vcb = coarse_->volume_cb();
  const int only = f0.n_parity() == 1 ? f0.block_parity(0) : -1;
  const long fine_stride = static_cast<long>(f0.n_parity()) * f0.site_reals() * f0.lattice().volume_cb();
  const long coarse_stride = 2L * coarse[0].site_reals() * vcb;
  // A coarse level's set goes through the one-field kernels, one launch per step for all
  // fields, with parts sized for one field of width 4 n (RestrictPartsKernel's records).
  int chunks = 0, per_field = 0;
  Complex<double>* parts = nullptr;
  if (!wilson) {
    parts = restrict_parts(restrict_sites(map, -1, only), 4 * n, f0.backend(), chunks);
    per_field = chunks * vcb * nvec_;
  }
  const long parts_stride = 4L * per_field;
  with_packed([&](auto basis) {
    using SV = std::remove_pointer_t<decltype(basis.data)>;
    dispatch_full(f0.precision(), "restrict_set (fine fields)", [&](auto sf) {
      dispatch_full(coarse[0].precision(), "restrict_set (coarse fields)", [&](auto sc) {
        using SF = decltype(sf);
        using SC = decltype(sc);
        if (wilson) {
          using K = RestrictTeamSetKernel<SV, SF, SC>;
          SiteArray<SF, 24, 1> fs[2];
          for (int b = 0; b < f0.n_parity(); ++b) fs[f0.block_parity(b)] = f0.accessor<SF, 3, 4>(b).a;
          const int slices = std::max(1, K::team / K::blocks(nvec_, n));
          int tile = 8;  // sites per tile: the most that leave room for four teams on an SM
          while (tile > 1 && K::bytes(nvec_, n, tile, slices) > 48 * 1024) tile /= 2;
          for (int parity = 0; parity < 2; ++parity) {
            K k{map,         basis,         {fs[0], fs[1]}, real_array<SC>(coarse[0], parity),
                fine_stride, coarse_stride, nvec_,          n,
                parity,      only,          tile,           slices};
            launch_teams(f0.backend(), k, vcb, K::team, K::bytes(nvec_, n, tile, slices), 0);
          }
          return;
        }
        RealArray<SF> fr[2];
        for (int b = 0; b < f0.n_parity(); ++b) fr[f0.block_parity(b)] = real_array<SF>(f0, b);
        for (int parity = 0; parity < 2; ++parity) {
          RestrictPartsKernel<SV, SF> k{map,    basis, {fr[0], fr[1]}, {},  parts, nvec_, f0.site_reals(),
                                        parity, -1,    chunks,         only};
          k.fine_stride = fine_stride;
          k.parts_stride = parts_stride;
          k.per_field = per_field;
          launch(f0.backend(), k, {n * per_field}, compute_stream(), false);
          combine_parts<SC>(f0.backend(), out, 1, parity, parts, nvec_, vcb, chunks, 4, n, coarse_stride, parts_stride);
        }
      });
    });
  });
}

void Transfer::prolongate_set(std::vector<ColorSpinorField>& fine, const std::vector<ColorSpinorField>& coarse) const {
  require(coarse.size() == fine.size(), "prolongate_set: sets of ", coarse.size(), " and ", fine.size(),
          " fields; expected equal sizes");
  const bool wilson = wilson_set(fine, coarse);
  if (!wilson && !coarse_set(fine, coarse)) {
    for (std::size_t k = 0; k < fine.size(); ++k) prolongate(fine[k], coarse[k]);
    return;
  }
  const ColorSpinorField &f0 = fine[0], &c0 = coarse[0];
  require(f0.nspin() == fine_param_.nspin && f0.ncolor() == fine_param_.ncolor &&
              f0.lattice().volume_cb() == fine_->volume_cb(),
          "prolongate_set: the fine fields are not fields of the level's shape");
  require(
      c0.nspin() == 2 && c0.ncolor() == nvec_ && c0.n_parity() == 2 && c0.lattice().volume_cb() == coarse_->volume_cb(),
      "prolongate_set: the coarse fields are not full fields of the coarse level's shape");
  const int n = static_cast<int>(fine.size());
  if (!wilson) {
    prolongate_packed(f0, c0, n);
    return;
  }
  const AggregateMap map = aggregate_map(*fine_, *coarse_, block_);
  const long fine_stride = static_cast<long>(f0.n_parity()) * f0.site_reals() * f0.lattice().volume_cb();
  const long coarse_stride = 2L * c0.site_reals() * coarse_->volume_cb();
  const int groups = (n + prolong_group - 1) / prolong_group;
  const std::vector<ColorSpinorField>& basis = v_half_.empty() ? v_ : v_half_;
  dispatch_precision(basis.front().precision(), [&](auto sv) {
    dispatch_full(c0.precision(), "prolongate_set (coarse fields)", [&](auto sc) {
      dispatch_full(f0.precision(), "prolongate_set (fine fields)", [&](auto sf) {
        using SV = decltype(sv);
        using SC = decltype(sc);
        using SF = decltype(sf);
        for (int b = 0; b < f0.n_parity(); ++b) {
          ProlongSiteSetKernel<SV, SC, SF, prolong_group> k{map,
                                                            basis_view<SV>(basis),
                                                            {real_array<SC>(c0, 0), real_array<SC>(c0, 1)},
                                                            f0.accessor<SF, 3, 4>(b).a,
                                                            fine_stride,
                                                            coarse_stride,
                                                            nvec_,
                                                            f0.block_parity(b),
                                                            n,
                                                            groups};
          using K = decltype(k);
          const int windows = (fine_->volume_cb() + K::window - 1) / K::window;
          launch(f0.backend(), k, {groups * windows * K::window});
        }
      });
    });
  });
}

void Transfer::restrict_impl(ColorSpinorField& coarse, ColorSpinorField* first, const ColorSpinorField& fine,
                             int mu) const {
  const ColorSpinorField* const out[2] = {&coarse, first};
  const bool one_parity = fine.n_parity() == 1;
  require_restrict_fields(fine, out, 2, fine_param_, nvec_, *coarse_, mu < 0);
  const AggregateMap map = aggregate_map(*fine_, *coarse_, block_);
  const int vcb = coarse_->volume_cb();
  // A field of one parity is f with zeros on the other: R sums over its sites alone.
  const int only = one_parity ? fine.block_parity(0) : -1;
  int chunks;
  Complex<double>* parts = restrict_parts(restrict_sites(map, mu, only), 4, fine.backend(), chunks);
  with_packed([&](auto basis) {
    using SV = std::remove_pointer_t<decltype(basis.data)>;
    dispatch_precision(fine.precision(), [&](auto sf) {
      dispatch_full(coarse.precision(), "restrict (coarse field)", [&](auto sc) {
        using SF = decltype(sf);
        using SC = decltype(sc);
        // By fine parity: the field's blocks (a one-parity field's sole block at its parity).
        RealArray<SF> fr[2];
        SiteArray<SF, 24, 1> fs[2];
        for (int b = 0; b < fine.n_parity(); ++b) {
          fr[fine.block_parity(b)] = real_array<SF>(fine, b);
          if (fine.site_reals() == 24) fs[fine.block_parity(b)] = fine.accessor<SF, 3, 4>(b).a;
        }
        for (int parity = 0; parity < 2; ++parity) {
          if (fine.site_reals() == 24 && basis.words) {  // the Wilson fine level: whole sites of f
            RestrictPartsKernel<SV, SF, 24> k{
                map, basis, {fr[0], fr[1]}, {fs[0], fs[1]}, parts, nvec_, fine.site_reals(), parity, mu, chunks, only};
            launch(fine.backend(), k, {chunks * vcb * nvec_}, compute_stream(), false);
          } else {
            RestrictPartsKernel<SV, SF> k{map,    basis, {fr[0], fr[1]}, {},  parts, nvec_, fine.site_reals(),
                                          parity, mu,    chunks,         only};
            launch(fine.backend(), k, {chunks * vcb * nvec_}, compute_stream(), false);
          }
          combine_parts<SC>(fine.backend(), out, first ? 2 : 1, parity, parts, nvec_, vcb, chunks, 4);
        }
      });
    });
  });
}

void Transfer::prolongate_packed(const ColorSpinorField& f0, const ColorSpinorField& c0, int n) const {
  const int n_comp = f0.site_reals() / 2;
  const AggregateMap map = aggregate_map(*fine_, *coarse_, block_);
  const int per_field = fine_->volume_cb() * n_comp;  // components fastest
  with_packed([&](auto basis) {
    using SV = std::remove_pointer_t<decltype(basis.data)>;
    dispatch_full(c0.precision(), "prolongate (coarse field)", [&](auto sc) {
      dispatch_full(f0.precision(), "prolongate (fine field)", [&](auto sf) {
        using SC = decltype(sc);
        using SF = decltype(sf);
        for (int b = 0; b < f0.n_parity(); ++b) {
          ProlongKernel<SV, SC, SF> k{map,
                                      basis,
                                      {real_array<SC>(c0, 0), real_array<SC>(c0, 1)},
                                      real_array<SF>(f0, b),
                                      nvec_,
                                      n_comp,
                                      f0.block_parity(b)};
          k.fine_stride = static_cast<long>(f0.n_parity()) * f0.site_reals() * f0.lattice().volume_cb();
          k.coarse_stride = 2L * c0.site_reals() * coarse_->volume_cb();
          k.per_field = per_field;
          launch(f0.backend(), k, {n * per_field});
        }
      });
    });
  });
}

Complex<double>* Transfer::restrict_parts(int n_sites, int width, Backend backend, int& chunks) const {
  // Chunks of each aggregate's sites: enough threads for the device (about 2^20), each
  // chunk at least 2 sites.
  const int vcb = coarse_->volume_cb();
  chunks = std::max(1, std::min(n_sites / 2, (1 << 20) / std::max(1, vcb * nvec_)));
  const std::size_t bytes = static_cast<std::size_t>(chunks) * vcb * nvec_ * width * sizeof(Complex<double>);
  if (parts_.bytes() < bytes) parts_ = Buffer(memory_for(backend), bytes);
  return static_cast<Complex<double>*>(parts_.data());
}

void Transfer::restrict_split(std::vector<ColorSpinorField>& coarse, const ColorSpinorField& site,
                              const std::vector<ColorSpinorField>& face) const {
  require(coarse.size() == 9 && face.size() == 4, "restrict_split: ", coarse.size(), " coarse fields and ", face.size(),
          " faces; expected 9 and 4");
  const ColorSpinorField* const out[9] = {&coarse[0], &coarse[1], &coarse[2], &coarse[3], &coarse[4],
                                          &coarse[5], &coarse[6], &coarse[7], &coarse[8]};
  require_restrict_fields(site, out, 9, fine_param_, nvec_, *coarse_);
  for (int mu = 0; mu < 4; ++mu) {
    require_restrict_fields(face[mu], out, 0, fine_param_, nvec_, *coarse_);
    require(face[mu].precision() == site.precision(), "restrict_split: face ", mu, " is in ",
            to_string(face[mu].precision()), ", the site term in ", to_string(site.precision()));
  }
  const AggregateMap map = aggregate_map(*fine_, *coarse_, block_);
  const int vcb = coarse_->volume_cb();
  int chunks;
  Complex<double>* parts = restrict_parts(map.block_volume, 18, site.backend(), chunks);
  const ColorSpinorField* const in[5] = {&site, &face[0], &face[1], &face[2], &face[3]};
  with_packed([&](auto basis) {
    using SV = std::remove_pointer_t<decltype(basis.data)>;
    dispatch_precision(site.precision(), [&](auto sf) {
      dispatch_full(coarse[0].precision(), "restrict (coarse field)", [&](auto sc) {
        using SF = decltype(sf);
        using SC = decltype(sc);
        auto run = [&](auto nr, int parity) {
          constexpr int NR = decltype(nr)::value;
          RestrictSplitKernel<SV, SF, NR> k;
          k.map = map;
          k.basis = basis;
          for (int i = 0; i < 5; ++i)
            for (int p = 0; p < 2; ++p) {
              k.fine[i][p] = real_array<SF>(*in[i], p);
              if constexpr (NR > 0) k.fsite[i][p] = in[i]->template accessor<SF, 3, 4>(p).a;
            }
          k.parts = parts;
          k.nvec = nvec_;
          k.fine_reals = site.site_reals();
          k.parity = parity;
          k.chunks = chunks;
          launch(site.backend(), k, {chunks * vcb * nvec_}, compute_stream(), false);
        };
        for (int parity = 0; parity < 2; ++parity) {
          if (site.site_reals() == 24 && basis.words)  // the Wilson fine level: whole sites of f
            run(std::integral_constant<int, 24>{}, parity);
          else
            run(std::integral_constant<int, 0>{}, parity);
          combine_parts<SC>(site.backend(), out, 9, parity, parts, nvec_, vcb, chunks, 18);
        }
      });
    });
  });
}

void Transfer::restrict_split_set(std::vector<ColorSpinorField>& coarse, const std::vector<ColorSpinorField>& site,
                                  const std::vector<ColorSpinorField>& face) const {
  const int n = static_cast<int>(site.size());
  require(n >= 1 && face.size() == 4 * site.size() && coarse.size() == 9 * site.size(), "restrict_split_set: ", n,
          " site terms, ", face.size(), " faces and ", coarse.size(), " coarse fields; expected n, 4 n and 9 n");
  bool words = false;
  if (packed_.data()) with_packed([&](auto basis) { words = basis.words; });
  const ColorSpinorField& f0 = site[0];
  const bool together = n > 1 && words && is_set(site) && is_set(face) && is_set(coarse) && f0.site_reals() == 24 &&
                        f0.n_parity() == 2 && f0.precision() != Precision::half &&
                        face[0].precision() == f0.precision() && coarse[0].precision() != Precision::half;
  // The most columns whose sums and one site's tile fit a team's shared memory (at most 8 with
  // 24 vectors; fewer with many vectors): a larger set goes in parts of that many.
  int fit = n;
  while (together && fit > 1 &&
         RestrictSplitSetKernel<double, double, double>::bytes(nvec_, fit, 1) > team_shared_limit(f0.backend()))
    --fit;
  if (fit > 1 && fit < n) {
    for (int c0 = 0; c0 < n; c0 += fit) {
      const int m = std::min(fit, n - c0);
      std::vector<ColorSpinorField> out(coarse.begin() + 9 * c0, coarse.begin() + 9 * (c0 + m)),
          s(site.begin() + c0, site.begin() + c0 + m), faces(face.begin() + 4 * c0, face.begin() + 4 * (c0 + m));
      restrict_split_set(out, s, faces);
    }
    return;
  }
  if (!together || fit < 2) {
    for (int c = 0; c < n; ++c) {
      std::vector<ColorSpinorField> out(coarse.begin() + 9 * c, coarse.begin() + 9 * c + 9),
          faces(face.begin() + 4 * c, face.begin() + 4 * c + 4);
      restrict_split(out, site[c], faces);
    }
    return;
  }
  const ColorSpinorField* const out[1] = {&coarse[0]};
  require_restrict_fields(f0, out, 1, fine_param_, nvec_, *coarse_);
  require_restrict_fields(face[0], out, 0, fine_param_, nvec_, *coarse_);
  const AggregateMap map = aggregate_map(*fine_, *coarse_, block_);
  const int vcb = coarse_->volume_cb();
  const long fine_stride = 2L * f0.site_reals() * f0.lattice().volume_cb();
  const long coarse_stride = 2L * coarse[0].site_reals() * vcb;
  with_packed([&](auto basis) {
    using SV = std::remove_pointer_t<decltype(basis.data)>;
    dispatch_full(f0.precision(), "restrict_split_set (fine fields)", [&](auto sf) {
      dispatch_full(coarse[0].precision(), "restrict_split_set (coarse fields)", [&](auto sc) {
        using SF = decltype(sf);
        using SC = decltype(sc);
        using K = RestrictSplitSetKernel<SV, SF, SC>;
        // Sites per tile: at most 8, within about half an SM's shared memory (two teams on an
        // SM), at least one.
        int tile = 8;
        while (tile > 1 && K::bytes(nvec_, n, tile) > 112 * 1024) --tile;
        SiteArray<SF, 24, 1> sa[2], fa[2];
        for (int b = 0; b < 2; ++b) {
          sa[f0.block_parity(b)] = f0.accessor<SF, 3, 4>(b).a;
          fa[face[0].block_parity(b)] = face[0].accessor<SF, 3, 4>(b).a;
        }
        for (int parity = 0; parity < 2; ++parity) {
          K k{map,
              basis,
              {sa[0], sa[1]},
              {fa[0], fa[1]},
              real_array<SC>(coarse[0], parity),
              fine_stride,
              coarse_stride,
              nvec_,
              n,
              parity,
              tile};
          launch_teams(f0.backend(), k, vcb, K::team, K::bytes(nvec_, n, tile), 0);
        }
      });
    });
  });
}

}  // namespace latke::mg
