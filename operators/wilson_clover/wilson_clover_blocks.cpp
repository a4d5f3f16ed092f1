// The domain-local operator's block solver (WilsonCloverOperator::solve_blocks): minimal-
// residual steps on every block of the rank, each block kept on chip by one team (a CUDA
// thread block; an OpenMP iteration on the CPU) for all its steps.
//
// A team holds its block's right-hand side and residual r (solved parity p), Mhat r, the
// solution x and the intermediate A_qq^-1 D_qp r (parity q) in shared memory, in the compute
// precision, per site of the solved parity its index on the rank (where b is read and x
// written), and per site of either parity its packed block coordinates. Per step: one pass over
// the block's q sites (hops from r), one over its p sites (hops from the intermediate, the
// epilogue of the Schur form and the block sums <Mhat r, r>, |Mhat r|^2 over the team), and the
// update of x and r. The two passes are one rolled loop around one unrolled copy of the eight
// hops: a copy per pass too did not fit the instruction cache (the kernel waited on instruction
// fetch more than on any other stall), and one rolled loop over the hops spent more
// instructions choosing each hop's projection than the copy costs. The kernel is bound by
// instruction issue, so its arithmetic is fused multiply-adds (mac) wherever it can be. Links and
// clover are read from copies in block-major site order (made at the first call), so that a
// team's loads are contiguous: in the rank's order a 4^4 block uses two sites of every 32-byte
// sector, and a SAP colour, whose neighbours in x are the other colour, fetched four times the
// data it used. The first step brings them from DRAM, the others find them in L1/L2 (a block of
// 4^4 sites holds 24 KB of half-precision links and 36 KB of clover inverse). DRAM traffic per
// application is then one read of the links, clover and right-hand side and one write of the
// solution. Where the blocks are shorter than the lattice in t, the copies hold each block in
// its temporal gauge (BlockFrame), so that the t hops within a block need no link.
//
// In half precision the same steps also run in FP16 pair arithmetic (BlockMRPairKernel): a team
// solves two blocks of one colour, site i of each in the two lanes of every Half2, with links
// and clover from pair copies in IEEE half and the pair's links in shared memory.
//
// Both kernels also run one colour step of SAP with the residual kept on both parities
// (sap_blocks, SapIo): the block's Schur residual formed from its s_p and R_q, the MR steps, the
// back-substituted X_q and the block's new residual, as passes of the same rolled loop.
#include "operators/wilson_clover/wilson_clover.h"
#include "operators/wilson_clover/wilson_clover_launch_impl.h"
#include "src/core/block_grid.h"
#include "src/core/launch_team.h"
#include "src/core/log.h"
#include "src/core/mr_sums.h"

namespace latke {

namespace {

/// A block's spinors in shared memory, site-major: site i's 12 complex numbers at
/// d[13 i, 13 i + 12), one padding complex after them. Each complex number is one vector load
/// (64 bits in single, 128 in double) at an offset known at compile time, and the padding puts
/// the loads of 16 consecutive sites in distinct banks.
template <typename T>
struct SharedSpinors {
  static constexpr int site_complex = 13;
  Complex<T>* d;
  LATKE_HOST_DEVICE LATKE_INLINE ColorSpinor<T, 3, 4> load(int i) const {
    const Complex<T>* p = d + site_complex * i;
    ColorSpinor<T, 3, 4> v;
    LATKE_UNROLL for (int s = 0; s < 4; ++s) LATKE_UNROLL for (int c = 0; c < 3; ++c) v.d[s][c] = p[3 * s + c];
    return v;
  }
  LATKE_HOST_DEVICE LATKE_INLINE void save(const ColorSpinor<T, 3, 4>& v, int i) const {
    Complex<T>* p = d + site_complex * i;
    LATKE_UNROLL for (int s = 0; s < 4; ++s) LATKE_UNROLL for (int c = 0; c < 3; ++c) p[3 * s + c] = v.d[s][c];
  }
};

/// Two blocks' spinors in the lanes of Half2, as SharedSpinors<float> lays out one block's, each
/// complex number stored as its two Half2's bits (8 bytes on the host as on the device, where a
/// load is one 64-bit access and the bits are the __half2 itself).
struct alignas(8) Half2Words {
  std::uint32_t re, im;
};
template <>
struct SharedSpinors<Half2> {
  static constexpr int site_complex = 13;
  Half2Words* d;
  LATKE_HOST_DEVICE LATKE_INLINE ColorSpinor<Half2, 3, 4> load(int i) const {
    const Half2Words* p = d + site_complex * i;
    ColorSpinor<Half2, 3, 4> v;
    LATKE_UNROLL for (int s = 0; s < 4; ++s) LATKE_UNROLL for (int c = 0; c < 3; ++c) {
      const Half2Words w = p[3 * s + c];
      v.d[s][c] = Complex<Half2>(Half2::from_bits(w.re), Half2::from_bits(w.im));
    }
    return v;
  }
  LATKE_HOST_DEVICE LATKE_INLINE void save(const ColorSpinor<Half2, 3, 4>& v, int i) const {
    Half2Words* p = d + site_complex * i;
    LATKE_UNROLL for (int s = 0; s < 4; ++s) LATKE_UNROLL for (int c = 0; c < 3; ++c) p[3 * s + c] =
        Half2Words{v.d[s][c].re.bits(), v.d[s][c].im.bits()};
  }
};

/// A block's links in the block-major copy: site i of either parity of block B at B n + i.
template <typename Gauge>
struct BlockLinks {
  Gauge g;
  int first;  ///< B n: the block's first site
  LATKE_HOST_DEVICE LATKE_INLINE auto load(int mu, int i, int parity) const { return g.load(mu, first + i, parity); }
};

/// Copies one parity of a site array into block-major order: dst site B n + i = src site
/// rank_cb(origin of B, i, parity).
template <typename Store, int NReal, int NGroup>
struct BlockMajorGather {
  SiteArray<Store, NReal, NGroup> dst, src;
  BlockGrid grid;
  int parity;
  LATKE_HOST_DEVICE void operator()(int k, int) const {
    const int n = grid.blk.volume_cb, b = k / n, i = k - b * n;
    int o[4];
    grid.origin(b, o);
    const int x = grid.rank_cb(o, i, parity);
    using A = SiteArray<Store, NReal, NGroup>;
    static_for<A::Cut::count()>([&](auto j) {
      constexpr int J = decltype(j)::value;
      *dst.template word<J>(k) = *src.template word<J>(x);
    });
    if constexpr (A::is_half && NGroup > 0)
      for (int g = 0; g < NGroup; ++g) dst.norm[g * dst.stride + k] = src.norm[g * src.stride + x];
  }
};

/// Each block's temporal gauge. The gauge transform G(x) of a block's site x is the product of
/// the block's t links from its first time slice up to x (1 on that slice), so that the t links
/// within the block, G(x) U_t(x) G(x + t)^dagger, are 1. Where the blocks are shorter than the
/// lattice in t (cut there), the block operator in that gauge is G M_B G^dagger: its MR steps
/// are the original ones rotated site by site (MR is invariant under a unitary change of basis),
/// and its t hops need no link. The block kernels rotate what they read into the block's frame
/// (G v) and what they write back out of it (G^dagger v).
template <typename Store, Reconstruct R>
struct BlockFrame {
  using Real = typename compute_type<Store>::type;
  GaugeAccessor<Store, R> u;  ///< the rank's links, in rank order
  BlockGrid grid;

