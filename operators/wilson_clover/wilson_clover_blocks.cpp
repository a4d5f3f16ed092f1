// The domain-local operator's block solver (WilsonCloverOperator::solve_blocks): minimal-
// residual steps on every block of the rank, each block kept on chip by one team (a CUDA
// thread block; an OpenMP iteration on the CPU) for all its steps.
//
// A team holds its block's right-hand side and residual r (solved parity p), Mhat r, the
// solution x and the intermediate A_qq^-1 D_qp r (parity q) in shared memory, in the compute
// precision, and a map from the block's sites to the rank's. Per step: one pass over the
// block's q sites (hops from r), one over its p sites (hops from the intermediate, the
// epilogue of the Schur form and the block sums <Mhat r, r>, |Mhat r|^2 over the team), and
// the update of x and r. Links and clover are read through the field accessors: the first
// step brings them from DRAM, the others find them in L1/L2 (a block of 4^4 sites holds
// 24 KB of half-precision links and 36 KB of clover inverse). DRAM traffic per application is
// then one read of the links, clover and right-hand side and one write of the solution.
#include "operators/wilson_clover/wilson_clover.h"
#include "operators/wilson_clover/wilson_clover_launch_impl.h"
#include "src/core/block_grid.h"
#include "src/core/launch_team.h"
#include "src/core/log.h"
#include "src/core/mr_sums.h"

namespace latke {

namespace {

/// A block's spinors in shared memory, real k of site i at d[k * n + i] (consecutive threads,
/// consecutive banks).
template <typename T>
struct SharedSpinors {
  T* d;
  int n;
  LATKE_HOST_DEVICE LATKE_INLINE ColorSpinor<T, 3, 4> load(int i) const {
    ColorSpinor<T, 3, 4> v;
    LATKE_UNROLL for (int s = 0; s < 4; ++s) LATKE_UNROLL for (int c = 0; c < 3; ++c) v.d[s][c] =
        Complex<T>(d[(6 * s + 2 * c) * n + i], d[(6 * s + 2 * c + 1) * n + i]);
    return v;
  }
  LATKE_HOST_DEVICE LATKE_INLINE void save(const ColorSpinor<T, 3, 4>& v, int i) const {
    LATKE_UNROLL for (int s = 0; s < 4; ++s) LATKE_UNROLL for (int c = 0; c < 3; ++c) {
      d[(6 * s + 2 * c) * n + i] = v.d[s][c].re;
      d[(6 * s + 2 * c + 1) * n + i] = v.d[s][c].im;
    }
  }
};

/// The rank's links seen from a block: site i of parity p of the block is site map[p n + i]
/// of the rank.
template <typename Gauge>
struct BlockLinks {
  Gauge g;
  const int* map;
  int n;
  LATKE_HOST_DEVICE LATKE_INLINE auto load(int mu, int i, int parity) const {
    return g.load(mu, map[parity * n + i], parity);
  }
};

/// Spinors of one block per team: 4 sets of 24 reals per site of one parity, and the site map.
template <typename T>
std::size_t block_solver_bytes(int vcb) {
  return static_cast<std::size_t>(vcb) * (96 * sizeof(T) + 2 * sizeof(int));
}

/// Threads of a team for blocks of vcb sites per parity: one per site, at most 256.
int block_team_size(int vcb) {
  int size = 32;
  while (size < vcb && size < 256) size *= 2;
  return size;
}

template <typename Store, Reconstruct R, bool Symmetric>
struct BlockMRKernel {
  using T = typename compute_type<Store>::type;
  wilson::DslashArg<Store, R> arg[2];  ///< by output parity; their geometry is one block's
  BlockGrid grid;
  CloverAccessor<Store> site_p;  ///< A_pp^-1 (symmetric) or A_pp (asymmetric)
  CloverAccessor<Store> inv_q;   ///< A_qq^-1
  SpinorAccessor<Store, 3, 4> b, x;
  int p = 0;
  int colour = -1;
  int steps = 1;
  T a = 0;  ///< -hop^2

