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
// solution.
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

/// Threads of a team for blocks of vcb sites per parity: one per site, at most 256.
int block_team_size(int vcb) {
  int size = 32;
  while (size < vcb && size < 256) size *= 2;
  return size;
}

template <typename Store, Reconstruct R, bool Symmetric>
struct BlockMRKernel {
  using T = typename compute_type<Store>::type;
  using Gauge = GaugeAccessor<Store, R>;
  Gauge gauge;
  BlockGrid grid;
  CloverAccessor<Store> site_p;  ///< A_pp^-1 (symmetric) or A_pp (asymmetric)
  CloverAccessor<Store> inv_q;   ///< A_qq^-1
  SpinorAccessor<Store, 3, 4> b, x;
  int p = 0;
  int colour = -1;
  int steps = 1;
  T a = 0;            ///< -hop^2
  T sign = -1;        ///< forward projector 1 + sign gamma
  int cut_mask = 15;  ///< bit mu: hops leaving the block in mu are dropped; else the block is the
                      ///< whole lattice in mu and they wrap, with the boundary phase
  int phase_mask = 0;
  Complex<T> phase[4];

  /// The hopping sum at site i (parity par, packed block coordinates pc) from the block's
  /// spinors `in`: wilson::hop_sum's hops, those that leave the block in a cut dimension
  /// dropped. Not hop_sum itself: called here with the block as its geometry it took 7% longer
  /// (its block masks divide c_mu by the block extent; the parity is a field of its argument).
  LATKE_HOST_DEVICE LATKE_INLINE ColorSpinor<T, 3, 4> hops(const BlockLinks<Gauge>& links, const SharedSpinors<T>& in,
                                                           int i, int par, int pc) const {
    const int* L = grid.blk.L;
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
          const T s = fwd ? sign : -sign;
          ColorSpinor<T, 3, 2> h = wilson::project<mu>(in.load(nb >> 1), s);
          const ColorMatrix<T, 3> u = links.load(mu, fwd ? i : nb >> 1, fwd ? par : 1 - par);
          if constexpr (fwd)
            h = u * h;
          else
            h = adj_mul(u, h);
          if (edge && ((phase_mask >> mu) & 1)) h = wilson::scale_phase(h, fwd ? phase[mu] : conj(phase[mu]));
          wilson::accumulate<mu>(acc, h, s);
        }
      });
      stride *= lm;
    });
    return acc;
  }

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
      t.for_each(n, [&](int i) { x.save(zero, map_p[i]); });
      return;
    }
    const int first = t.index * n;  // the block's sites in the block-major links and clover
    const BlockLinks<Gauge> links{gauge, first};
    t.for_each(n, [&](int i) {
      r.save(b.load(map_p[i]), i);
      xs.save(zero, i);
    });
    t.sync();
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
          const ColorSpinor<T, 3, 4> h = hops(links, in, i, par, coords_par[i]);
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
    t.for_each(n, [&](int i) { x.save(xs.load(i), map_p[i]); });
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

void WilsonCloverOperator::make_block_major_fields(const BlockGrid& grid) {
  const int sites = grid.count() * grid.blk.volume_cb;  // the rank's sites of one parity
  block_gauge_ = std::make_unique<GaugeField>(lattice_, gauge_.param());
  block_gauge_->copy_from(gauge_);  // the same words and scale, reordered below
  const CloverParam cp{clover_.precision(), clover_.backend()};
  block_clover_ = std::make_unique<CloverField>(lattice_, cp);
  block_clover_inv_ = std::make_unique<CloverField>(lattice_, cp);
  const Backend b = param_.backend;
  dispatch_precision(param_.precision, [&](auto s) {
    using Store = decltype(s);
    auto links = [&](auto r_) {
      constexpr Reconstruct R = decltype(r_)::value;
      const auto dst = block_gauge_->template accessor<Store, R>();
      const auto src = gauge_.template accessor<Store, R>();
      for (int mu = 0; mu < 4; ++mu)
        for (int par = 0; par < 2; ++par)
          gather_block_major(b, dst.block(mu, par), src.block(mu, par), grid, par, sites);
    };
    if (gauge_.reconstruct() == Reconstruct::r12)
      links(std::integral_constant<Reconstruct, Reconstruct::r12>{});
    else
      links(std::integral_constant<Reconstruct, Reconstruct::r18>{});
    for (int par = 0; par < 2; ++par) {
      gather_block_major(b, block_clover_->template accessor<Store>(par).a, clover_.template accessor<Store>(par).a,
                         grid, par, sites);
      gather_block_major(b, block_clover_inv_->template accessor<Store>(par).a,
                         clover_inv_.template accessor<Store>(par).a, grid, par, sites);
    }
  });
}

void WilsonCloverOperator::solve_blocks(ColorSpinorField& x, const ColorSpinorField& b, SchurType type, int steps,
                                        int colour) {
  require(solves_blocks(), "Wilson-clover block solver: ",
          domain_local() ? "the blocks' spinors do not fit in shared memory" : "not a domain-local operator");
  require_field(x, "block solution");
  require_field(b, "block right-hand side");
  require(x.n_parity() == 1 && b.n_parity() == 1 && x.block_parity(0) == b.block_parity(0),
          "Wilson-clover block solver: takes two fields of the same parity");
  const Lattice& lat = *lattice_;
  const BlockGrid grid = BlockGrid::of(lat, param_.block);
  const int p = b.block_parity(0), q = 1 - p;
  const double site_flops = 2 * (1320.0 + 504.0) + 48.0 + 4 * 24 + 2 * 48;
  if (!block_gauge_) make_block_major_fields(grid);
  const LogScope log(LogEvent::schwarz_blocks, site_flops * lat.volume_cb() * steps * (colour < 0 ? 1.0 : 0.5));
  dispatch_precision(param_.precision, [&](auto s) {
    using Store = decltype(s);
    using T = typename compute_type<Store>::type;
    auto run = [&](auto r_, auto sym_) {
      constexpr Reconstruct R = decltype(r_)::value;
      BlockMRKernel<Store, R, decltype(sym_)::value> k;
      wilson::DslashRequest rq{{&x, &b, nullptr, nullptr}, &gauge_, nullptr, &param_, Epilogue::plain, 1.0, false};
      const wilson::DslashArg<Store, R> arg = wilson::make_arg<Store, R>(rq);
      k.gauge = block_gauge_->template accessor<Store, R>();
      k.sign = arg.sign;
      k.cut_mask = arg.cut_mask;
      k.phase_mask = arg.phase_mask;
      for (int mu = 0; mu < 4; ++mu) k.phase[mu] = arg.phase[mu];
      k.grid = grid;
      k.site_p = (type == SchurType::symmetric ? *block_clover_inv_ : *block_clover_).template accessor<Store>(p);
      k.inv_q = block_clover_inv_->template accessor<Store>(q);
      k.b = b.accessor<Store, 3, 4>();
      k.x = x.accessor<Store, 3, 4>();
      k.p = p;
      k.colour = colour;
      k.steps = steps;
      k.a = static_cast<T>(-hop() * hop());
      const int n = grid.blk.volume_cb;
      launch_teams(param_.backend, k, grid.count(), block_team_size(n), block_solver_bytes<T>(n), sizeof(MrSums));
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

}  // namespace latke
