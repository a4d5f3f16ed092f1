// The coarse-grid operator (coarse_operator.h): block storage, assembly by columns, half
// copies, and the LinearOperator view (CoarseLinear). The stencil: coarse_stencil.cpp; the
// even-odd factorisation: coarse_even_odd.cpp. Compiled by nvcc in CUDA builds.
#include "operators/coarse/coarse_operator.h"

#include <mpi.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>
#include <vector>

#include "operators/coarse/coarse_blocks.h"
#include "operators/coarse/probe_classes.h"
#include "src/core/error.h"
#include "src/core/indexing.h"
#include "src/core/launch.h"
#include "src/core/sites_on_domain.h"

namespace latke::mg {

namespace {

template <typename SA, typename SV>
struct SetColumnKernel {
  BlockView<SA> blocks;
  RealArray<SV> values;
  LocalGeometry geom;
  int parity, d, col, cls, n;
  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    const int row = idx % n, x = idx / n;
    int c[4];
    geom.coords(x, parity, c);
    if (!in_probe_class(c, parity, cls)) return;
    blocks.set(blocks.block(parity, x, d), col, row,
               Complex<double>(values.template get<double>(2 * row, x), values.template get<double>(2 * row + 1, x)));
  }
};

/// Half storage of one block: the scale is its largest |re| or |im|.
template <typename SA>
struct ToHalfKernel {
  BlockView<SA> in;
  BlockView<short> out;
  LATKE_HOST_DEVICE void operator()(int blk, int) const {
    const long nn = static_cast<long>(in.n) * in.n;
    const SA* src = in.data + 2 * blk * nn;
    double m = 0;
    for (long i = 0; i < 2 * nn; ++i) m = fmax(m, fabs(static_cast<double>(src[i])));
    out.scale[blk] = static_cast<float>(m);
    const double inv = m > 0 ? fixed_max / m : 0;
    for (long i = 0; i < 2 * nn; ++i) out.data[2 * blk * nn + i] = to_fixed(static_cast<float>(src[i] * inv));
  }
};

/// LATKE_COARSE_SPLIT (the most column segments, by the rule; 1 turns the split off), else 8,
/// tuned (0: unset).
int env_split_most() {
  static const int most = [] {
    const char* v = std::getenv("LATKE_COARSE_SPLIT");
    if (!v || !*v) return 0;
    char* end = nullptr;
    const long m = std::strtol(v, &end, 10);
    require(*end == '\0' && m >= 1 && m <= 64, "LATKE_COARSE_SPLIT '", v,
            "': expected a count of column segments from 1 to 64");
    return static_cast<int>(m);
  }();
  return most;
}

}  // namespace

CoarseOperator::CoarseOperator(std::shared_ptr<const Lattice> lattice, int nvec, Precision precision, Backend backend)
    : lattice_(std::move(lattice)), nvec_(nvec), precision_(precision), backend_(backend) {
  require(nvec >= 1, "coarse operator with ", nvec, " colors per chirality: expected at least 1");
  set_math(SetMath::automatic);
  split_most_ = env_split_most() > 0 ? env_split_most() : 8;
  split_tune_ = env_split_most() == 0;
  assembly_precision_ = precision == Precision::double_ ? Precision::double_ : Precision::single;
  const std::size_t bytes =
      static_cast<std::size_t>(lattice_->volume()) * n_blocks * n() * n() * 2 * real_bytes(assembly_precision_);
  assembly_.data = Buffer(memory_for(backend), bytes);
  zero_bytes(assembly_.data.data(), bytes, memory_for(backend), compute_stream());
}

CoarseOperator::CoarseOperator(std::shared_ptr<const Lattice> lattice, int nvec, Precision precision, Backend backend,
                               Unassembled)
    : lattice_(std::move(lattice)), nvec_(nvec), precision_(precision), backend_(backend) {
  set_math(SetMath::automatic);
  split_most_ = env_split_most() > 0 ? env_split_most() : 8;
  split_tune_ = env_split_most() == 0;
  assembly_precision_ = precision == Precision::double_ ? Precision::double_ : Precision::single;
}

CoarseOperator::~CoarseOperator() = default;

std::shared_ptr<CoarseOperator> CoarseOperator::in_half(bool schur_only) const {
  require(assembly_.data.data() == nullptr, "coarse operator: converted to half before finalize");
  require(precision_ != Precision::half, "coarse operator: converted to half, but its blocks are half already");
  require(even_odd_ || !schur_only, "coarse operator: its even-odd blocks copied to half, but it has none");
  std::shared_ptr<CoarseOperator> h(new CoarseOperator(lattice_, nvec_, Precision::half, backend_, Unassembled{}));
  h->even_odd_ = even_odd_;
  h->split_most_ = split_most_;
  h->split_tune_ = split_tune_;
  if (!schur_only) h->links_ = half_copy(links_, precision_);
  if (even_odd_) h->hat_ = half_copy(hat_, precision_);
  synchronize(backend_);
  return h;
}

