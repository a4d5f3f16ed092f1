// The Schwarz preconditioner (schwarz.h): block-local MR on all blocks at once. Compiled by
// nvcc in CUDA builds.
#include "preconditioners/schwarz/schwarz.h"

#include <sstream>
#include <vector>

#include "src/core/block_grid.h"
#include "src/core/error.h"
#include "src/core/indexing.h"
#include "src/core/launch.h"
#include "src/core/log.h"
#include "src/core/mr_sums.h"
#include "src/fields/blas.h"

namespace latke {

const char* to_string(SchwarzType t) { return t == SchwarzType::additive ? "additive" : "multiplicative"; }

SchwarzType parse_schwarz_type(const std::string& name) {
  if (name == "additive") return SchwarzType::additive;
  if (name == "multiplicative") return SchwarzType::multiplicative;
  fail("unknown Schwarz type '", name, "': expected additive or multiplicative");
}

void check_schwarz_block(const Lattice& lat, const Coords& block) {
  for (int mu = 0; mu < 4; ++mu) {
    const int b = block[mu], l = lat.local()[mu];
    require(b > 0 && l % b == 0, "Schwarz block ", block[0], ",", block[1], ",", block[2], ",", block[3],
            ": extent ", b, " in dimension ", mu, " does not divide the local extent ", l);
    require(b % 2 == 0, "Schwarz block ", block[0], ",", block[1], ",", block[2], ",", block[3], ": extent ", b,
            " in dimension ", mu, " is odd; even-odd within blocks needs even extents");
  }
}

bool schwarz_colours_proper(const Lattice& lat, const Coords& block) {
  for (int mu = 0; mu < 4; ++mu) {
    const int n = lat.global()[mu] / block[mu];
    if (n > 1 && n % 2) return false;
  }
  return true;
}

Coords schwarz_block_for(const Lattice& lat, const SchwarzParam& p) {
  Coords b = p.block;
  if (!p.adapt_block) return b;
  for (int mu = 0; mu < 4; ++mu)
    while (b[mu] > 2 && b[mu] % 2 == 0 && lat.local()[mu] % b[mu] != 0) b[mu] /= 2;
  return b;
}

namespace {

/// The blocks of the rank (BlockGrid) and the sites of a (full or parity) field within them.
struct BlockGeometry : BlockGrid {
  int parity[2];  ///< site parity held in field block 0 and 1
  int n_parity;