  /// G at block coordinates c of the block at rank origin o.
  LATKE_HOST_DEVICE ColorMatrix<Real, 3> g(const int (&o)[4], const int (&c)[4]) const {
    ColorMatrix<Real, 3> m;
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b) m.e[a][b] = Complex<Real>(a == b ? Real(1) : Real(0), Real(0));
    int x[4] = {o[0] + c[0], o[1] + c[1], o[2] + c[2], o[3]};
    for (int k = 0; k < c[3]; ++k, ++x[3])
      m = m * u.load(3, grid.rank.full_index(x) >> 1, (x[0] + x[1] + x[2] + x[3]) & 1);
    return m;
  }
};

/// The blocks' links in their temporal gauge, as the reals of R's storage, site i of parity
/// `parity` of a block: for mu < 3 G(x) U_mu(x) G(x + mu)^dagger (x + mu wrapped within the
/// block: a link out of a block cut in mu is not read), for mu = 3 G(x) itself.
template <typename Store, Reconstruct R>
struct FrameLinks {
  static constexpr int n_real = static_cast<int>(R);
  using Real = typename BlockFrame<Store, R>::Real;
  BlockFrame<Store, R> f;
  int mu = 0;
  LATKE_HOST_DEVICE void load(Real (&v)[n_real], int block, int i, int parity) const {
    int o[4], c[4];
    f.grid.origin(block, o);
    f.grid.blk.coords(i, parity, c);
    ColorMatrix<Real, 3> m = f.g(o, c);
    if (mu < 3) {
      int cn[4] = {c[0], c[1], c[2], c[3]}, x[4];
      cn[mu] = (c[mu] + 1) % f.grid.blk.L[mu];
      for (int a = 0; a < 4; ++a) x[a] = o[a] + c[a];
      m = m * f.u.load(mu, f.grid.rank.full_index(x) >> 1, parity) * adjoint(f.g(o, cn));
    }
    for (int a = 0; a < n_real / 6; ++a)
      for (int b = 0; b < 3; ++b) {
        v[2 * (3 * a + b)] = m.e[a][b].re;
        v[2 * (3 * a + b) + 1] = m.e[a][b].im;
      }
  }
};

/// The blocks' clover term (or its inverse) in their temporal gauge: each chiral block H becomes
/// (1 x G) H (1 x G^dagger), as CloverAccessor's 72 reals.
template <typename Store, Reconstruct R>
struct FrameClover {
  static constexpr int n_real = 72;
  using Real = typename BlockFrame<Store, R>::Real;
  BlockFrame<Store, R> f;
  CloverAccessor<Store> a;  ///< the parity's clover in rank order
  LATKE_HOST_DEVICE void load(Real (&v)[n_real], int block, int i, int parity) const {
    int o[4], c[4];
    f.grid.origin(block, o);
    f.grid.blk.coords(i, parity, c);
    const ColorMatrix<Real, 3> g = f.g(o, c);
    CloverBlock<Real> b[2];
    Real scale[2];
    a.load_raw(b, scale, f.grid.rank_cb(o, i, parity));
    for (int k = 0; k < 2; ++k) {
      Complex<Real> h[6][6], gh[6][6];
      for (int r = 0; r < 6; ++r)
        for (int s = 0; s < 6; ++s)
          h[r][s] = r == s  ? Complex<Real>(scale[k] * b[k].diag[r], Real(0))
                    : r > s ? scale[k] * b[k].off[tri_index(r, s)]
                            : scale[k] * conj(b[k].off[tri_index(s, r)]);
      for (int r = 0; r < 6; ++r)  // (1 x G) H: G on the row's colour
        for (int s = 0; s < 6; ++s) {
          Complex<Real> z(0, 0);
          for (int e = 0; e < 3; ++e) z += g.e[r % 3][e] * h[3 * (r / 3) + e][s];
          gh[r][s] = z;
        }
      for (int r = 0; r < 6; ++r)  // times (1 x G^dagger): conj(G) on the column's colour
        for (int s = 0; s <= r; ++s) {
          Complex<Real> z(0, 0);
          for (int e = 0; e < 3; ++e) z += gh[r][3 * (s / 3) + e] * conj(g.e[s % 3][e]);
          if (r == s)
            v[36 * k + r] = z.re;
          else {
            v[36 * k + 6 + 2 * tri_index(r, s)] = z.re;
            v[36 * k + 7 + 2 * tri_index(r, s)] = z.im;
          }
        }
    }
  }
};

/// Writes one parity of a source's values (Source::load(v, block, i, parity)) in block-major
/// order: site B n + i of dst is site i of block B.
template <typename Dst, typename Source>
struct BlockMajorFrom {
  Dst dst;
  Source src;
  BlockGrid grid;
  int parity;
  LATKE_HOST_DEVICE void operator()(int k, int) const {
    const int n = grid.blk.volume_cb, b = k / n, i = k - b * n;
    typename Source::Real v[Source::n_real];
    src.load(v, b, i, parity);
    dst.save(v, k);
  }
};

/// A site array in rank order as a source of block sites (PairGather's plain input).
template <typename Store, int NReal, int NGroup>
struct RankOrder {
  static constexpr int n_real = NReal;
  using Real = typename compute_type<Store>::type;
  SiteArray<Store, NReal, NGroup> a;
  BlockGrid grid;
  LATKE_HOST_DEVICE void load(Real (&v)[n_real], int block, int i, int parity) const {
    int o[4];
    grid.origin(block, o);
    a.load(v, grid.rank_cb(o, i, parity));
  }
};

/// Spinors of one block per team: 4 sets of SharedSpinors per site of one parity, per site of
/// the solved parity its index on the rank, and per site of either parity its packed block
/// coordinates.
template <typename T>
std::size_t block_solver_bytes(int vcb) {
  return static_cast<std::size_t>(vcb) * (4 * SharedSpinors<T>::site_complex * sizeof(Complex<T>) + 3 * sizeof(int));
}

/// Block coordinates (each below 256) packed in one int, c_mu in bits [8 mu, 8 mu + 8).
LATKE_HOST_DEVICE LATKE_INLINE int pack_coords(const int (&c)[4]) { return c[0] | c[1] << 8 | c[2] << 16 | c[3] << 24; }
LATKE_HOST_DEVICE LATKE_INLINE int coord(int packed, int mu) { return (packed >> (8 * mu)) & 0xff; }
/// Block coordinates below 16 in 16 bits, c_mu in bits [4 mu, 4 mu + 4); pack_coords' form again.
LATKE_HOST_DEVICE LATKE_INLINE unsigned short pack_coords16(const int (&c)[4]) {
  return static_cast<unsigned short>(c[0] | c[1] << 4 | c[2] << 8 | c[3] << 12);
}
LATKE_HOST_DEVICE LATKE_INLINE int unpack_coords16(unsigned p) {
  return (p & 0xfu) | (p & 0xf0u) << 4 | (p & 0xf00u) << 8 | (p & 0xf000u) << 12;
}

/// Threads of a team for blocks of vcb sites per parity: one per site, at most 256.
int block_team_size(int vcb) {
  int size = 32;
  while (size < vcb && size < 256) size *= 2;
  return size;
}

/// How a kernel argument of compute type T travels from the host: as itself, or for Half2 as a
/// float (the host's Half2 holds two floats, the device's two halves: a functor with a Half2
/// member would not have the same layout on both sides).
template <typename T>
using ArgType = std::conditional_t<std::is_same_v<T, Half2>, float, T>;

/// The hopping sum within a block, for the team kernels: wilson::hop_sum's hops, those that
/// leave the block in a cut dimension dropped. Not hop_sum itself: called with the block as its
/// geometry it took 7% longer (its block masks divide c_mu by the block extent; the parity is a
/// field of its argument). T: the compute type (Half2 for two blocks in the lanes).
template <typename T>
struct BlockHops {
  using P = ArgType<T>;
  P sign = -1;        ///< forward projector 1 + sign gamma
  int cut_mask = 15;  ///< bit mu: hops leaving the block in mu are dropped; else the block is the
                      ///< whole lattice in mu and they wrap, with the boundary phase
  int phase_mask = 0;
  Complex<P> phase[4];
  /// The links are in each block's temporal gauge (BlockFrame): the t links within a
  /// block are 1 and not read, the t slot of the block's copies holding the gauge transform.
  bool temporal = false;

  /// At site i (parity par, packed block coordinates pc) of a block of extents L, from the
  /// block's spinors `in`; links.load(mu, i, parity) gives the block's links.
  template <typename Links>
  LATKE_HOST_DEVICE LATKE_INLINE ColorSpinor<T, 3, 4> operator()(const int (&L)[4], const Links& links,
                                                                 const SharedSpinors<T>& in, int i, int par,
                                                                 int pc) const {
    const int pl = L[0] | L[1] << 8 | L[2] << 16 | L[3] << 24, full = 2 * i + (pc & 1);
    ColorSpinor<T, 3, 4> acc;
    acc.zero();
    int stride = 1;
    static_for<4>([&](auto mu_) {
      constexpr int mu = decltype(mu_)::value;
      const int cm = coord(pc, mu), lm = coord(pl, mu);
      static_for<2>([&](auto dir_) {
        constexpr bool fwd = decltype(dir_)::value == 0;
        const bool edge = cm == (fwd ? lm - 1 : 0);
        if (!(edge && ((cut_mask >> mu) & 1))) {
          const int step = fwd ? stride : -stride;
          const int nb = edge ? full - (lm - 1) * step : full + step;
          const T s(fwd ? sign : -sign);
          ColorSpinor<T, 3, 2> h = wilson::project<mu>(in.load(nb >> 1), s);
          if (mu != 3 || !temporal) {  // in the blocks' temporal gauge the t links are 1
            const ColorMatrix<T, 3> u = links.load(mu, fwd ? i : nb >> 1, fwd ? par : 1 - par);
            if constexpr (fwd)
              h = u * h;
            else
              h = adj_mul(u, h);
          }
          if (edge && ((phase_mask >> mu) & 1)) {
            const Complex<P> z = fwd ? phase[mu] : conj(phase[mu]);
            h = wilson::scale_phase(h, Complex<T>(T(z.re), T(z.im)));
          }
          wilson::accumulate<mu>(acc, h, s);
        }
      });
      stride *= lm;
    });
    return acc;
  }

  /// From the Dirac operator's hopping argument (sign, cut and phase masks, phases).
  template <typename Arg>
  void set(const Arg& arg) {
    sign = static_cast<P>(arg.sign);
    cut_mask = arg.cut_mask;
    phase_mask = arg.phase_mask;
    for (int mu = 0; mu < 4; ++mu)
      phase[mu] = Complex<P>(static_cast<P>(arg.phase[mu].re), static_cast<P>(arg.phase[mu].im));
  }
};

/// One SAP step's fields (WilsonCloverOperator::sap_blocks) on the blocks of one colour: the
/// solve's right-hand side is the block's Schur residual bhat of the full residual (s_p =
/// A_pp^-1 R_p, R_q), the correction dx = (omega x_p, A_qq^-1 (R_q - omega M_qp x_p)) zeroes the
/// block's R_q (the kernel leaves R_q as it was: sap_boundary overwrites all of it), and the
/// block's residual afterwards is known without the operator: s_p = (1 - omega) bhat + omega r_MR.
template <typename Store>
struct SapIo {
  SpinorAccessor<Store, 3, 4> rq;        ///< R_q: read (it is zero after the step)
  SpinorAccessor<Store, 3, 4> acc;       ///< the sum of the corrections' p parts: += omega x_p
  SpinorAccessor<Store, 3, 4> dxp, dxq;  ///< this step's correction dx, both parities
  double omega = 1;
  double hop = 0;          ///< M_pq = -hop D_hop
  bool first = false;      ///< R_q = 0 (the application's first step): no Schur residual to form
  bool fresh_acc = false;  ///< acc_p not read: written as omega x_p (each colour's first step)
};

template <typename Store, Reconstruct R, bool Symmetric, bool Sap = false>
struct BlockMRKernel {
  static_assert(!Sap || Symmetric, "SAP steps take the symmetric Schur complement");
  using T = typename compute_type<Store>::type;
  using Gauge = GaugeAccessor<Store, R>;
  Gauge gauge;
  BlockGrid grid;
  CloverAccessor<Store> site_p;  ///< A_pp^-1 (symmetric) or A_pp (asymmetric)
  CloverAccessor<Store> inv_q;   ///< A_qq^-1
  SpinorAccessor<Store, 3, 4> b, x;  ///< Sap: b is s_p, read and written back; x unused
  int p = 0;
  int colour = -1;
  int steps = 1;
  T a = 0;  ///< -hop^2
  BlockHops<T> hop;
  SapIo<Store> sap;

