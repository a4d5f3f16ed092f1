// The Wilson-clover operator as a PETSc MATSHELL (MatCreateLatkeWilsonClover in latke.h):
// parameters from the caller and the options database, and the forms a matrix can take.
#include <cmath>
#include <sstream>

#include "src/core/error.h"
#include "src/core/options.h"
#include "petsc/mat_shell.h"
#include "petsc/option_help.h"
#include "operators/wilson_clover/wilson_clover.h"
#include "operators/wilson_clover/wilson_clover_linear.h"

namespace latke::petsc {

namespace {

struct Settings {
  WilsonCloverParam param;
  SchurType schur = SchurType::symmetric;
  int parity = 0;
  bool auto_reconstruct = false;  ///< links: 12 reals on the GPU when they are SU(3), else 18 (with_links)
};

Settings resolve(const LatkeWilsonCloverParams& in, MPI_Comm comm, const std::string& prefix, Backend backend) {
  Settings s;
  WilsonCloverParam& p = s.param;
  p.backend = backend;
  require(in.kappa >= 0, "kappa ", in.kappa, ": expected a positive number, or 0 to use the mass");
  p.normalisation = in.kappa > 0 ? Normalisation::kappa : Normalisation::mass;
  p.mass = in.kappa > 0 ? mass_from_kappa(in.kappa) : in.mass;
  p.csw = in.csw;
  require(in.schur == LATKE_SCHUR_SYMMETRIC || in.schur == LATKE_SCHUR_ASYMMETRIC, "Schur type ",
          static_cast<int>(in.schur), ": expected LATKE_SCHUR_SYMMETRIC or LATKE_SCHUR_ASYMMETRIC");
  s.schur = in.schur == LATKE_SCHUR_SYMMETRIC ? SchurType::symmetric : SchurType::asymmetric;
  require(in.parity == 0 || in.parity == 1, "parity ", in.parity, ": expected 0 (even) or 1 (odd)");
  s.parity = static_cast<int>(in.parity);
  p.precision = precision_of(in.precision);
  require(in.reconstruct == 18 || in.reconstruct == 12 || in.reconstruct == 0, "reconstruct ", in.reconstruct,
          ": expected 18, 12 or 0 (automatic)");
  p.reconstruct = in.reconstruct == 12 ? Reconstruct::r12 : Reconstruct::r18;

  double mass = 0, kappa = 0, csw = p.csw;
  bool mass_given = false, kappa_given = false;
  std::string schur, parity, precision, reconstruct;
  std::vector<double> boundary, twist;
  read_options(comm, prefix, "Latke Wilson-clover operator options", [&](OptionGroup& o) {
    mass = o.real("-latke_mass", p.mass, "Bare quark mass m: M = (4 + m) - D/2 + C_sw");
    kappa = o.real("-latke_kappa", in.kappa, "Hopping parameter kappa = 1/(2m + 8), instead of -latke_mass");
    csw = o.real("-latke_csw", p.csw, "Clover coefficient c_sw (1: tree-level improvement)");
    boundary = o.reals("-latke_boundary", {}, "Boundary signs x,y,z,t, each 1 or -1 (default 1,1,1,-1)", 4);
    twist = o.reals("-latke_twist", {}, "Extra boundary phases exp(i pi a) for a,b,c,d (default 0,0,0,0)", 4);
    schur = o.choice("-latke_schur", to_string(s.schur), {"symmetric", "asymmetric"}, "Even-odd form");
    parity =
        o.choice("-latke_parity", s.parity == 0 ? "even" : "odd", {"even", "odd"}, "Parity of the even-odd system");
    precision = o.choice("-latke_precision", to_string(p.precision), {"double", "single", "half"},
                         "Storage of the operator's fields");
    reconstruct =
        o.choice("-latke_reconstruct", in.reconstruct == 0 ? "auto" : to_string(p.reconstruct), {"auto", "18", "12"},
                 "Gauge link storage: 18 or 12 reals, or auto (12 on the GPU when the links are SU(3))");
    p.half_pairs = o.flag("-latke_half_pairs", p.half_pairs,
                          "Sets in half precision (the multigrid's fine smoother and setup): hopping sums and "
                          "A^-1 in FP16 pair arithmetic, two fields per instruction (good to about 1e-3)");
    mass_given = o.given("-latke_mass");
    kappa_given = o.given("-latke_kappa");
  });
  require(!(mass_given && kappa_given), "-", prefix, "latke_mass ", mass, " and -", prefix, "latke_kappa ", kappa,
          " are both given: give one of them (kappa = 1/(2m + 8))");
  if (mass_given) {
    p.normalisation = Normalisation::mass;
    p.mass = mass;
  } else if (kappa_given) {
    require(kappa > 0, "-", prefix, "latke_kappa ", kappa, ": expected a positive number");
    p.normalisation = Normalisation::kappa;
    p.mass = mass_from_kappa(kappa);
  }
  p.csw = csw;
  require(std::isfinite(p.mass) && std::isfinite(p.csw), "mass ", p.mass, " and c_sw ", p.csw,
          ": expected finite numbers");
  p.boundary_phase = boundary_phases(in.boundary_phase, boundary, twist, prefix);
  s.schur = parse_schur_type(schur);
  require(parity == "even" || parity == "odd", "-", prefix, "latke_parity '", parity, "': expected even or odd");
  s.parity = parity == "even" ? 0 : 1;
  p.precision = parse_precision(precision);
  s.auto_reconstruct = reconstruct == "auto";
  if (!s.auto_reconstruct) p.reconstruct = parse_reconstruct(reconstruct);
  return s;
}

/// The settings for these links: an automatic link storage becomes 12 reals on the GPU when
/// every link is SU(3) to 1e-6 (the third row is rebuilt from the first two: fewer bytes per
/// site for a memory-bound kernel; docs/performance.md), else 18 (on
/// the CPU, where rebuilding costs more than it saves, and for links that are not SU(3), e.g.
/// tadpole-scaled ones).
Settings with_links(Settings s, const LatkeGaugeData& g) {
  if (!s.auto_reconstruct) return s;
  s.param.reconstruct = Reconstruct::r18;
  if (s.param.backend != Backend::cuda) return s;
  if (g.su3_deviation < 0) {
    const double dev = su3_deviation(g.links);
    MPI_Allreduce(&dev, &g.su3_deviation, 1, MPI_DOUBLE, MPI_MAX, g.lattice->comm());
  }
  if (g.su3_deviation <= 1e-6) s.param.reconstruct = Reconstruct::r12;
  return s;
}

class WilsonCloverShell final : public StoredShell {
 public:
  WilsonCloverShell(std::shared_ptr<const LatkeGaugeData> gauge, const Settings& s)
      : StoredShell({"LatkeWilsonClover", 4, 3, s.param.backend}, gauge->lattice, s.parity, s.param.precision),
        gauge_(gauge),
        op_(std::make_shared<WilsonCloverOperator>(gauge->lattice, gauge->links, s.param)),
        schur_(s.schur),
        auto_reconstruct_(s.auto_reconstruct),
        settings_(s) {}

