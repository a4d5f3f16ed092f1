// One level of the multigrid hierarchy (Multigrid::Level): its operators, transfer, smoother
// fields and counters, and the cycle seen as a preconditioner. Private to the multigrid's
// implementation files (mg.cpp, mg_setup.cpp, mg_cycle.cpp, null_space_file.cpp).
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "operators/coarse/coarse_operator.h"
#include "operators/coarse/dense_inverse.h"
#include "preconditioners/mg/agglomerate.h"
#include "preconditioners/mg/mg.h"
#include "preconditioners/mg/transfer.h"
#include "src/core/memory.h"
#include "src/core/stream_graph.h"
#include "src/fields/blas.h"

namespace latke::mg {

/// The cycle from level l as a preconditioner (K-cycle GCR, setup refinement).
class LevelPreconditioner final : public Preconditioner {
 public:
  LevelPreconditioner(std::function<void(ColorSpinorField&, const ColorSpinorField&)> f, std::string what)
      : f_(std::move(f)), what_(std::move(what)) {}
  void apply(ColorSpinorField& out, const ColorSpinorField& in) override { f_(out, in); }
  std::string describe() const override { return what_; }

 private:
  std::function<void(ColorSpinorField&, const ColorSpinorField&)> f_;
  std::string what_;
};

struct Multigrid::Level {
  std::shared_ptr<LinearOperator> op;                ///< M_l, full, single vectors
  std::shared_ptr<CoarseOperator> coarse;            ///< behind op on coarse levels
  std::shared_ptr<CoarseOperator> coarse_low;        ///< behind schur_low on coarse levels (even-odd blocks in half)
  std::shared_ptr<SchurOperator> schur;              ///< even-odd form (smoothing; the coarsest solve)
  std::unique_ptr<ColorSpinorField> hb, hx, hr,
      ha;  ///< even-odd smoothing: x_p (cycle, apply_parity), xhat, MR r, M r (ha: not with schur_low)
  std::shared_ptr<SchurOperator> schur_low;          ///< the even-odd form in a lower smoother precision (level 0:
                                                     ///< half vectors and operator; coarse: half blocks)
  std::shared_ptr<LinearOperator> setup_low;         ///< M_l (or Mhat_l) in a lower precision for the setup
  std::unique_ptr<ColorSpinorField> lx, lr, la;      ///< its MR x, r, M r
  std::unique_ptr<Transfer> transfer;                ///< to level l + 1
  std::unique_ptr<SchwarzPreconditioner> schwarz;
  /// The Schwarz smoother works on the even-odd system (the level smooths there): its blocks are
  /// Mhat's, solved on chip where they fit; wx, wr, wa: its x_p, residual and Mhat x_p.
  bool schwarz_even_odd = false;
  std::unique_ptr<ColorSpinorField> wx, wr, wa;
  std::unique_ptr<DenseInverse> direct;                     ///< coarsest level solved directly
  /// An agglomerated level: gathered from its parts on the ranks of the level above (whose
  /// transfer restricts into part_b and prolongates from part_x, fields of the part lattice).
  std::unique_ptr<Agglomeration> gather;
  std::unique_ptr<ColorSpinorField> part_b, part_x;
  std::unique_ptr<ColorSpinorField> x, b, r, t, e, sr, sa;  ///< x, b: this level's solve
  // GCR workspace for solves on this level (K-cycle or coarsest): full or one parity.
  std::unique_ptr<ColorSpinorField> bhat, xhat, gr;
  std::vector<ColorSpinorField> z, az;
  std::unique_ptr<GcrCycle> gcr;  ///< over z and az
  /// Where the MR steps of a level on one rank leave their sums (blas::cdot_norms_to), one per
  /// field of a set: backend memory, made at the first steps.
  Buffer mr_sums;
  blas::DotNormSum* mr_sums_on(Backend b) {
    if (!mr_sums.data()) mr_sums = Buffer(memory_for(b), blas::set_max * sizeof(blas::DotNormSum));
    return static_cast<blas::DotNormSum*>(mr_sums.data());
  }
  long smooth_steps = 0, solve_iterations = 0, solves = 0;
  /// The coarse correction below this level (Multigrid::coarse_correction) recorded as a CUDA
  /// graph, where every level below lives on one rank and queues no host synchronisation.
  struct CorrectionGraph {
    StreamGraph recording;
    int direct_runs = 0;   ///< before the first recording: they tune the kernels and make lazy buffers
    bool refused = false;  ///< a recording failed: run directly until the hierarchy changes
    long launches = 0;     ///< corrections launched as the graph, since the process started
    long recordings = 0;   ///< recordings made, since the process started
    long recent_launches = 0, recent_recordings = 0;  ///< since the hierarchy last changed
    /// What one correction adds to each level below's counters (smooth_steps, solves,
    /// solve_iterations), which a launch of the graph does not count itself.
    std::vector<std::array<long, 3>> adds;
  } graph;
  long parity_cycles = 0;  ///< level 0: cycles apply_parity ran on one parity
  long set_cycles = 0;     ///< level 0: of them, right-hand sides cycled in sets (apply_parity_set)
  double setup_seconds = 0;
  int setup_batch = 1;  ///< null vectors the last first-pass setup solved together
  int setup_restricted = 0;  ///< null vectors the first pass started from the level above's, restricted