  LATKE_HOST_DEVICE void operator()(const Team& t) const {
    const LocalGeometry& blk = grid.blk;
    const int n = blk.volume_cb, q = 1 - p;
    int o[4];
    const int block_colour = grid.origin(t.index, o);
    Complex<T>* base = reinterpret_cast<Complex<T>*>(t.shared());
    const int set = SharedSpinors<T>::site_complex * n;
    const SharedSpinors<T> r{base}, ar{base + set}, xs{base + 2 * set}, tq{base + 3 * set};
    int* map_p = reinterpret_cast<int*>(base + 4 * set);  // the block's p sites on the rank
    int* coords = map_p + n;                             // both parities' packed block coordinates
    t.for_each(2 * n, [&](int k) {
      const int par = k >= n ? 1 : 0, i = k - par * n;
      int c[4];
      blk.coords(i, par, c);
      coords[k] = pack_coords(c);
      if (par == p) map_p[i] = grid.rank_cb(o, i, par);
    });
    t.sync();
    ColorSpinor<T, 3, 4> zero;
    zero.zero();
    if (colour >= 0 && block_colour != colour) {  // a block of the other colour: no correction
      if constexpr (!Sap) t.for_each(n, [&](int i) { x.save(zero, map_p[i]); });
      return;
    }
    const int first = t.index * n;  // the block's sites in the block-major links and clover
    const BlockLinks<Gauge> links{gauge, first};
    // Into the block's frame and out of it, at its site i of parity par (BlockFrame).
    auto into = [&](const ColorSpinor<T, 3, 4>& v, int i, int par) {
      return hop.temporal ? links.load(3, i, par) * v : v;
    };
    auto out_of = [&](const ColorSpinor<T, 3, 4>& v, int i, int par) {
      return hop.temporal ? adj_mul(links.load(3, i, par), v) : v;
    };
    t.for_each(n, [&](int i) {
      r.save(into(b.load(map_p[i]), i, p), i);
      xs.save(zero, i);
    });
    t.sync();
    if constexpr (Sap) {
      // The step as one rolled loop of passes around one copy of the hops and one clover
      // product (more copies overflowed the instruction cache): the Schur residual (prep_q:
      // A_qq^-1 R_q; prep_p: r += hop A_pp^-1 D_pq of it), the MR steps (mr_q, mr_p), and X_q
      // (rec_q, after the p parity's results are written). The plain solves below keep their
      // own loop: run through this one (its kinds and the asymmetric form's choices) they were
      // measurably slower.
      enum { prep_q, prep_p, mr_q, mr_p, rec_q };
      const int prep = sap.first ? 0 : 2, total = prep + 2 * steps + 1;
      const T hop_c = static_cast<T>(sap.hop), omega = static_cast<T>(sap.omega);
      bool done = false;  // MR stopped: r is zero
      LATKE_NO_UNROLL for (int k = 0; k < total; ++k) {
        const int kind = k < prep ? k : k == total - 1 ? rec_q : (k - prep) % 2 ? mr_p : mr_q;
        if (done && kind != rec_q) continue;
        if (kind == rec_q) {
          t.for_each(n, [&](int i) {  // s_p, the sum and the correction on p
            const int xi = map_p[i];
            // One field out of the frame at a time (both at once cost registers).
            const ColorSpinor<T, 3, 4> xv = out_of(xs.load(i), i, p);
            ColorSpinor<T, 3, 4> av = sap.fresh_acc ? zero : sap.acc.load(xi), dv;
            LATKE_UNROLL for (int sp = 0; sp < 4; ++sp) LATKE_UNROLL for (int cc = 0; cc < 3; ++cc) {
              dv.d[sp][cc] = omega * xv.d[sp][cc];
              av.d[sp][cc] += dv.d[sp][cc];
            }
            sap.acc.save(av, xi);
            sap.dxp.save(dv, xi);
            const ColorSpinor<T, 3, 4> rv = out_of(r.load(i), i, p);
            ColorSpinor<T, 3, 4> sv = sap.omega != 1 ? b.load(xi) : zero;
            LATKE_UNROLL for (int sp = 0; sp < 4; ++sp) LATKE_UNROLL for (int cc = 0; cc < 3; ++cc) sv.d[sp][cc] =
                (T(1) - omega) * sv.d[sp][cc] + omega * rv.d[sp][cc];
            b.save(sv, xi);
          });
        }
        const bool on_p = kind == prep_p || kind == mr_p;
        const int par = on_p ? p : q;
        const SharedSpinors<T> in = on_p ? tq : kind == rec_q ? xs : r;
        const CloverAccessor<Store> clover = on_p ? site_p : inv_q;
        const int* coords_par = coords + par * n;
        MrSums mine;
        t.for_each(n, [&](int i) {
          ColorSpinor<T, 3, 4> cin = zero;
          if (kind != prep_q) cin = hop(blk.L, links, in, i, par, coords_par[i]);
          const int xq = kind == prep_q || kind == rec_q ? grid.rank_cb(o, i, q) : 0;
          if (kind == prep_q) {  // R_q: the Schur residual's (prep_q runs where it is not zero)
            cin = sap.rq.load(xq);
            if (hop.temporal) {  // into the frame, and back where rec_q reads it (R_q is not read
                                 // outside the block before sap_boundary writes it anew)
              cin = into(cin, i, q);
              sap.rq.save(cin, xq);
            }
          } else if (kind == rec_q) {  // X_q's: R_q + hop omega D_qp x_p
            cin = axpy(hop_c * omega, cin, sap.first ? zero : sap.rq.load(xq));
          }
          const ColorSpinor<T, 3, 4> ch = clover.apply(cin, first + i);
          if (kind == prep_q || kind == mr_q) {
            tq.save(ch, i);
          } else if (kind == prep_p) {
            const ColorSpinor<T, 3, 4> v = axpy(hop_c, ch, r.load(i));
            r.save(v, i);
            if (sap.omega != 1) b.save(out_of(v, i, p), map_p[i]);  // the block's residual keeps 1 - omega of it
          } else if (kind == rec_q) {
            sap.dxq.save(out_of(ch, i, q), xq);  // A_qq^-1 (R_q + hop D_qp omega x_p), which leaves R_q = 0
          } else {                 // mr_p: Mhat r and the sums
            const ColorSpinor<T, 3, 4> v = r.load(i), w = axpy(a, ch, v);
            ar.save(w, i);
            T re = 0, im = 0, nn = 0;
            LATKE_UNROLL for (int sp = 0; sp < 4; ++sp) LATKE_UNROLL for (int cc = 0; cc < 3; ++cc) {
              const Complex<T> u = w.d[sp][cc], z = v.d[sp][cc];
              re += u.re * z.re + u.im * z.im;
              im += u.re * z.im - u.im * z.re;
              nn += u.re * u.re + u.im * u.im;
            }
            mine.re += re, mine.im += im, mine.nn += nn;
          }
        });
        t.sync();
        if (kind == mr_p) {
          const MrSums s = t.reduce(mine);
          if (!(s.nn > 0)) {  // the same for the whole team: r is zero
            done = true;
            continue;
          }
          const Complex<T> alpha(static_cast<T>(s.re / s.nn), static_cast<T>(s.im / s.nn));
          t.for_each(n, [&](int i) {  // x += alpha r, r -= alpha ar (each thread its own sites)
            ColorSpinor<T, 3, 4> xv = xs.load(i), rv = r.load(i);
            const ColorSpinor<T, 3, 4> av = ar.load(i);
            LATKE_UNROLL for (int sp = 0; sp < 4; ++sp) LATKE_UNROLL for (int cc = 0; cc < 3; ++cc) {
              xv.d[sp][cc] += alpha * rv.d[sp][cc];
              rv.d[sp][cc] -= alpha * av.d[sp][cc];
            }
            xs.save(xv, i);
            r.save(rv, i);
          });
          t.sync();
        }
      }
    } else {
      for (int step = 0; step < steps; ++step) {
        // Pass 0: tq = A_qq^-1 D_qp r on the q sites. Pass 1: ar = Mhat r on the p sites (the
        // hops from tq, then the Schur form's epilogue) and the sums <Mhat r, r>, |Mhat r|^2.
        // One rolled loop: one copy of the hops and the clover product in the kernel.
        MrSums mine;
        LATKE_NO_UNROLL for (int pass = 0; pass < 2; ++pass) {
          const int par = pass ? p : q;
          const SharedSpinors<T> in = pass ? tq : r;
          const CloverAccessor<Store> clover = pass ? site_p : inv_q;
          const int* coords_par = coords + par * n;
          t.for_each(n, [&](int i) {
            const ColorSpinor<T, 3, 4> h = hop(blk.L, links, in, i, par, coords_par[i]);
            ColorSpinor<T, 3, 4> v = zero;
            if (pass) v = r.load(i);
            // One clover product: of the hops (pass 0; pass 1 symmetric) or of r (asymmetric).
            const bool of_h = !pass || Symmetric;
            ColorSpinor<T, 3, 4> cin;
            LATKE_UNROLL for (int sp = 0; sp < 4; ++sp) LATKE_UNROLL for (int cc = 0; cc < 3; ++cc) cin.d[sp][cc] =
                of_h ? h.d[sp][cc] : v.d[sp][cc];
            const ColorSpinor<T, 3, 4> ch = clover.apply(cin, first + i);
            if (!pass) {
              tq.save(ch, i);
              return;
            }
            const ColorSpinor<T, 3, 4> w = Symmetric ? axpy(a, ch, v) : axpy(a, h, ch);
            ar.save(w, i);
            T re = 0, im = 0, nn = 0;
            LATKE_UNROLL for (int sp = 0; sp < 4; ++sp) LATKE_UNROLL for (int cc = 0; cc < 3; ++cc) {
              const Complex<T> u = w.d[sp][cc], z = v.d[sp][cc];
              re += u.re * z.re + u.im * z.im;
              im += u.re * z.im - u.im * z.re;
              nn += u.re * u.re + u.im * u.im;
            }
            mine.re += re, mine.im += im, mine.nn += nn;
          });
          if (!pass) t.sync();
        }
        const MrSums s = t.reduce(mine);
        if (!(s.nn > 0)) break;  // the same for the whole team: r is zero
        const Complex<T> alpha(static_cast<T>(s.re / s.nn), static_cast<T>(s.im / s.nn));
        t.for_each(n, [&](int i) {  // x += alpha r, r -= alpha ar (each thread its own sites)
          ColorSpinor<T, 3, 4> xv = xs.load(i), rv = r.load(i);
          const ColorSpinor<T, 3, 4> av = ar.load(i);
          LATKE_UNROLL for (int sp = 0; sp < 4; ++sp) LATKE_UNROLL for (int cc = 0; cc < 3; ++cc) {
            xv.d[sp][cc] += alpha * rv.d[sp][cc];
            rv.d[sp][cc] -= alpha * av.d[sp][cc];
          }
          xs.save(xv, i);
          r.save(rv, i);
        });
        t.sync();
      }
      t.for_each(n, [&](int i) { x.save(out_of(xs.load(i), i, p), map_p[i]); });
    }
  }
};

/// A site array of two blocks' values in the lanes of Half2 (IEEE halves, Half2::bits; not the
/// fields' fixed-point half), site pair k's NReal values in 16-byte groups g at data[g stride + k],
/// so that a thread loads a site pair in NReal / 4 wide loads and a team's loads are contiguous.
template <int NReal>
struct PairArray {
  static constexpr int groups = (NReal + 3) / 4;
  Half2x4* data = nullptr;
  long stride = 0;  ///< site pairs
  /// Reals [first, first + count) of site pair k (first a multiple of 4).
  template <int First = 0, int Count = NReal>
  LATKE_HOST_DEVICE LATKE_INLINE void load(Half2 (&r)[Count], long k) const {
    static_assert(First % 4 == 0, "pair arrays load whole groups");
    LATKE_UNROLL for (int g = 0; g < (Count + 3) / 4; ++g) {
      const Half2x4 q = data[(First / 4 + g) * stride + k];
      LATKE_UNROLL for (int j = 0; j < 4; ++j) if (4 * g + j < Count) r[4 * g + j] = Half2::from_bits(q.w[j]);
    }
  }
  LATKE_HOST_DEVICE LATKE_INLINE void save(const Half2 (&r)[NReal], long k) const {
    LATKE_UNROLL for (int g = 0; g < groups; ++g) {
      Half2x4 q{};
      LATKE_UNROLL for (int j = 0; j < 4; ++j) if (4 * g + j < NReal) q.w[j] = r[4 * g + j].bits();
      data[g * stride + k] = q;
    }
  }
};

/// Links in the pair layout (a PairArray per direction and parity): the pair copies (site pair
/// P n + i) or a team's copy of its pair's in shared memory (site i), for BlockHops.
template <Reconstruct R>
struct PairLinks {
  static constexpr int n_real = static_cast<int>(R);
  using Array = PairArray<n_real>;
  Half2x4* data = nullptr;
  long stride = 0;  ///< site pairs per parity
  LATKE_HOST_DEVICE LATKE_INLINE Array array(int mu, int parity) const {
    return Array{data + (mu * 2 + parity) * Array::groups * stride, stride};
  }
  LATKE_HOST_DEVICE LATKE_INLINE ColorMatrix<Half2, 3> load(int mu, int i, int parity) const {
    Half2 r[n_real];
    array(mu, parity).load(r, i);
    ColorMatrix<Half2, 3> u;
    LATKE_UNROLL for (int a = 0; a < n_real / 6; ++a) LATKE_UNROLL for (int c = 0; c < 3; ++c) u.e[a][c] =
        Complex<Half2>(r[2 * (3 * a + c)], r[2 * (3 * a + c) + 1]);
    if constexpr (R == Reconstruct::r12) GaugeAccessor<short, R, Half2>::third_row(u);
    return u;
  }
};

/// The clover term (or its inverse) of one parity of a pair of blocks: per site pair 72 reals,
/// as CloverAccessor's (chiral block k at [36 k, 36 k + 36): 6 diagonal, 15 lower complex).
struct PairClover {
  PairArray<72> a;
  LATKE_HOST_DEVICE LATKE_INLINE ColorSpinor<Half2, 3, 4> apply(const ColorSpinor<Half2, 3, 4>& v, long k) const {
    return apply_chiral_blocks(v, [&](auto kk_) {  // one chiral block's 36 values at a time
      Half2 r[36];
      a.template load<36 * decltype(kk_)::value, 36>(r, k);
      CloverBlock<Half2> b;
      LATKE_UNROLL for (int i = 0; i < 6; ++i) b.diag[i] = r[i];
      LATKE_UNROLL for (int i = 0; i < 15; ++i) b.off[i] = Complex<Half2>(r[6 + 2 * i], r[7 + 2 * i]);
      return b;
    });
  }
};

/// Copies one parity of a source of block sites (RankOrder, FrameLinks, FrameClover; half
/// storage) into a pair array: site pair P n + i holds site i of blocks[2 P] (low lane) and
/// blocks[2 P + 1] (high lane).
template <typename Source>
struct PairGather {
  static constexpr int NReal = Source::n_real;
  PairArray<NReal> dst;
  Source src;
  BlockGrid grid;
  const int* blocks = nullptr;
  int parity = 0;
  LATKE_HOST_DEVICE void operator()(int k, int) const {
    const int n = grid.blk.volume_cb, pair = k / n, i = k - pair * n;
    float v0[NReal], v1[NReal];
    src.load(v0, blocks[2 * pair], i, parity);
    src.load(v1, blocks[2 * pair + 1], i, parity);
    Half2 h[NReal];
    LATKE_UNROLL for (int j = 0; j < NReal; ++j) h[j] = Half2::pair(v0[j], v1[j]);
    dst.save(h, k);
  }
};

/// Per-lane sums of a pair of blocks, reduced over a team.
template <typename S>
struct LaneSums {
  S lane[2];
  LATKE_HOST_DEVICE LaneSums& operator+=(const LaneSums& o) {
    lane[0] += o.lane[0], lane[1] += o.lane[1];
    return *this;
  }
};

/// Shared memory of BlockMRPairKernel's team on backend b for blocks of vcb sites per parity
/// and links of link_reals: its sets of SharedSpinors (two on CUDA, four on the CPU), the pair's
/// links, and both parities' packed coordinates.
std::size_t pair_solver_bytes(int vcb, int link_reals, Backend b) {
  const std::size_t link_bytes = 8 * static_cast<std::size_t>((link_reals + 3) / 4) * sizeof(Half2x4);
  const std::size_t sets = b == Backend::cuda ? 2 : 4;
  return static_cast<std::size_t>(vcb) *
         (sets * SharedSpinors<Half2>::site_complex * sizeof(Half2Words) + link_bytes + 2 * sizeof(unsigned short));
}

/// BlockMRKernel in FP16 pair arithmetic (half storage): a team solves two blocks of one colour
/// at once, site i of each in the two lanes of every Half2, so every multiply-add serves both
/// and no lane diverges from the other (the blocks have the same shape). Links and clover come
/// from pair copies in IEEE half (no conversion); the team first copies its pair's links into
/// shared memory, the clover it reads from L2 at each use. Each block's right-hand side is divided on load
/// by the RMS of its sites' largest components (half's range: it has 11 significant bits, smallest
/// normal 6e-5) and the solution multiplied back; MR is invariant under that scale. The MR sums
/// are accumulated per lane in FP32 from the Half2 values. The result is good to about 1e-3 of
/// the block's norm: a preconditioner's, not a residual's.
template <Reconstruct R, bool Symmetric, int Threads, bool Sap = false>
struct BlockMRPairKernel {
  static_assert(!Sap || Symmetric, "SAP steps take the symmetric Schur complement");
  using T = Half2;
  /// Teams of at most Threads; three of 128 on an SM (4^4: the shared memory of three fits), the
  /// registers capped to fit them (TeamBounds).
  static constexpr int team_threads = Threads, teams_per_sm = Threads <= 128 ? 3 : 1;
  PairLinks<R> links;
  BlockGrid grid;
  PairClover site_p;  ///< A_pp^-1 (symmetric) or A_pp (asymmetric)
  PairClover inv_q;   ///< A_qq^-1
  SpinorAccessor<short, 3, 4> b, x;
  const int* blocks = nullptr;  ///< team P solves blocks[2 P] and blocks[2 P + 1] (equal: one block)
  int p = 0;
  int colour = -1;
  int steps = 1;
  float a = 0;  ///< -hop^2 (ArgType)
  BlockHops<T> hop;
  SapIo<short> sap;  ///< Sap: as BlockMRKernel's (b is s_p)