std::shared_ptr<CoarseOperator> CoarseOperator::gathered(std::shared_ptr<const Lattice> onto, MPI_Comm group) const {
  require(assembly_.data.data() != nullptr, "coarse operator: gathered after finalize");
  require(onto->global() == lattice_->global() && onto->size() <= lattice_->size(), "coarse operator: gathered onto ",
          onto->describe(), "; expected ", lattice_->describe(), " on fewer ranks");
  auto g = std::make_shared<CoarseOperator>(onto, nvec_, precision_, backend_);
  g->split_most_ = split_most_;
  g->split_tune_ = split_tune_;
  int ranks = 1;
  MPI_Comm_size(group, &ranks);
  // A site's nine blocks lie together ([parity][x_cb][d]): gathered and placed a site at a time.
  const std::size_t site_bytes = static_cast<std::size_t>(n_blocks) * n() * n() * 2 * real_bytes(assembly_precision_);
  const std::size_t mine = assembly_.data.bytes();
  require(mine <= static_cast<std::size_t>(std::numeric_limits<int>::max()), "coarse operator: ", mine,
          " bytes of blocks per rank are too many to gather (at most 2 GiB)");
  require(mine * ranks == g->assembly_.data.bytes(), "coarse operator: the ", ranks, " gathered parts of ",
          lattice_->describe(), " do not make up a part of ", onto->describe());
  std::vector<unsigned char> local(mine), all(mine * ranks), placed(g->assembly_.data.bytes());
  copy_bytes(local.data(), assembly_.data.data(), mine, compute_stream());
  synchronize(compute_stream());
  const std::vector<int> site = sites_on_domain(*lattice_, *onto, group);  // collective over the group
  const int rc = MPI_Allgather(local.data(), static_cast<int>(mine), MPI_BYTE, all.data(), static_cast<int>(mine),
                               MPI_BYTE, group);
  require(rc == MPI_SUCCESS, "coarse operator: gathering the blocks failed (MPI_Allgather code ", rc, ")");
  const int vcb = lattice_->volume_cb(), wcb = onto->volume_cb();
  for (int r = 0; r < ranks; ++r)
    for (int p = 0; p < 2; ++p)
      for (int x = 0; x < vcb; ++x) {
        const std::size_t from = (static_cast<std::size_t>(r) * 2 + p) * vcb + x;  // rank r's blocks lie in that order
        std::memcpy(placed.data() + (static_cast<std::size_t>(p) * wcb + site[from]) * site_bytes,
                    all.data() + from * site_bytes, site_bytes);
      }
  copy_bytes(g->assembly_.data.data(), placed.data(), placed.size(), compute_stream());
  synchronize(compute_stream());
  return g;
}

CoarseOperator::Links CoarseOperator::half_copy(const Links& src, Precision from) const {
  const int vcb = lattice_->volume_cb();
  const std::size_t blocks = static_cast<std::size_t>(lattice_->volume()) * n_blocks;
  const MemoryKind mk = memory_for(backend_);
  Links dst;
  dst.data = Buffer(mk, blocks * n() * n() * 2 * sizeof(short));
  dst.scale = Buffer(mk, blocks * sizeof(float));
  const BlockView<short> out = view<short>(dst.data, dst.scale, n(), vcb);
  dispatch_precision(from, [&](auto sa) {
    using SA = decltype(sa);
    require(sizeof(SA) != 2, "coarse operator: half blocks copied to half");
    if constexpr (sizeof(SA) != 2)
      launch(backend_, ToHalfKernel<SA>{view<SA>(src.data, src.scale, n(), vcb), out}, {static_cast<int>(blocks)},
             compute_stream(), false);
  });
  return dst;
}

SpinorParam CoarseOperator::field_param(Precision p, Subset subset) const {
  return SpinorParam{2, nvec_, p, subset, backend_};
}

void CoarseOperator::set_column(int d, int col, const ColorSpinorField& values, int target) {
  require(assembly_.data.data() != nullptr, "coarse operator: set_column after finalize");
  require_field(values, "set_column", true);
  dispatch_precision(assembly_precision_, [&](auto sa) {
    using SA = decltype(sa);
    if constexpr (sizeof(SA) != 2) {
      dispatch_vector(values.precision(), [&](auto sv) {
        using SV = decltype(sv);
        for (int p = 0; p < 2; ++p)
          launch(
              backend_,
              SetColumnKernel<SA, SV>{view<SA>(assembly_.data, assembly_.scale, n(), lattice_->volume_cb()),
                                      real_array<SV>(values, p), LocalGeometry::of(*lattice_), p, d, col, target, n()},
              {lattice_->volume_cb() * n()}, compute_stream(), false);
      });
    }
  });
}