  void apply_stored(LatkeOperatorForm form, ColorSpinorField& out, const ColorSpinorField& in, bool dagger) override {
    if (form == LATKE_OPERATOR_FULL)
      op_->apply(out, in, dagger);
    else
      op_->apply_schur(out, in, schur_, dagger);
  }
  void prepare_stored(ColorSpinorField& bhat, const ColorSpinorField& b) override {
    op_->prepare_source(bhat, b, schur_);
  }
  std::array<Complex<double>, 4> boundary_phases() const override { return op_->param().boundary_phase; }
  void reconstruct_stored(ColorSpinorField& x, const ColorSpinorField& xhat, const ColorSpinorField& b) override {
    op_->reconstruct(x, xhat, b);
  }
  /// Mhat_asym = S, the Schur complement, and S^-1 = [M^-1]_pp; Mhat_sym = A_pp^-1 S, so
  /// Mhat_sym^-1 r = [M^-1]_pp A_pp r: the full right-hand side is (r, 0) or (A_pp r, 0).
  const ColorSpinorField& schur_rhs_parity(ColorSpinorField& scratch, const ColorSpinorField& r_p) override {
    require(r_p.n_parity() == 1 && r_p.block_parity(0) == parity_ && scratch.is_like(r_p),
            "schur_rhs_parity: expected two fields of parity ", parity_, " in one precision");
    if (schur_ == SchurType::asymmetric) return r_p;
    auto lin = std::dynamic_pointer_cast<WilsonCloverLinear>(
        linear_operator(LATKE_OPERATOR_FULL, r_p.precision(), Coords{0, 0, 0, 0}));
    lin->op().clover(scratch, r_p, false);
    return scratch;
  }