  LATKE_HOST_DEVICE void operator()(const Team& t) const {
    const LocalGeometry& blk = grid.blk;
    const int n = blk.volume_cb, q = 1 - p;
    const int b0 = blocks[2 * t.index], b1 = blocks[2 * t.index + 1];
    const T ah(a);
    int o0[4], o1[4];
    const int block_colour = grid.origin(b0, o0);
    grid.origin(b1, o1);
    // Shared memory: r and tq (read at neighbours), on the CPU also x and Mhat r, then the
    // pair's links and both parities' packed coordinates. On CUDA a thread owns one site (team
    // size >= n), so x and Mhat r, which only their own thread touches, stay in its registers:
    // the shared memory that leaves is what lets three teams share an SM at 4^4.
#ifdef __CUDA_ARCH__
    constexpr bool own_in_registers = true;
#else
    constexpr bool own_in_registers = false;
#endif
    Half2Words* base = reinterpret_cast<Half2Words*>(t.shared());
    const int set = SharedSpinors<T>::site_complex * n, sets = own_in_registers ? 2 : 4;
    const SharedSpinors<T> r{base}, tq{base + set}, xs{base + 2 * set}, ar{base + 3 * set};
    constexpr int link_groups = PairArray<static_cast<int>(R)>::groups;
    Half2x4* link_words = reinterpret_cast<Half2x4*>(base + sets * set);  // the pair's links
    unsigned short* coords = reinterpret_cast<unsigned short*>(link_words + 8 * link_groups * n);
    ColorSpinor<T, 3, 4> x_own, ar_own;  // CUDA: x and Mhat r at this thread's site
    auto x_load = [&](int i) {
      if constexpr (own_in_registers)
        return x_own;
      else
        return xs.load(i);
    };
    auto x_save = [&](const ColorSpinor<T, 3, 4>& v, int i) {
      if constexpr (own_in_registers)
        x_own = v;
      else
        xs.save(v, i);
    };
    auto ar_load = [&](int i) {
      if constexpr (own_in_registers)
        return ar_own;
      else
        return ar.load(i);
    };
    auto ar_save = [&](const ColorSpinor<T, 3, 4>& v, int i) {
      if constexpr (own_in_registers)
        ar_own = v;
      else
        ar.save(v, i);
    };
    t.for_each(2 * n, [&](int k) {
      const int par = k >= n ? 1 : 0, i = k - par * n;
      int c[4];
      blk.coords(i, par, c);
      coords[k] = pack_coords16(c);
    });
    t.sync();
    const bool one = b1 == b0;
    if (colour >= 0 && block_colour != colour) {  // blocks of the other colour: no correction
      if constexpr (!Sap) {
        ColorSpinor<float, 3, 4> zero;
        zero.zero();
        t.for_each(n, [&](int i) {
          x.save(zero, grid.rank_cb(o0, i, p));
          if (!one) x.save(zero, grid.rank_cb(o1, i, p));
        });
      }
      return;
    }
    // Sap: the scale is the RMS over s_p's and R_q's sites (R_q alone may carry a block's residual).
    const bool with_rq = Sap && !sap.first;
    LaneSums<double> mine_norms{};
    t.for_each(n, [&](int i) {
      const double n0 = b.a.norm[grid.rank_cb(o0, i, p)], n1 = b.a.norm[grid.rank_cb(o1, i, p)];
      mine_norms.lane[0] += n0 * n0, mine_norms.lane[1] += n1 * n1;
      if (with_rq) {
        const double m0 = sap.rq.a.norm[grid.rank_cb(o0, i, q)], m1 = sap.rq.a.norm[grid.rank_cb(o1, i, q)];
        mine_norms.lane[0] += m0 * m0, mine_norms.lane[1] += m1 * m1;
      }
    });
    const LaneSums<double> norms = t.reduce(mine_norms);
    const int terms = with_rq ? 2 * n : n;
    const float s0 = static_cast<float>(sqrt(norms.lane[0] / terms)),
                s1 = static_cast<float>(sqrt(norms.lane[1] / terms));
    const float inv0 = s0 > 0 ? 1 / s0 : 0.0f, inv1 = s1 > 0 ? 1 / s1 : 0.0f;
    ColorSpinor<T, 3, 4> zero;
    zero.zero();
    // Two blocks' spinors at their site i of parity par, scaled into the lanes.
    auto load_pair = [&](const SpinorAccessor<short, 3, 4>& f, int i, int par) {
      const ColorSpinor<float, 3, 4> v0 = f.load(grid.rank_cb(o0, i, par)), v1 = f.load(grid.rank_cb(o1, i, par));
      ColorSpinor<T, 3, 4> v;
      LATKE_UNROLL for (int sp = 0; sp < 4; ++sp) LATKE_UNROLL for (int cc = 0; cc < 3; ++cc) v.d[sp][cc] =
          Complex<T>(Half2::pair(v0.d[sp][cc].re * inv0, v1.d[sp][cc].re * inv1),
                     Half2::pair(v0.d[sp][cc].im * inv0, v1.d[sp][cc].im * inv1));
      return v;
    };
    const long first = static_cast<long>(t.index) * n;  // the pair's sites in the pair copies
    t.for_each(8 * link_groups * n, [&](int k) {
      const int g = k / n, i = k - g * n;
      link_words[k] = links.data[g * links.stride + first + i];
    });
    const PairLinks<R> lk{link_words, n};
    t.sync();
    // Into the blocks' frames and out of them, at their site i of parity par (BlockFrame).
    auto into = [&](const ColorSpinor<T, 3, 4>& v, int i, int par) {
      return hop.temporal ? lk.load(3, i, par) * v : v;
    };
    auto out_of = [&](const ColorSpinor<T, 3, 4>& v, int i, int par) {
      return hop.temporal ? adj_mul(lk.load(3, i, par), v) : v;
    };
    t.for_each(n, [&](int i) {
      r.save(into(load_pair(b, i, p), i, p), i);
      x_save(zero, i);
    });
    t.sync();
    if constexpr (Sap) {
      // The step as one rolled loop of passes around one copy of the hops and one clover
      // product (as BlockMRKernel's MR steps: more copies overflowed the instruction cache):
      // the Schur residual (prep_q: A_qq^-1 R_q; prep_p: r += hop A_pp^-1 D_pq of it), the MR
      // steps (mr_q, mr_p), and X_q (rec_q, after the p parity's results are written).
      enum { prep_q, prep_p, mr_q, mr_p, rec_q };
      const int prep = sap.first ? 0 : 2, total = prep + 2 * steps + 1;
      const T hop_h(static_cast<float>(sap.hop)), hop_w(static_cast<float>(sap.hop * sap.omega));
      const float w = static_cast<float>(sap.omega), keep = 1 - w;  // the blocks' residual: keep bhat + w r_MR
      const int lanes = one ? 1 : 2;
      // Lane l of v times f, as a single-precision spinor.
      auto lane = [&](const ColorSpinor<T, 3, 4>& v, int l, float f) {
        ColorSpinor<float, 3, 4> u;
        LATKE_UNROLL for (int sp = 0; sp < 4; ++sp) LATKE_UNROLL for (int cc = 0; cc < 3; ++cc) u.d[sp][cc] =
            Complex<float>((l ? v.d[sp][cc].re.hi() : v.d[sp][cc].re.lo()) * f,
                           (l ? v.d[sp][cc].im.hi() : v.d[sp][cc].im.lo()) * f);
        return u;
      };
      bool done = false;  // MR stopped: r is zero in both lanes
      LATKE_NO_UNROLL for (int k = 0; k < total; ++k) {
        const int kind = k < prep ? k : k == total - 1 ? rec_q : (k - prep) % 2 ? mr_p : mr_q;
        if (done && kind != rec_q) continue;
        if (kind == rec_q) {
          t.for_each(n, [&](int i) {  // s_p, the sum and the correction on p (BlockMRKernel's)
            const int x0 = grid.rank_cb(o0, i, p), x1 = grid.rank_cb(o1, i, p);
            // One field out of the frame at a time (both at once spilled registers).
            const ColorSpinor<T, 3, 4> xv = out_of(x_load(i), i, p);
            LATKE_NO_UNROLL for (int l = 0; l < lanes; ++l) {
              const int xi = l ? x1 : x0;
              const ColorSpinor<float, 3, 4> dx = lane(xv, l, w * (l ? s1 : s0));
              ColorSpinor<float, 3, 4> av = dx;
              if (!sap.fresh_acc) {
                const ColorSpinor<float, 3, 4> old = sap.acc.load(xi);
                LATKE_UNROLL for (int sp = 0; sp < 4; ++sp) LATKE_UNROLL for (int cc = 0; cc < 3; ++cc) av.d[sp][cc] +=
                    old.d[sp][cc];
              }
              sap.acc.save(av, xi);
              sap.dxp.save(dx, xi);
            }
            const ColorSpinor<T, 3, 4> rv = out_of(r.load(i), i, p);
            LATKE_NO_UNROLL for (int l = 0; l < lanes; ++l) {
              const int xi = l ? x1 : x0;
              ColorSpinor<float, 3, 4> sv = lane(rv, l, w * (l ? s1 : s0));
              if (keep != 0) {
                const ColorSpinor<float, 3, 4> old = b.load(xi);
                LATKE_UNROLL for (int sp = 0; sp < 4; ++sp) LATKE_UNROLL for (int cc = 0; cc < 3; ++cc) sv.d[sp][cc] +=
                    keep * old.d[sp][cc];
              }
              b.save(sv, xi);
            }
          });
          t.sync();
          t.for_each(n, [&](int i) { r.save(x_load(i), i); });  // x_p where the q sites' hops read it
          t.sync();
        }
        const bool on_p = kind == prep_p || kind == mr_p;
        const int par = on_p ? p : q;
        const SharedSpinors<T> in = on_p ? tq : r;
        const PairClover clover = on_p ? site_p : inv_q;
        const unsigned short* coords_par = coords + par * n;
        LaneSums<MrSums> mine{};
        t.for_each(n, [&](int i) {
          ColorSpinor<T, 3, 4> cin;
          if (kind == prep_q) {  // R_q: the Schur residual's (prep_q runs where it is not zero)
            cin = load_pair(sap.rq, i, q);
            if (hop.temporal) {  // into the frame, and back where rec_q reads it (R_q is not read
                                 // outside the block before sap_boundary writes it anew)
              cin = into(cin, i, q);
              const int x0 = grid.rank_cb(o0, i, q), x1 = grid.rank_cb(o1, i, q);
              LATKE_NO_UNROLL for (int l = 0; l < lanes; ++l) sap.rq.save(lane(cin, l, l ? s1 : s0), l ? x1 : x0);
            }
          } else {
            cin = hop(blk.L, lk, in, i, par, unpack_coords16(coords_par[i]));
            if (kind == rec_q)  // X_q's: R_q + hop omega D_qp x_p
              cin = axpy(hop_w, cin, sap.first ? zero : load_pair(sap.rq, i, q));
          }
          const ColorSpinor<T, 3, 4> ch = clover.apply(cin, first + i);
          if (kind == prep_q || kind == mr_q) {
            tq.save(ch, i);
          } else if (kind == prep_p) {
            const ColorSpinor<T, 3, 4> v = axpy(hop_h, ch, r.load(i));
            r.save(v, i);
            if (keep != 0) {  // the blocks' residual keeps 1 - omega of it
              const int x0 = grid.rank_cb(o0, i, p), x1 = grid.rank_cb(o1, i, p);
              const ColorSpinor<T, 3, 4> vo = out_of(v, i, p);
              LATKE_NO_UNROLL for (int l = 0; l < lanes; ++l) b.save(lane(vo, l, l ? s1 : s0), l ? x1 : x0);
            }
          } else if (kind == rec_q) {  // dx_q = A_qq^-1 (R_q + hop D_qp omega x_p), which leaves R_q = 0
            const int x0 = grid.rank_cb(o0, i, q), x1 = grid.rank_cb(o1, i, q);
            const ColorSpinor<T, 3, 4> co = out_of(ch, i, q);
            LATKE_NO_UNROLL for (int l = 0; l < lanes; ++l) sap.dxq.save(lane(co, l, l ? s1 : s0), l ? x1 : x0);
          } else {  // mr_p: Mhat r and the sums
            const ColorSpinor<T, 3, 4> v = r.load(i), wv = axpy(ah, ch, v);
            ar_save(wv, i);
            float re0 = 0, im0 = 0, nn0 = 0, re1 = 0, im1 = 0, nn1 = 0;
            LATKE_UNROLL for (int sp = 0; sp < 4; ++sp) LATKE_UNROLL for (int cc = 0; cc < 3; ++cc) {
              const Complex<T> u = wv.d[sp][cc], z = v.d[sp][cc];
              const float ur0 = u.re.lo(), ui0 = u.im.lo(), zr0 = z.re.lo(), zi0 = z.im.lo();
              const float ur1 = u.re.hi(), ui1 = u.im.hi(), zr1 = z.re.hi(), zi1 = z.im.hi();
              re0 += ur0 * zr0 + ui0 * zi0, im0 += ur0 * zi0 - ui0 * zr0, nn0 += ur0 * ur0 + ui0 * ui0;
              re1 += ur1 * zr1 + ui1 * zi1, im1 += ur1 * zi1 - ui1 * zr1, nn1 += ur1 * ur1 + ui1 * ui1;
            }
            mine.lane[0].re += re0, mine.lane[0].im += im0, mine.lane[0].nn += nn0;
            mine.lane[1].re += re1, mine.lane[1].im += im1, mine.lane[1].nn += nn1;
          }
        });
        t.sync();
        if (kind == mr_p) {
          const LaneSums<MrSums> s = t.reduce(mine);
          if (!(s.lane[0].nn > 0) && !(s.lane[1].nn > 0)) {  // the same for the whole team
            done = true;
            continue;
          }
          float ar0 = 0, ai0 = 0, ar1 = 0, ai1 = 0;  // a lane whose r is zero stays
          if (s.lane[0].nn > 0)
            ar0 = static_cast<float>(s.lane[0].re / s.lane[0].nn),
            ai0 = static_cast<float>(s.lane[0].im / s.lane[0].nn);
          if (s.lane[1].nn > 0)
            ar1 = static_cast<float>(s.lane[1].re / s.lane[1].nn),
            ai1 = static_cast<float>(s.lane[1].im / s.lane[1].nn);
          const Complex<T> alpha(Half2::pair(ar0, ar1), Half2::pair(ai0, ai1));
          t.for_each(n, [&](int i) {  // x += alpha r, r -= alpha ar (each thread its own sites)
            ColorSpinor<T, 3, 4> xv = x_load(i), rv = r.load(i);
            const ColorSpinor<T, 3, 4> av = ar_load(i);
            LATKE_UNROLL for (int sp = 0; sp < 4; ++sp) LATKE_UNROLL for (int cc = 0; cc < 3; ++cc) {
              xv.d[sp][cc] = mac(xv.d[sp][cc], alpha, rv.d[sp][cc]);
              rv.d[sp][cc] = mac(rv.d[sp][cc], -alpha, av.d[sp][cc]);
            }
            x_save(xv, i);
            r.save(rv, i);
          });
          t.sync();
        }
      }
      return;
    } else {
      for (int step = 0; step < steps; ++step) {
        // The passes of BlockMRKernel, the sums per lane.
        LaneSums<MrSums> mine{};
        LATKE_NO_UNROLL for (int pass = 0; pass < 2; ++pass) {
          const int par = pass ? p : q;
          const SharedSpinors<T> in = pass ? tq : r;
          const PairClover clover = pass ? site_p : inv_q;
          const unsigned short* coords_par = coords + par * n;
          t.for_each(n, [&](int i) {
            const ColorSpinor<T, 3, 4> h = hop(blk.L, lk, in, i, par, unpack_coords16(coords_par[i]));
            ColorSpinor<T, 3, 4> v = zero;
            if (pass) v = r.load(i);
            const bool of_h = !pass || Symmetric;
            ColorSpinor<T, 3, 4> cin;
            LATKE_UNROLL for (int sp = 0; sp < 4; ++sp) LATKE_UNROLL for (int cc = 0; cc < 3; ++cc) cin.d[sp][cc] =
                of_h ? h.d[sp][cc] : v.d[sp][cc];
            const ColorSpinor<T, 3, 4> ch = clover.apply(cin, first + i);
            if (!pass) {
              tq.save(ch, i);
              return;
            }
            const ColorSpinor<T, 3, 4> w = Symmetric ? axpy(ah, ch, v) : axpy(ah, h, ch);
            ar_save(w, i);
            float re0 = 0, im0 = 0, nn0 = 0, re1 = 0, im1 = 0, nn1 = 0;
            LATKE_UNROLL for (int sp = 0; sp < 4; ++sp) LATKE_UNROLL for (int cc = 0; cc < 3; ++cc) {
              const Complex<T> u = w.d[sp][cc], z = v.d[sp][cc];
              const float ur0 = u.re.lo(), ui0 = u.im.lo(), zr0 = z.re.lo(), zi0 = z.im.lo();
              const float ur1 = u.re.hi(), ui1 = u.im.hi(), zr1 = z.re.hi(), zi1 = z.im.hi();
              re0 += ur0 * zr0 + ui0 * zi0, im0 += ur0 * zi0 - ui0 * zr0, nn0 += ur0 * ur0 + ui0 * ui0;
              re1 += ur1 * zr1 + ui1 * zi1, im1 += ur1 * zi1 - ui1 * zr1, nn1 += ur1 * ur1 + ui1 * ui1;
            }
            mine.lane[0].re += re0, mine.lane[0].im += im0, mine.lane[0].nn += nn0;
            mine.lane[1].re += re1, mine.lane[1].im += im1, mine.lane[1].nn += nn1;
          });
          if (!pass) t.sync();
        }
        const LaneSums<MrSums> s = t.reduce(mine);
        if (!(s.lane[0].nn > 0) && !(s.lane[1].nn > 0)) break;  // the same for the whole team
        float ar0 = 0, ai0 = 0, ar1 = 0, ai1 = 0;               // a lane whose r is zero stays
        if (s.lane[0].nn > 0)
          ar0 = static_cast<float>(s.lane[0].re / s.lane[0].nn), ai0 = static_cast<float>(s.lane[0].im / s.lane[0].nn);
        if (s.lane[1].nn > 0)
          ar1 = static_cast<float>(s.lane[1].re / s.lane[1].nn), ai1 = static_cast<float>(s.lane[1].im / s.lane[1].nn);
        const Complex<T> alpha(Half2::pair(ar0, ar1), Half2::pair(ai0, ai1));
        t.for_each(n, [&](int i) {  // x += alpha r, r -= alpha ar (each thread its own sites)
          ColorSpinor<T, 3, 4> xv = x_load(i), rv = r.load(i);
          const ColorSpinor<T, 3, 4> av = ar_load(i);
          LATKE_UNROLL for (int sp = 0; sp < 4; ++sp) LATKE_UNROLL for (int cc = 0; cc < 3; ++cc) {
            xv.d[sp][cc] = mac(xv.d[sp][cc], alpha, rv.d[sp][cc]);
            rv.d[sp][cc] = mac(rv.d[sp][cc], -alpha, av.d[sp][cc]);
          }
          x_save(xv, i);
          r.save(rv, i);
        });
        t.sync();
      }
      t.for_each(n, [&](int i) {
        const ColorSpinor<T, 3, 4> v = out_of(x_load(i), i, p);
        ColorSpinor<float, 3, 4> v0, v1;
        LATKE_UNROLL for (int sp = 0; sp < 4; ++sp) LATKE_UNROLL for (int cc = 0; cc < 3; ++cc) {
          v0.d[sp][cc] = Complex<float>(v.d[sp][cc].re.lo() * s0, v.d[sp][cc].im.lo() * s0);
          v1.d[sp][cc] = Complex<float>(v.d[sp][cc].re.hi() * s1, v.d[sp][cc].im.hi() * s1);
        }
        x.save(v0, grid.rank_cb(o0, i, p));
        if (!one) x.save(v1, grid.rank_cb(o1, i, p));
      });
    }
  }
};

template <typename Store, int NReal, int NGroup>
void gather_block_major(Backend b, const SiteArray<Store, NReal, NGroup>& dst,
                        const SiteArray<Store, NReal, NGroup>& src, const BlockGrid& grid, int parity, int sites) {
  launch(b, BlockMajorGather<Store, NReal, NGroup>{dst, src, grid, parity}, {sites}, compute_stream(), false);
}

}  // namespace