  /// Element i of block b: the field block it lives in and its x_cb there.
  LATKE_HOST_DEVICE LATKE_INLINE int site_of(int b, int i, int& fblock) const {
    fblock = i / blk.volume_cb;
    int o[4];
    origin(b, o);
    return rank_cb(o, i - fblock * blk.volume_cb, parity[fblock]);
  }
};

template <typename S, int NR>
using Arr = SiteArray<S, NR, 1>;

/// Per block: <Ar, r> and |Ar|^2.
template <typename S, int NR>
struct BlockSumsKernel {
  BlockGeometry g;
  Arr<S, NR> r[2], ar[2];
  LATKE_HOST_DEVICE MrSums operator()(int b, int i) const {
    int fb;
    const int x = g.site_of(b, i, fb);
    using T = typename compute_type<S>::type;
    T u[NR], v[NR];
    ar[fb].load(u, x);
    r[fb].load(v, x);
    MrSums s;
    for (int k = 0; k < NR; k += 2) {
      s.re += static_cast<double>(u[k]) * v[k] + static_cast<double>(u[k + 1]) * v[k + 1];
      s.im += static_cast<double>(u[k]) * v[k + 1] - static_cast<double>(u[k + 1]) * v[k];
      s.nn += static_cast<double>(u[k]) * u[k] + static_cast<double>(u[k + 1]) * u[k + 1];
    }
    return s;
  }
};

/// x += alpha_b r, r -= alpha_b Ar with alpha_b = <Ar, r>/|Ar|^2 of the site's block.
template <typename S, int NR>
struct BlockUpdateKernel {
  BlockGeometry g;
  Arr<S, NR> x, r, ar;
  const MrSums* sums;
  int parity;
  int colour;  ///< -1: every block
  LATKE_HOST_DEVICE void operator()(int x_cb, int) const {
    int c[4], col;
    g.rank.coords(x_cb, parity, c);
    const int b = g.block_of(c, col);
    if (colour >= 0 && col != colour) return;
    const MrSums s = sums[b];
    if (!(s.nn > 0)) return;
    using T = typename compute_type<S>::type;
    const T ar_ = static_cast<T>(s.re / s.nn), ai = static_cast<T>(s.im / s.nn);
    T xv[NR], rv[NR], av[NR];
    x.load(xv, x_cb);
    r.load(rv, x_cb);
    ar.load(av, x_cb);
    for (int k = 0; k < NR; k += 2) {
      xv[k] += ar_ * rv[k] - ai * rv[k + 1];
      xv[k + 1] += ar_ * rv[k + 1] + ai * rv[k];
      rv[k] -= ar_ * av[k] - ai * av[k + 1];
      rv[k + 1] -= ar_ * av[k + 1] + ai * av[k];
    }
    x.save(xv, x_cb);
    r.save(rv, x_cb);
  }
};

/// Zero the sites of blocks whose colour is not `colour`.
template <typename S, int NR>
struct ColourMaskKernel {
  BlockGeometry g;
  Arr<S, NR> r;
  int parity, colour;
  LATKE_HOST_DEVICE void operator()(int x_cb, int) const {
    int c[4], col;
    g.rank.coords(x_cb, parity, c);
    g.block_of(c, col);
    if (col == colour) return;
    using T = typename compute_type<S>::type;
    T z[NR] = {};
    r.save(z, x_cb);
  }
};

template <typename S, int NR>
Arr<S, NR> arr(const ColorSpinorField& f, int block) {
  Arr<S, NR> a;
  a.data = static_cast<S*>(f.block_data(block));
  a.norm = f.block_norm(block);
  a.stride = f.lattice().volume_cb();
  return a;
}

BlockGeometry block_geometry(const ColorSpinorField& f, const Coords& block) {
  BlockGeometry g;
  static_cast<BlockGrid&>(g) = BlockGrid::of(f.lattice(), block);
  g.n_parity = f.n_parity();
  for (int b = 0; b < 2; ++b) g.parity[b] = f.block_parity(b < f.n_parity() ? b : 0);
  return g;
}

}  // namespace

SchwarzPreconditioner::SchwarzPreconditioner(std::shared_ptr<LinearOperator> local, std::shared_ptr<LinearOperator> full,
                                             const SchwarzParam& param)
    : local_(std::move(local)),
      full_(std::move(full)),
      param_(param),
      x_(local_->make_field()),
      r_(local_->make_field()),
      ar_(local_->make_field()),
      acc_(local_->make_field()) {
  check_schwarz_block(*local_->lattice(), param.block);
  require(param.iterations >= 1, "Schwarz iterations ", param.iterations, ": expected at least 1");
  require(param.omega > 0 && param.omega < 2, "Schwarz relaxation weight ", param.omega, ": expected a number in (0, 2)");
  require(param.cycles >= 1, "Schwarz cycles ", param.cycles, ": expected at least 1");
  require(!schwarz_needs_full_operator(param) || full_,
          "multiplicative Schwarz and more than one cycle need the operator with communication to update residuals");
  require(local_->field_param().precision == param.precision, "Schwarz: the block operator is in ",
          to_string(local_->field_param().precision), " precision, the preconditioner in ", to_string(param.precision));
  n_blocks_ = BlockGrid::of(*local_->lattice(), param.block).count();
  on_chip_ = param.on_chip && local_->solves_blocks();
  // By default on CUDA only: the CPU backend emulates FP16 arithmetic, more slowly than FP32.
  const bool want =
      param.half_pairs == SchwarzParam::HalfPairs::on ||
      (param.half_pairs == SchwarzParam::HalfPairs::where_possible && local_->field_param().backend == Backend::cuda);
  half_pairs_ = on_chip_ && want && local_->solves_block_pairs();
  if (param.half_pairs == SchwarzParam::HalfPairs::on && !half_pairs_)
    fail("Schwarz block solves in FP16 pairs (-pc_latke_schwarz_half_pairs): ",
         param.on_chip ? local_->why_no_block_pairs() : "the blocks are streamed (-pc_latke_schwarz_on_chip is off)");
  if (!on_chip_) sums_ = Buffer(memory_for(local_->field_param().backend), sizeof(MrSums) * n_blocks_);
  boundary_update_ = param.boundary_update && param.type == SchwarzType::multiplicative && on_chip_ &&
                     local_->solves_sap() && full_->solves_sap() &&
                     schwarz_colours_proper(*local_->lattice(), param.block);
  if (boundary_update_) {
    SpinorParam q = r_.param();
    q.subset = q.subset == Subset::even ? Subset::odd : Subset::even;
    r_q_ = std::make_unique<ColorSpinorField>(r_.lattice_ptr(), q);
    q.subset = Subset::full;
    for (auto& d : dx_) {
      d = std::make_unique<ColorSpinorField>(r_.lattice_ptr(), q);
      d->zero();
    }
  }
}

SchwarzPreconditioner::SchwarzPreconditioner(const OperatorFor& op, const SchwarzParam& param)
    : SchwarzPreconditioner(op(param.block), schwarz_needs_full_operator(param) ? op(Coords{0, 0, 0, 0}) : nullptr,
                            param) {}

SchwarzPreconditioner::~SchwarzPreconditioner() = default;

void SchwarzPreconditioner::block_mr(int colour) {
  if (on_chip_) {
    local_->solve_blocks(x_, r_, param_.iterations, colour, half_pairs_);
    local_applications_ += param_.iterations;
    return;
  }
  const BlockGeometry g = block_geometry(r_, param_.block);
  const Backend be = r_.backend();
  MrSums* sums = static_cast<MrSums*>(sums_.data());
  x_.zero();
  for (int step = 0; step < param_.iterations; ++step) {
    local_->apply(ar_, r_);
    ++local_applications_;
    dispatch_precision(r_.precision(), [&](auto s) {
      using S = decltype(s);
      BlockSumsKernel<S, 24> k;
      k.g = g;
      for (int b = 0; b < r_.n_parity(); ++b) {
        k.r[b] = arr<S, 24>(r_, b);
        k.ar[b] = arr<S, 24>(ar_, b);
      }
      launch_segmented_reduce<MrSums>(be, k, n_blocks_, g.blk.volume_cb * r_.n_parity(), sums);
      for (int b = 0; b < r_.n_parity(); ++b) {
        BlockUpdateKernel<S, 24> u{g, arr<S, 24>(x_, b), arr<S, 24>(r_, b), arr<S, 24>(ar_, b), sums,
                                   r_.block_parity(b), colour};
        launch(be, u, {r_.lattice().volume_cb()}, compute_stream(), false);
      }
    });
  }
}

void SchwarzPreconditioner::apply(ColorSpinorField& out, const ColorSpinorField& in) {
  apply_cycles(out, in, param_.cycles);
}

void SchwarzPreconditioner::apply_cycles(ColorSpinorField& out, const ColorSpinorField& in, int cycles) {
  require(in.nspin() == 4 && in.ncolor() == 3, "Schwarz preconditioner: only Wilson fields are instantiated");
  require(cycles >= 1, "Schwarz cycles ", cycles, ": expected at least 1");
  require(cycles == 1 || full_, "Schwarz: more than one cycle needs the operator with communication");
  const blas::Cplx omega(param_.omega);
  if (param_.type == SchwarzType::additive && cycles == 1) {
    r_.copy_from(in);
    block_mr(-1);
    if (param_.omega != 1.0) blas::caxpby(blas::Cplx(0), x_, omega, x_);
    out.copy_from(x_);
    return;
  }
  if (boundary_update_) return apply_boundary_sap(out, in, cycles);
  const BlockGeometry g = block_geometry(r_, param_.block);
  // r = in - A acc (acc = 0: r = in), restricted to the blocks of `colour` (-1: all).
  auto residual = [&](bool first, int colour) {
    r_.copy_from(in);
    if (!first) {
      full_->apply(ar_, acc_);
      blas::caxpby(blas::Cplx(-1), ar_, blas::Cplx(1), r_);
    }
    if (colour < 0 || on_chip_) return;  // on chip, the block solver leaves the other colour alone
    dispatch_precision(r_.precision(), [&](auto s) {
      using S = decltype(s);
      for (int b = 0; b < r_.n_parity(); ++b)
        launch(r_.backend(), ColourMaskKernel<S, 24>{g, arr<S, 24>(r_, b), r_.block_parity(b), colour},
               {r_.lattice().volume_cb()}, compute_stream(), false);
    });
  };
  const std::vector<int> colours =
      param_.type == SchwarzType::additive ? std::vector<int>{-1} : std::vector<int>{0, 1};
  acc_.zero();
  bool first = true;
  for (int cycle = 0; cycle < cycles; ++cycle) {
    for (int colour : colours) {
      residual(first, colour);
      block_mr(colour);
      blas::caxpby(omega, x_, blas::Cplx(1), acc_);
      first = false;
    }
  }
  out.copy_from(acc_);
}

void SchwarzPreconditioner::apply_boundary_sap(ColorSpinorField& out, const ColorSpinorField& in, int cycles) {
  // The residual of M x = (A_pp in, 0) at x = 0, as (s_p, R_q) = (in, 0): the symmetric Schur
  // complement's preconditioned system is the even part of that one.
  // r_q is not read before the first boundary update writes it, acc_ not before each colour's
  // first step writes its blocks.
  r_.copy_from(in);
  for (int cycle = 0; cycle < cycles; ++cycle)
    for (int colour = 0; colour < 2; ++colour) {
      const bool first = cycle == 0 && colour == 0, last = cycle == cycles - 1 && colour == 1;
      local_->sap_step(r_, *r_q_, acc_, *dx_[colour], param_.iterations, colour, param_.omega, first, cycle == 0,
                       half_pairs_);
      local_applications_ += param_.iterations;
      if (last) break;  // the residual after the last colour is not needed
      const LogScope log(LogEvent::schwarz_boundary);
      full_->sap_boundary(r_, *r_q_, *dx_[colour], param_.block, colour);
    }
  out.copy_from(acc_);
}

std::string SchwarzPreconditioner::describe() const {
  std::ostringstream s;
  s << to_string(param_.type) << " Schwarz, blocks " << param_.block[0] << "x" << param_.block[1] << "x"
    << param_.block[2] << "x" << param_.block[3] << " (" << n_blocks_ << " per rank), " << param_.cycles
    << (param_.cycles == 1 ? " cycle, " : " cycles, ") << param_.iterations << " MR steps " << block_solves()
    << (boundary_update_ ? ", residual updated across block boundaries" : "") << ", " << to_string(param_.precision)
    << " precision, omega " << param_.omega << "; block operator: " << local_->describe();
  return s.str();
}

}  // namespace latke