  /// gamma_5 for M and the asymmetric Schur complement S, which are gamma_5-Hermitian; gamma_5 A_pp
  /// for the symmetric Mhat = A_pp^-1 S, whose adjoint is S A_pp^-1 = gamma_5 A_pp Mhat A_pp^-1
  /// gamma_5 (the clover term commutes with gamma_5).
  void hermiticity(LatkeOperatorForm form, ColorSpinorField& out, const ColorSpinorField& in, bool inverse) override {
    if (form == LATKE_OPERATOR_FULL || schur_ == SchurType::asymmetric) {
      apply_gamma5(out, in);
      return;
    }
    require(in.n_parity() == 1 && in.block_parity(0) == parity_ && out.is_like(in),
            "hermiticity: expected two fields of parity ", parity_, " in one precision");
    auto lin = std::dynamic_pointer_cast<WilsonCloverLinear>(
        linear_operator(LATKE_OPERATOR_FULL, in.precision(), Coords{0, 0, 0, 0}));
    lin->op().clover(out, in, inverse);
    apply_gamma5(out, out);
  }

  bool has_diagonal(LatkeOperatorForm form) const override { return form == LATKE_OPERATOR_FULL; }

  /// Built anew from the links (the clover term too): converting single or half fields to
  /// double would keep their rounding.
  std::shared_ptr<ShellOperator> in_double() const override {
    if (op_->param().precision == Precision::double_) return nullptr;
    Settings s = settings_;
    s.param.precision = Precision::double_;
    return std::make_shared<WilsonCloverShell>(gauge_, s);
  }

  /// The hopping term has no diagonal, so diag M = diag A: A applied to each unit
  /// spin-color vector, read back at that component.
  void diagonal(LatkeOperatorForm form, ColorSpinorField& d) override {
    require(has_diagonal(form), "the diagonal of the even-odd Wilson-clover operator is not available");
    const std::size_t vol = static_cast<std::size_t>(lattice_->volume());
    std::vector<Complex<double>> unit(vol * 12), result, diag(vol * 12);
    ColorSpinorField e = d.like(op_->param().precision), ae = e.like(op_->param().precision);
    for (int k = 0; k < 12; ++k) {
      for (std::size_t s = 0; s < vol; ++s)
        for (int j = 0; j < 12; ++j) unit[s * 12 + j] = Complex<double>(j == k ? 1.0 : 0.0);
      e.from_lexicographic(unit);
      op_->clover(ae, e, false);
      ae.to_lexicographic(result);
      for (std::size_t s = 0; s < vol; ++s) diag[s * 12 + k] = result[s * 12 + k];
    }
    d.from_lexicographic(diag);
  }

  std::unique_ptr<LinearOperator> make_linear_operator(LatkeOperatorForm form, Precision p,
                                                       const Coords& block) override {
    const bool blocked = block[0] > 0;
    std::shared_ptr<WilsonCloverOperator> op = op_;
    if (p != op_->param().precision || blocked) {
      WilsonCloverParam q = op_->param();
      q.precision = p;
      if (blocked) q.block = block;
      op = std::make_shared<WilsonCloverOperator>(*op_, gauge_->links, q);  // A, A^-1 converted from op_'s
    }
    return std::make_unique<WilsonCloverLinear>(op, form == LATKE_OPERATOR_EVEN_ODD, schur_, parity_);
  }

  double flops(LatkeOperatorForm form) const override {
    const double vcb = static_cast<double>(lattice_->volume_cb()) * lattice_->size();
    return form == LATKE_OPERATOR_FULL ? 2 * vcb * (1320 + 504 + 48) : vcb * (2 * (1320 + 504) + 48);
  }