bool WilsonCloverOperator::solves_blocks() const {
  if (!domain_local()) return false;
  const int vcb = BlockGrid::of(*lattice_, param_.block).blk.volume_cb;
  const std::size_t bytes = dispatch_precision(param_.precision, [&](auto s) {
    using T = typename compute_type<decltype(s)>::type;
    return block_solver_bytes<T>(vcb) + team_scratch_bytes(block_team_size(vcb), sizeof(MrSums));
  });
  return bytes <= team_shared_limit(param_.backend);
}

bool WilsonCloverOperator::solves_block_pairs() const { return why_no_block_pairs().empty(); }

std::string WilsonCloverOperator::why_no_block_pairs() const {
  if (!domain_local()) return "not a domain-local operator";
  if (param_.precision != Precision::half)
    return std::string("the blocks are in ") + to_string(param_.precision) + " precision; pairs need half";
  // solve_block_pairs asks at every call: the message is only formatted where pairs cannot run.
  const Coords& blk = param_.block;
  auto blocks = [&] {
    std::ostringstream s;
    s << "blocks of " << blk[0] << "x" << blk[1] << "x" << blk[2] << "x" << blk[3];
    return s;
  };
  for (int mu = 0; mu < 4; ++mu)
    if (blk[mu] > 16) {  // pack_coords16
      std::ostringstream s = blocks();
      s << ": extent " << blk[mu] << " in dimension " << mu << "; pairs take extents up to 16";
      return s.str();
    }
  const int n = BlockGrid::of(*lattice_, param_.block).blk.volume_cb, size = block_team_size(n);
  if (size < n) {  // on CUDA a thread owns one site
    std::ostringstream s = blocks();
    s << ": " << n << " sites per parity; pairs take up to " << size << ", one per thread of a team";
    return s.str();
  }
  const int reals = static_cast<int>(gauge_.reconstruct());
  const std::size_t scratch = team_scratch_bytes(size, sizeof(LaneSums<MrSums>));
  // The GPU's layout decides (the CPU's limit is an H100's, so that it tests the GPU's choice);
  // on the CPU its own, larger layout must fit too.
  const std::size_t limit = team_shared_limit(param_.backend);
  const std::size_t need =
      std::max(pair_solver_bytes(n, reals, Backend::cuda), pair_solver_bytes(n, reals, param_.backend)) + scratch;
  if (need > limit) {
    std::ostringstream s = blocks();
    s << " with links of " << reals << " reals: a pair's spinors and links need " << need
      << " bytes of shared memory per team; the limit is " << limit;
    return s.str();
  }
  if (!solves_blocks()) {
    std::ostringstream s = blocks();
    s << ": the one-lane block solver does not fit a team either";
    return s.str();
  }
  return "";
}