void CoarseOperator::require_field(const ColorSpinorField& f, const char* what, bool full) const {
  require(f.nspin() == 2 && f.ncolor() == nvec_ && f.lattice().volume_cb() == lattice_->volume_cb() &&
              f.backend() == backend_ && (f.n_parity() == 2) == full,
          "coarse operator (", what, "): expected a ", full ? "full" : "one-parity", " field of 2 x ", nvec_,
          " components on the coarse lattice, got ", f.nspin(), " x ", f.ncolor(),
          f.n_parity() == 2 ? " (full)" : " (one parity)");
}

void* PartsScratch::get(std::size_t bytes) const {
  if (buffer->bytes() < bytes) *buffer = Buffer(memory_for(backend), bytes);
  return buffer->data();
}

void CoarseOperator::set_column_split(int most, bool tune) {
  require(most >= 1, "coarse operator: at most ", most, " column segments; expected at least 1");
  split_most_ = most;
  split_tune_ = tune;
}

ColorSpinorField& CoarseOperator::scratch(int slot, Precision p, Subset subset) {
  std::unique_ptr<ColorSpinorField>& f = scratch_[slot][static_cast<int>(subset)];
  if (!f) f = std::make_unique<ColorSpinorField>(lattice_, field_param(p, subset));
  return *f;
}

double CoarseOperator::flops(bool schur) const {
  const double per_block = 8.0 * n() * n();
  const double vcb = lattice_->volume_cb();
  return schur ? vcb * 2 * 8 * per_block : 2 * vcb * n_blocks * per_block;
}

std::size_t CoarseOperator::bytes() const {
  std::size_t n = 0;
  for (const Buffer* b : {&links_.data, &links_.scale, &hat_.data, &hat_.scale, &assembly_.data})
    if (b->data()) n += b->bytes();  // a buffer moved from keeps its size but holds nothing
  return n;
}

std::string CoarseOperator::halo_description() const {
  for (const auto& h : halo_)
    if (h) return h->describe();
  return lattice_->size() > 1 ? "not used yet" : "none (one rank)";
}

CoarseLinear::CoarseLinear(std::shared_ptr<CoarseOperator> op, bool even_odd, int parity, Precision vectors)
    : op_(std::move(op)), even_odd_(even_odd), parity_(parity), vectors_(vectors) {
  require(!even_odd || op_->even_odd(), "coarse operator: the even-odd form was not prepared");
}

void CoarseLinear::apply(ColorSpinorField& out, const ColorSpinorField& in, bool dagger) {
  if (even_odd_) {
    require(!dagger, "coarse even-odd operator: the dagger is not implemented (use the full coarse operator)");
    op_->apply_schur(out, in);
  } else {
    op_->apply(out, in, dagger);
  }
}

namespace {
/// Whether sets go through the coarse operator's one-pass set forms: more than one field, each
/// a set of single-precision fields made by make_set.
bool one_pass(std::initializer_list<const std::vector<ColorSpinorField>*> sets) {
  for (const auto* s : sets)
    if (s->size() < 2 || !is_set(*s) || (*s)[0].precision() != Precision::single) return false;
  return true;
}
}  // namespace

void CoarseLinear::prepare_set(std::vector<ColorSpinorField>& bhat, const std::vector<ColorSpinorField>& b) {
  if (one_pass({&bhat, &b}) && bhat.size() == b.size())
    op_->prepare_source_set(bhat, b);
  else
    SchurOperator::prepare_set(bhat, b);
}

void CoarseLinear::reconstruct_set(std::vector<ColorSpinorField>& x, const std::vector<ColorSpinorField>& x_p,
                                   const std::vector<ColorSpinorField>& b) {
  if (one_pass({&x, &x_p, &b}) && x.size() == b.size() && x_p.size() == b.size())
    op_->reconstruct_set(x, x_p, b);
  else
    SchurOperator::reconstruct_set(x, x_p, b);
}

void CoarseLinear::apply_split(ColorSpinorField& site, ColorSpinorField* const faces[4], const ColorSpinorField& in,
                               const Coords& block) {
  require(splits(), "apply_split: the even-odd coarse operator cannot split its stencil (expected the full one)");
  require(in.precision() == vectors_, "coarse operator (apply_split): vectors in ", to_string(in.precision()),
          ", expected ", to_string(vectors_));
  op_->apply_split(site, faces, in, block);
}

SpinorParam CoarseLinear::field_param() const {
  return op_->field_param(vectors_, even_odd_ ? (parity_ == 0 ? Subset::even : Subset::odd) : Subset::full);
}

std::string CoarseLinear::describe() const {
  std::ostringstream s;
  s << "coarse operator " << op_->lattice()->global()[0] << "x" << op_->lattice()->global()[1] << "x"
    << op_->lattice()->global()[2] << "x" << op_->lattice()->global()[3] << ", " << op_->n() << " components per site, "
    << (even_odd_ ? "even-odd" : "full") << ", blocks in " << to_string(op_->precision()) << ", vectors in "
    << to_string(vectors_);
  return s.str();
}

}  // namespace latke::mg