  // Full: the site and its 8 neighbours; Schur complement: every displacement of two hops
  // (0 in 8 ways, 2 mu in 8, mu +- nu in 24).
  int coupled_sites(LatkeOperatorForm form) const override { return form == LATKE_OPERATOR_FULL ? 9 : 33; }
  std::size_t bytes() const override { return op_->bytes(); }

  std::string describe(LatkeOperatorForm form) const override {
    const WilsonCloverParam& p = op_->param();
    std::ostringstream s;
    if (form == LATKE_OPERATOR_FULL)
      s << "Wilson-clover operator M = (4 + m) - D/2 + C_sw on the full lattice";
    else
      s << "Wilson-clover even-odd operator, " << to_string(schur_) << " Schur complement on the "
        << (parity_ == 0 ? "even" : "odd") << " sites";
    s << "\nmass m = " << p.mass << " (kappa = " << op_->kappa() << "), "
      << (p.normalisation == Normalisation::kappa ? "kappa normalisation (2 kappa M)" : "mass normalisation")
      << ", c_sw = " << p.csw;
    s << "\nboundary phases";
    for (int mu = 0; mu < 4; ++mu) s << (mu ? ", " : " ") << "(" << p.boundary_phase[mu].re << "," << p.boundary_phase[mu].im << ")";
    s << "\noperator fields in " << to_string(p.precision) << " precision, links " << to_string(p.reconstruct)
      << " reals" << (auto_reconstruct_ ? " (auto)" : "") << ", " << op_->bytes() / 1048576.0
      << " MiB per rank; vectors in double";
    if (p.half_pairs) s << "\nsets in half precision: hopping sums and A^-1 in FP16 pair arithmetic (-latke_half_pairs)";
    s << "\ngauge: " << gauge_->description;
    s << "\nhalo: " << op_->halo_description();
    return s.str();
  }

 private:
  std::shared_ptr<const LatkeGaugeData> gauge_;  ///< host links, for operators in other precisions
  std::shared_ptr<WilsonCloverOperator> op_;
  SchurType schur_;
  bool auto_reconstruct_;
  Settings settings_;  ///< as resolved for these links
};

}  // namespace

void wilson_clover_options_help(MPI_Comm comm, const char* prefix) {
  LatkeWilsonCloverParams in;
  (void)LatkeWilsonCloverParamsDefault(&in);  // fills the struct
  read_for_help([&] { (void)resolve(in, comm, prefix ? prefix : "", Backend::cpu); });
}

}  // namespace latke::petsc

using namespace latke;
using namespace latke::petsc;

extern "C" {

PetscErrorCode LatkeWilsonCloverParamsDefault(LatkeWilsonCloverParams* params) {
  PetscFunctionBeginUser;
  LatkeCheckNull(params);
  params->mass = 0.1;
  params->kappa = 0;
  params->csw = 1.0;
  for (int mu = 0; mu < 3; ++mu) params->boundary_phase[mu] = 1.0;
  params->boundary_phase[3] = -1.0;
  params->schur = LATKE_SCHUR_SYMMETRIC;
  params->parity = 0;
  params->precision = LATKE_PRECISION_DOUBLE;
  params->reconstruct = 0;
  PetscFunctionReturn(0);
}

PetscErrorCode MatCreateLatkeWilsonClover(LatkeGauge gauge, LatkeOperatorForm form, const LatkeWilsonCloverParams* params,
                                          const char prefix[], Mat* A) {
  LatkeWilsonCloverParams defaults;
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  PetscCheck(gauge && gauge->data, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "MatCreateLatkeWilsonClover: the gauge is NULL");
  PetscCall(LatkeWilsonCloverParamsDefault(&defaults));
  const MPI_Comm comm = gauge->data->lattice->comm();
  PetscCall(guarded(comm, [&] {
    const Settings s =
        with_links(resolve(params ? *params : defaults, comm, prefix ? prefix : "", run_backend()), *gauge->data);
    *A = create_shell(std::make_shared<WilsonCloverShell>(gauge->data, s), form, prefix);
  }));
  PetscFunctionReturn(0);
}

}  // extern "C"