bool WilsonCloverOperator::block_frame() const { return frame_on_ && param_.block[3] < lattice_->global()[3]; }

void WilsonCloverOperator::make_block_major_fields(const BlockGrid& grid) {
  const int sites = grid.count() * grid.blk.volume_cb;  // the rank's sites of one parity
  const bool frame = block_frame();
  block_gauge_ = std::make_unique<GaugeField>(lattice_, gauge_.param());
  // Plain: the same words and scale, reordered below. In the blocks' frames the links are
  // written anew, in half with the scale 1 that bounds any SU(3) entry (the field's default).
  if (!frame) block_gauge_->copy_from(gauge_);
  const CloverParam cp{clover_.precision(), clover_.backend()};
  block_clover_ = std::make_unique<CloverField>(lattice_, cp);
  block_clover_inv_ = std::make_unique<CloverField>(lattice_, cp);
  const Backend b = param_.backend;
  dispatch_precision(param_.precision, [&](auto s) {
    using Store = decltype(s);
    auto copy = [&](auto r_) {
      constexpr Reconstruct R = decltype(r_)::value;
      const auto dst = block_gauge_->template accessor<Store, R>();
      const auto src = gauge_.template accessor<Store, R>();
      const BlockFrame<Store, R> f{src, grid};
      for (int par = 0; par < 2; ++par) {
        for (int mu = 0; mu < 4; ++mu) {
          if (!frame) {
            gather_block_major(b, dst.block(mu, par), src.block(mu, par), grid, par, sites);
            continue;
          }
          using From = BlockMajorFrom<SiteArray<Store, static_cast<int>(R), 0>, FrameLinks<Store, R>>;
          launch(b, From{dst.block(mu, par), {f, mu}, grid, par}, {sites}, compute_stream(), false);
        }
        const auto c = block_clover_->template accessor<Store>(par).a, ci = block_clover_inv_->template accessor<Store>(par).a;
        const auto sc = clover_.template accessor<Store>(par), sci = clover_inv_.template accessor<Store>(par);
        if (!frame) {
          gather_block_major(b, c, sc.a, grid, par, sites);
          gather_block_major(b, ci, sci.a, grid, par, sites);
          continue;
        }
        using From = BlockMajorFrom<std::decay_t<decltype(c)>, FrameClover<Store, R>>;
        launch(b, From{c, {f, sc}, grid, par}, {sites}, compute_stream(), false);
        launch(b, From{ci, {f, sci}, grid, par}, {sites}, compute_stream(), false);
      }
    };
    if (gauge_.reconstruct() == Reconstruct::r12)
      copy(std::integral_constant<Reconstruct, Reconstruct::r12>{});
    else
      copy(std::integral_constant<Reconstruct, Reconstruct::r18>{});
  });
}