  LATKE_HOST_DEVICE void operator()(const Team& t) const {
    const LocalGeometry& blk = grid.blk;
    const int n = blk.volume_cb, q = 1 - p;
    int o[4];
    const int block_colour = grid.origin(t.index, o);
    T* base = reinterpret_cast<T*>(t.shared());
    const SharedSpinors<T> r{base, n}, ar{base + 24 * n, n}, xs{base + 48 * n, n}, tq{base + 72 * n, n};
    int* map = reinterpret_cast<int*>(base + 96 * n);
    t.for_each(2 * n, [&](int k) {
      const int par = k >= n ? 1 : 0;
      map[k] = grid.rank_cb(o, k - par * n, par);
    });
    t.sync();
    const int *map_p = map + p * n, *map_q = map + q * n;
    ColorSpinor<T, 3, 4> zero;
    zero.zero();
    if (colour >= 0 && block_colour != colour) {  // a block of the other colour: no correction
      t.for_each(n, [&](int i) { x.save(zero, map_p[i]); });
      return;
    }
    const BlockLinks<decltype(arg[0].gauge)> links{arg[0].gauge, map, n};
    t.for_each(n, [&](int i) {
      r.save(b.load(map_p[i]), i);
      xs.save(zero, i);
    });
    t.sync();
    for (int step = 0; step < steps; ++step) {
      t.for_each(n, [&](int i) {  // tq = A_qq^-1 D_qp r
        int c[4];
        const int full = blk.coords(i, q, c);
        tq.save(inv_q.apply(wilson::hop_sum(arg[q], links, r, i, full, c), map_q[i]), i);
      });
      t.sync();
      const MrSums s = t.template sum<MrSums>(n, [&](int i) {  // ar = Mhat r, and its sums
        int c[4];
        const int full = blk.coords(i, p, c);
        const ColorSpinor<T, 3, 4> h = wilson::hop_sum(arg[p], links, tq, i, full, c), v = r.load(i);
        const ColorSpinor<T, 3, 4> w =
            Symmetric ? axpy(a, site_p.apply(h, map_p[i]), v) : axpy(a, h, site_p.apply(v, map_p[i]));
        ar.save(w, i);
        MrSums e;
        LATKE_UNROLL for (int sp = 0; sp < 4; ++sp) LATKE_UNROLL for (int cc = 0; cc < 3; ++cc) {
          const Complex<T> u = w.d[sp][cc], z = v.d[sp][cc];
          e.re += static_cast<double>(u.re) * z.re + static_cast<double>(u.im) * z.im;
          e.im += static_cast<double>(u.re) * z.im - static_cast<double>(u.im) * z.re;
          e.nn += static_cast<double>(u.re) * u.re + static_cast<double>(u.im) * u.im;
        }
        return e;
      });
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

}  // namespace

bool WilsonCloverOperator::solves_blocks() const {
  if (!domain_local()) return false;
  const int vcb = BlockGrid::of(*lattice_, param_.block).blk.volume_cb;
  const std::size_t bytes = dispatch_precision(param_.precision, [&](auto s) {
    using T = typename compute_type<decltype(s)>::type;
    return block_solver_bytes<T>(vcb) + sizeof(MrSums) * block_team_size(vcb);
  });
  return bytes <= team_shared_limit(param_.backend);
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
  const LogScope log(LogEvent::schwarz_blocks, site_flops * lat.volume_cb() * steps * (colour < 0 ? 1.0 : 0.5));
  dispatch_precision(param_.precision, [&](auto s) {
    using Store = decltype(s);
    using T = typename compute_type<Store>::type;
    auto run = [&](auto r_, auto sym_) {
      constexpr Reconstruct R = decltype(r_)::value;
      BlockMRKernel<Store, R, decltype(sym_)::value> k;
      wilson::DslashRequest rq{{&x, &b, nullptr, nullptr}, &gauge_, nullptr, &param_, Epilogue::plain, 1.0, false};
      for (int par = 0; par < 2; ++par) {
        k.arg[par] = wilson::make_arg<Store, R>(rq);
        k.arg[par].parity = par;
        k.arg[par].faces.geom = grid.blk;
      }
      k.grid = grid;
      k.site_p = (type == SchurType::symmetric ? clover_inv_ : clover_).template accessor<Store>(p);
      k.inv_q = clover_inv_.template accessor<Store>(q);
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