  /// The cycle's fields for a set of right-hand sides (Multigrid::apply_parity_set), each a
  /// ColorSpinorField::make_set of `n` fields shaped as the single fields above: x, b, hb
  /// (coarse levels), bhat, xhat (a coarsest level solved directly), hx, hr, ha or lx, lr, la
  /// (even-odd smoothing), part_b, part_x (agglomerated). Made at the first set of n fields,
  /// kept while the sets keep that size.
  struct Sets {
    int n = 0;
    std::vector<ColorSpinorField> x, b, hb, bhat, xhat, hx, hr, ha, lx, lr, la, part_b, part_x;
  } sets;
  void allocate_sets(int n, bool fine) {
    if (sets.n == n) return;
    sets = Sets{};  // free the old sets first
    auto make = [&](std::vector<ColorSpinorField>& s, const ColorSpinorField* like) {
      if (like) s = ColorSpinorField::make_set(like->lattice_ptr(), like->param(), n);
    };
    if (!fine) {
      make(sets.x, x.get());
      make(sets.b, b.get());
      make(sets.hb, hb.get());
      if (direct) {  // the coarsest level's even-odd system, solved directly
        make(sets.bhat, bhat.get());
        make(sets.xhat, xhat.get());
      }
    }
    make(sets.hx, hx.get());
    make(sets.hr, hr.get());
    make(sets.ha, ha.get());
    make(sets.lx, lx.get());
    make(sets.lr, lr.get());
    make(sets.la, la.get());
    make(sets.part_b, part_b.get());
    make(sets.part_x, part_x.get());
    sets.n = n;
  }

  /// The level's operator on its even-odd system (eo) or on full fields, single vectors.
  LinearOperator& system(bool eo) const { return eo ? static_cast<LinearOperator&>(*schur) : *op; }

  void allocate(const SpinorParam& p) {
    const auto lat = op->lattice();
    for (auto* f : {&x, &b, &r, &t, &e, &sr, &sa}) f->reset(new ColorSpinorField(lat, p));
  }
  void allocate_even_odd() {
    const SpinorParam p = schur->field_param();
    for (auto* f : {&hb, &hx, &hr}) f->reset(new ColorSpinorField(op->lattice(), p));
    if (schur_low && schur_low->field_param().precision != p.precision)  // MR runs on lx, lr, la instead
      for (auto* f : {&lx, &lr, &la}) f->reset(new ColorSpinorField(op->lattice(), schur_low->field_param()));
    else
      ha = std::make_unique<ColorSpinorField>(op->lattice(), p);
  }
};

}  // namespace latke::mg