void WilsonCloverOperator::make_block_pair_fields(const BlockGrid& grid) {
  const int n = grid.blk.volume_cb;
  std::vector<int> table;  // each colour's blocks in pairs, an odd one out paired with itself
  for (int c = 0; c < 2; ++c) {
    const std::size_t begin = table.size();
    int o[4];
    for (int blk = 0; blk < grid.count(); ++blk)
      if (grid.origin(blk, o) == c) table.push_back(blk);
    if ((table.size() - begin) % 2) table.push_back(table.back());
  }
  pair_count_ = static_cast<int>(table.size() / 2);
  const Backend be = param_.backend;
  const MemoryKind kind = memory_for(be);
  pair_table_ = Buffer(kind, table.size() * sizeof(int));
  copy_bytes(pair_table_.data(), table.data(), table.size() * sizeof(int));
  const long stride = static_cast<long>(pair_count_) * n;  // site pairs per parity
  const int* blocks = static_cast<const int*>(pair_table_.data());
  const bool frame = block_frame();
  const std::size_t clover_bytes = PairArray<72>::groups * stride * sizeof(Half2x4);
  pair_clover_ = Buffer(kind, 2 * clover_bytes);
  pair_clover_inv_ = Buffer(kind, 2 * clover_bytes);
  auto copy = [&](auto r_) {
    constexpr Reconstruct R = decltype(r_)::value;
    using Links = PairLinks<R>;
    pair_links_ = Buffer(kind, 8 * Links::Array::groups * stride * sizeof(Half2x4));
    Links dst{static_cast<Half2x4*>(pair_links_.data()), stride};
    const auto src = gauge_.template accessor<short, R>();
    const BlockFrame<short, R> f{src, grid};
    auto gather = [&](const auto& d, const auto& source, int par) {
      launch(be, PairGather<std::decay_t<decltype(source)>>{d, source, grid, blocks, par}, {static_cast<int>(stride)},
             compute_stream(), false);
    };
    for (int par = 0; par < 2; ++par) {
      for (int mu = 0; mu < 4; ++mu) {
        if (frame)
          gather(dst.array(mu, par), FrameLinks<short, R>{f, mu}, par);
        else
          gather(dst.array(mu, par), RankOrder<short, Links::n_real, 0>{src.block(mu, par), grid}, par);
      }
      for (int inv = 0; inv < 2; ++inv) {
        const PairArray<72> d{static_cast<Half2x4*>((inv ? pair_clover_inv_ : pair_clover_).data()) +
                                  par * PairArray<72>::groups * stride,
                              stride};
        const auto a = (inv ? clover_inv_ : clover_).template accessor<short>(par);
        if (frame)
          gather(d, FrameClover<short, R>{f, a}, par);
        else
          gather(d, RankOrder<short, 72, 2>{a.a, grid}, par);
      }
    }
  };
  if (gauge_.reconstruct() == Reconstruct::r12)
    copy(std::integral_constant<Reconstruct, Reconstruct::r12>{});
  else
    copy(std::integral_constant<Reconstruct, Reconstruct::r18>{});
}

namespace {
/// The kernels' SapIo from sap_blocks' fields.
template <typename Store>
SapIo<Store> sap_io(const WilsonCloverOperator::SapFields& f, double hop) {
  SapIo<Store> io;
  io.rq = f.r_q->accessor<Store, 3, 4>();
  io.acc = f.acc_p->accessor<Store, 3, 4>();
  const int p = f.acc_p->block_parity(0);
  io.dxp = f.dx->accessor<Store, 3, 4>(p);
  io.dxq = f.dx->accessor<Store, 3, 4>(1 - p);
  io.omega = f.omega;
  io.hop = hop;
  io.first = f.first;
  io.fresh_acc = f.fresh_acc;
  return io;
}
}  // namespace

void WilsonCloverOperator::sap_blocks(const SapFields& f, int steps, int colour, bool half_pairs) {
  require(f.s_p && f.r_q && f.acc_p && f.dx, "SAP step: missing fields");
  require_field(*f.s_p, "SAP residual");
  require_field(*f.r_q, "SAP residual");
  require_field(*f.acc_p, "SAP correction sum");
  require_field(*f.dx, "SAP correction");
  const int p = f.s_p->block_parity(0);
  require(f.s_p->n_parity() == 1 && f.acc_p->n_parity() == 1 && f.r_q->n_parity() == 1 && f.dx->n_parity() == 2 &&
              f.acc_p->block_parity(0) == p && f.r_q->block_parity(0) == 1 - p,
          "SAP step: takes s_p and the sum on the solved parity, R_q on the other and a full correction");
  require(colour == 0 || colour == 1, "SAP step: colour ", colour, ", expected 0 or 1");
  if (half_pairs) return solve_block_pairs(*f.dx, *f.s_p, SchurType::symmetric, steps, colour, &f);
  solve_blocks_impl(*f.dx, *f.s_p, SchurType::symmetric, steps, colour, &f);
}

void WilsonCloverOperator::solve_blocks(ColorSpinorField& x, const ColorSpinorField& b, SchurType type, int steps,
                                        int colour, bool half_pairs) {
  if (half_pairs) return solve_block_pairs(x, b, type, steps, colour, nullptr);
  require_field(x, "block solution");
  require(x.n_parity() == 1 && b.n_parity() == 1 && x.block_parity(0) == b.block_parity(0),
          "Wilson-clover block solver: takes two fields of the same parity");
  solve_blocks_impl(x, b, type, steps, colour, nullptr);
}

void WilsonCloverOperator::solve_blocks_impl(ColorSpinorField& x, const ColorSpinorField& b, SchurType type, int steps,
                                             int colour, const SapFields* sap) {
  require(solves_blocks(), "Wilson-clover block solver: ",
          domain_local() ? "the blocks' spinors do not fit in shared memory" : "not a domain-local operator");
  require_field(b, "block right-hand side");
  const Lattice& lat = *lattice_;
  const BlockGrid grid = BlockGrid::of(lat, param_.block);
  const int p = b.block_parity(0), q = 1 - p;
  const double site_flops = 2 * (1320.0 + 504.0) + 48.0 + 4 * 24 + 2 * 48;
  if (!block_gauge_) make_block_major_fields(grid);
  const LogScope log(LogEvent::schwarz_blocks, site_flops * lat.volume_cb() * steps * (colour < 0 ? 1.0 : 0.5));
  dispatch_precision(param_.precision, [&](auto s) {
    using Store = decltype(s);
    using T = typename compute_type<Store>::type;
    auto go = [&](auto r_, auto sym_, auto sap_) {
      constexpr Reconstruct R = decltype(r_)::value;
      BlockMRKernel<Store, R, decltype(sym_)::value, decltype(sap_)::value> k;
      if constexpr (decltype(sap_)::value) k.sap = sap_io<Store>(*sap, hop());
      wilson::DslashRequest rq{{&x, &b, nullptr, nullptr}, &gauge_, nullptr, &param_, Epilogue::plain, 1.0, false};
      const wilson::DslashArg<Store, R> arg = wilson::make_arg<Store, R>(rq);
      k.gauge = block_gauge_->template accessor<Store, R>();
      k.hop.set(arg);
      k.hop.temporal = block_frame();
      k.grid = grid;
      k.site_p = (type == SchurType::symmetric ? *block_clover_inv_ : *block_clover_).template accessor<Store>(p);
      k.inv_q = block_clover_inv_->template accessor<Store>(q);
      k.b = b.accessor<Store, 3, 4>();
      if (!sap) k.x = x.accessor<Store, 3, 4>();
      k.p = p;
      k.colour = colour;
      k.steps = steps;
      k.a = static_cast<T>(-hop() * hop());
      const int n = grid.blk.volume_cb;
      launch_teams(param_.backend, k, grid.count(), block_team_size(n), block_solver_bytes<T>(n), sizeof(MrSums));
    };
    auto run = [&](auto r_, auto sym_) {
      if constexpr (decltype(sym_)::value) {
        if (sap) return go(r_, sym_, std::true_type{});
      }
      go(r_, sym_, std::false_type{});
    };
    using R12 = std::integral_constant<Reconstruct, Reconstruct::r12>;
    using R18 = std::integral_constant<Reconstruct, Reconstruct::r18>;
    const bool r12 = gauge_.reconstruct() == Reconstruct::r12, sym = type == SchurType::symmetric;
    if (r12 && sym)
      run(R12{}, std::true_type{});
    else if (r12)
      run(R12{}, std::false_type{});
    else if (sym)
      run(R18{}, std::true_type{});
    else
      run(R18{}, std::false_type{});
  });
}

void WilsonCloverOperator::solve_block_pairs(ColorSpinorField& x, const ColorSpinorField& b, SchurType type, int steps,
                                             int colour, const SapFields* sap) {
  const std::string why = why_no_block_pairs();
  require(why.empty(), "Wilson-clover block solver in FP16 pairs: ", why);
  require_field(x, "block solution");
  require_field(b, "block right-hand side");
  require(sap || (x.n_parity() == 1 && b.n_parity() == 1 && x.block_parity(0) == b.block_parity(0)),
          "Wilson-clover block solver: takes two fields of the same parity");
  const Lattice& lat = *lattice_;
  const BlockGrid grid = BlockGrid::of(lat, param_.block);
  const int n = grid.blk.volume_cb, size = block_team_size(n);
  const Backend be = param_.backend;
  const std::size_t bytes = pair_solver_bytes(n, static_cast<int>(gauge_.reconstruct()), be);
  const std::size_t sums = sizeof(LaneSums<MrSums>);
  const int p = b.block_parity(0), q = 1 - p;
  const double site_flops = 2 * (1320.0 + 504.0) + 48.0 + 4 * 24 + 2 * 48;
  if (pair_table_.bytes() == 0) make_block_pair_fields(grid);
  const long stride = static_cast<long>(pair_count_) * n;
  const LogScope log(LogEvent::schwarz_blocks, site_flops * lat.volume_cb() * steps * (colour < 0 ? 1.0 : 0.5));
  auto clover = [&](const Buffer& buf, int par) {
    return PairClover{{static_cast<Half2x4*>(buf.data()) + par * PairArray<72>::groups * stride, stride}};
  };
  auto go = [&](auto r_, auto sym_, auto threads_, auto sap_) {
    constexpr Reconstruct R = decltype(r_)::value;
    constexpr bool Sym = decltype(sym_)::value;
    constexpr int Threads = decltype(threads_)::value;
    BlockMRPairKernel<R, Sym, Threads, decltype(sap_)::value> k;
    if constexpr (decltype(sap_)::value) k.sap = sap_io<short>(*sap, hop());
    wilson::DslashRequest rq{{&x, &b, nullptr, nullptr}, &gauge_, nullptr, &param_, Epilogue::plain, 1.0, false};
    const wilson::DslashArg<short, R> arg = wilson::make_arg<short, R>(rq);
    k.hop.set(arg);
    k.hop.temporal = block_frame();
    k.links = PairLinks<R>{static_cast<Half2x4*>(pair_links_.data()), stride};
    k.grid = grid;
    k.site_p = clover(Sym ? pair_clover_inv_ : pair_clover_, p);
    k.inv_q = clover(pair_clover_inv_, q);
    k.b = b.accessor<short, 3, 4>();
    if (!sap) k.x = x.accessor<short, 3, 4>();
    k.blocks = static_cast<const int*>(pair_table_.data());
    k.p = p;
    k.colour = colour;
    k.steps = steps;
    k.a = static_cast<float>(-hop() * hop());
    launch_teams(be, k, pair_count_, size, bytes, sums);
  };
  auto pick = [&](auto r_, auto sym_, auto sap_) {
    if (size <= 128)
      go(r_, sym_, std::integral_constant<int, 128>{}, sap_);
    else
      go(r_, sym_, std::integral_constant<int, 256>{}, sap_);
  };
  auto run = [&](auto r_, auto sym_) {
    if constexpr (decltype(sym_)::value) {
      if (sap) return pick(r_, sym_, std::true_type{});
    }
    pick(r_, sym_, std::false_type{});
  };
  using R12 = std::integral_constant<Reconstruct, Reconstruct::r12>;
  using R18 = std::integral_constant<Reconstruct, Reconstruct::r18>;
  const bool r12 = gauge_.reconstruct() == Reconstruct::r12, sym = type == SchurType::symmetric;
  if (r12 && sym)
    run(R12{}, std::true_type{});
  else if (r12)
    run(R12{}, std::false_type{});
  else if (sym)
    run(R18{}, std::true_type{});
  else
    run(R18{}, std::false_type{});
}

}  // namespace latke
