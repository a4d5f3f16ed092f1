// The staggered operator as a PETSc MATSHELL (MatCreateLatkeStaggered in latke.h):
// parameters from the caller and the options database, and the two forms a matrix takes,
// M = 2m + D and the normal operator 4m^2 - D_pq D_qp (formulas in staggered.h).
#include "petsc/mat_staggered.h"

#include <cmath>
#include <functional>
#include <sstream>

#include "src/core/error.h"
#include "src/core/options.h"
#include "petsc/mat_shell.h"
#include "petsc/option_help.h"
#include "operators/staggered/staggered.h"
#include "operators/staggered/staggered_linear.h"

namespace latke::petsc {

namespace {

struct Settings {
  StaggeredParam param;
  int parity = 0;
};

Settings resolve(const LatkeStaggeredParams& in, MPI_Comm comm, const std::string& prefix, Backend backend) {
  Settings s;
  StaggeredParam& p = s.param;
  p.backend = backend;
  require(in.type == LATKE_STAGGERED_NAIVE || in.type == LATKE_STAGGERED_ASQTAD, "staggered type ",
          static_cast<int>(in.type), ": expected LATKE_STAGGERED_NAIVE or LATKE_STAGGERED_ASQTAD");
  require(in.parity == 0 || in.parity == 1, "parity ", in.parity, ": expected 0 (even) or 1 (odd)");
  require(in.reconstruct == 18 || in.reconstruct == 12, "reconstruct ", in.reconstruct, ": expected 18 or 12");
  const StaggeredType type = in.type == LATKE_STAGGERED_NAIVE ? StaggeredType::naive : StaggeredType::asqtad;
  const Reconstruct recon = in.reconstruct == 12 ? Reconstruct::r12 : Reconstruct::r18;

  std::string type_name, parity, precision, reconstruct;
  std::vector<double> boundary, twist;
  read_options(comm, prefix, "Latke staggered operator options", [&](OptionGroup& o) {
    p.mass = o.real("-latke_mass", in.mass, "Quark mass m: M = 2m + D (MILC's convention, D without 1/2), m >= 0");
    type_name = o.choice("-latke_staggered", to_string(type), {"naive", "asqtad"},
                         "Staggered operator: naive, or asqtad (fat7 + Lepage fat links and Naik long links)");
    p.u0 = o.real("-latke_u0", in.u0, "Tadpole factor u0 of asqtad fattening (a path of L links / u0^(L-1))");
    boundary = o.reals("-latke_boundary", {}, "Boundary signs x,y,z,t, each 1 or -1 (default 1,1,1,-1)", 4);
    twist = o.reals("-latke_twist", {}, "Extra boundary phases exp(i pi a) for a,b,c,d (default 0,0,0,0)", 4);
    parity = o.choice("-latke_parity", in.parity == 0 ? "even" : "odd", {"even", "odd"},
                      "Parity of the even-odd (normal) operator");
    precision = o.choice("-latke_precision", to_string(precision_of(in.precision)), {"double", "single", "half"},
                         "Storage of the operator's links");
    reconstruct = o.choice("-latke_reconstruct", to_string(recon), {"18", "12"},
                           "Link storage, 18 or 12 reals: naive links, or asqtad long links (fat links stay at 18)");
  });
  p.type = parse_staggered_type(type_name);
  require(std::isfinite(p.u0) && p.u0 > 0, "-", prefix, "latke_u0 ", p.u0, ": expected a positive number");
  p.boundary_phase = boundary_phases(in.boundary_phase, boundary, twist, prefix);
  require(parity == "even" || parity == "odd", "-", prefix, "latke_parity '", parity, "': expected even or odd");
  s.parity = parity == "even" ? 0 : 1;
  p.precision = parse_precision(precision);
  p.reconstruct = parse_reconstruct(reconstruct);
  return s;
}

class StaggeredShell final : public StoredShell {
 public:
  StaggeredShell(std::shared_ptr<const Lattice> lattice, std::shared_ptr<const StaggeredLinks> links,
                 std::unique_ptr<StaggeredOperator> op, const Settings& s, std::string links_description)
      : StoredShell({"LatkeStaggered", 1, 3, s.param.backend}, std::move(lattice), s.parity, s.param.precision),
        links_(std::move(links)),
        links_description_(std::move(links_description)),
        op_(std::move(op)) {}

  void apply_stored(LatkeOperatorForm form, ColorSpinorField& out, const ColorSpinorField& in, bool dagger) override {
    if (form == LATKE_OPERATOR_FULL)
      op_->apply(out, in, dagger);
    else
      op_->apply_normal(out, in);  // self-adjoint
  }

  void prepare_stored(ColorSpinorField& bhat, const ColorSpinorField& b) override { op_->prepare_source(bhat, b); }
  std::array<Complex<double>, 4> boundary_phases() const override { return op_->param().boundary_phase; }

  void reconstruct_stored(ColorSpinorField& x, const ColorSpinorField& xhat, const ColorSpinorField& b) override {
    op_->reconstruct(x, xhat, b);
  }

  bool has_diagonal(LatkeOperatorForm form) const override { return form == LATKE_OPERATOR_FULL; }

  /// D has no diagonal: diag M = 2m.
  void diagonal(LatkeOperatorForm form, ColorSpinorField& d) override {
    require(has_diagonal(form), "the diagonal of the staggered normal operator is not available");
    d.from_lexicographic(std::vector<Complex<double>>(static_cast<std::size_t>(lattice_->volume()) * 3,
                                                      Complex<double>(2.0 * op_->param().mass)));
  }

  const StaggeredParam& param() const { return op_->param(); }

  std::shared_ptr<ShellOperator> in_double() const override {
    if (op_->param().precision == Precision::double_) return nullptr;
    Settings s;
    s.param = op_->param();
    s.param.precision = Precision::double_;
    s.parity = parity_;
    return std::make_shared<StaggeredShell>(lattice_, links_, std::make_unique<StaggeredOperator>(lattice_, *links_, s.param),
                                            s, links_description_);
  }

  std::unique_ptr<LinearOperator> make_linear_operator(LatkeOperatorForm form, Precision p,
                                                       const Coords& block) override {
    require(block[0] == 0 && block[1] == 0 && block[2] == 0 && block[3] == 0,
            "the staggered operator has no domain-local (Schwarz block) form");
    std::shared_ptr<StaggeredOperator> op = op_;
    if (p != op_->param().precision) {
      StaggeredParam q = op_->param();
      q.precision = p;
      op = std::make_shared<StaggeredOperator>(lattice_, *links_, q);
    }
    return std::make_unique<StaggeredLinear>(op, form == LATKE_OPERATOR_EVEN_ODD, parity_);
  }

  double flops(LatkeOperatorForm form) const override {
    const double vcb = static_cast<double>(lattice_->volume_cb()) * lattice_->size();
    const double d = op_->dslash_flops_per_site();
    return form == LATKE_OPERATOR_FULL ? 2 * vcb * (d + 12) : vcb * (2 * d + 12);
  }

  // Naive: the site and its 8 neighbours (full), two hops (the normal operator: 33 sites);
  // asqtad: hops of 1 and 3 (full: 17), two of them (1 + 24 along one axis + 96 across two).
  int coupled_sites(LatkeOperatorForm form) const override {
    const bool naik = op_->param().type == StaggeredType::asqtad;
    if (form == LATKE_OPERATOR_FULL) return naik ? 17 : 9;
    return naik ? 121 : 33;
  }
  std::size_t bytes() const override { return op_->bytes(); }

  std::string describe(LatkeOperatorForm form) const override {
    const StaggeredParam& p = op_->param();
    std::ostringstream s;
    const char* kind = op_->improved() ? "asqtad staggered" : "naive staggered";
    if (form == LATKE_OPERATOR_FULL)
      s << kind << " operator M = 2m + D on the full lattice";
    else
      s << kind << " normal operator 4m^2 - D_pq D_qp on the " << (parity_ == 0 ? "even" : "odd")
        << " sites (Hermitian positive definite)";
    s << "\nmass m = " << p.mass;
    if (op_->improved()) s << ", " << links_description_;
    s << "\nboundary phases";
    for (int mu = 0; mu < 4; ++mu)
      s << (mu ? ", " : " ") << "(" << p.boundary_phase[mu].re << "," << p.boundary_phase[mu].im << ")";
    s << "\noperator links in " << to_string(p.precision) << " precision, ";
    if (op_->improved())
      s << "fat links 18 reals, long links " << to_string(p.reconstruct) << " reals";
    else
      s << "links " << to_string(p.reconstruct) << " reals";
    s << ", " << op_->bytes() / 1048576.0 << " MiB per rank; vectors in double";
    if (!op_->improved()) s << "\nlinks: " << links_description_;
    s << "\nhalo: " << op_->halo_description();
    return s.str();
  }

 private:
  std::shared_ptr<const StaggeredLinks> links_;  ///< for operators in other precisions
  std::string links_description_;
  std::shared_ptr<StaggeredOperator> op_;
};

void check(PetscErrorCode ierr, const char* call) {
  require(ierr == 0, call, " failed (PETSc error ", static_cast<int>(ierr), ")");
}

/// The even-odd form is Hermitian positive definite: tell PETSc, and keep it from taking the
/// complex matrix for a symmetric one (PETSc 3.18's MAT_SPD also sets MAT_SYMMETRIC).
void mark_normal_operator(Mat A) {
  check(MatSetOption(A, MAT_HERMITIAN, PETSC_TRUE), "MatSetOption(MAT_HERMITIAN)");
  check(MatSetOption(A, MAT_SPD, PETSC_TRUE), "MatSetOption(MAT_SPD)");
  check(MatSetOption(A, MAT_SYMMETRIC, PETSC_FALSE), "MatSetOption(MAT_SYMMETRIC)");
}

/// A staggered MATSHELL: settings resolved, then links (and their description) made for them.
Mat create(LatkeOperatorForm form, const LatkeStaggeredParams* params, const char* prefix, MPI_Comm comm,
           std::shared_ptr<const Lattice> lattice,
           const std::function<StaggeredLinks(const Settings&, std::string& description)>& links) {
  LatkeStaggeredParams defaults;
  LatkeStaggeredParamsDefault(&defaults);
  const Settings s = resolve(params ? *params : defaults, comm, prefix ? prefix : "", run_backend());
  std::string description;
  auto held = std::make_shared<const StaggeredLinks>(links(s, description));
  auto op = std::make_unique<StaggeredOperator>(lattice, *held, s.param);
  Mat A = create_shell(std::make_shared<StaggeredShell>(lattice, held, std::move(op), s, description), form, prefix);
  if (form == LATKE_OPERATOR_EVEN_ODD) mark_normal_operator(A);
  return A;
}

}  // namespace

void staggered_options_help(MPI_Comm comm, const char* prefix) {
  LatkeStaggeredParams in;
  (void)LatkeStaggeredParamsDefault(&in);  // fills the struct
  read_for_help([&] { (void)resolve(in, comm, prefix ? prefix : "", Backend::cpu); });
}

const StaggeredParam& staggered_param(const ShellOperator& op, const char* what) {
  const auto* s = dynamic_cast<const StaggeredShell*>(&op);
  require(s != nullptr, what, ": the matrix is a ", op.name(),
          " matrix, expected a staggered one (MatCreateLatkeStaggered)");
  return s->param();
}

}  // namespace latke::petsc

using namespace latke;
using namespace latke::petsc;

extern "C" {

PetscErrorCode LatkeStaggeredParamsDefault(LatkeStaggeredParams* params) {
  PetscFunctionBeginUser;
  LatkeCheckNull(params);
  params->mass = 0.1;
  params->type = LATKE_STAGGERED_ASQTAD;
  params->u0 = 1.0;
  for (int mu = 0; mu < 3; ++mu) params->boundary_phase[mu] = 1.0;
  params->boundary_phase[3] = -1.0;
  params->parity = 0;
  params->precision = LATKE_PRECISION_DOUBLE;
  params->reconstruct = 18;
  PetscFunctionReturn(0);
}

PetscErrorCode MatCreateLatkeStaggered(LatkeGauge gauge, LatkeOperatorForm form, const LatkeStaggeredParams* params,
                                       const char prefix[], Mat* A) {
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  PetscCheck(gauge && gauge->data, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "MatCreateLatkeStaggered: the gauge is NULL");
  const LatkeGaugeData& g = *gauge->data;
  const MPI_Comm comm = g.lattice->comm();
  PetscCall(guarded(comm, [&] {
    auto links = [&](const Settings& s, std::string& description) {
      std::ostringstream d;
      if (s.param.type == StaggeredType::naive) {
        d << g.description;
        description = d.str();
        return StaggeredLinks{g.links, {}};
      }
      d << "links fattened by Latke (tadpole factor u0 = " << s.param.u0 << ") from " << g.description;
      description = d.str();
      return asqtad_links(*g.lattice, g.links, AsqtadCoefficients::asqtad(s.param.u0), s.param.backend);
    };
    *A = create(form, params, prefix, comm, g.lattice, links);
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode MatCreateLatkeStaggeredFromLinks(LatkeGauge fat, LatkeGauge lng, LatkeOperatorForm form,
                                                const LatkeStaggeredParams* params, const char prefix[], Mat* A) {
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  PetscCheck(fat && fat->data, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL,
             "MatCreateLatkeStaggeredFromLinks: the fat links are NULL");
  const LatkeGaugeData& f = *fat->data;
  const MPI_Comm comm = f.lattice->comm();
  PetscCall(guarded(comm, [&] {
    const LatkeGaugeData* l = lng ? lng->data.get() : nullptr;
    if (l)
      require(l->lattice->global() == f.lattice->global() && l->lattice->grid() == f.lattice->grid(),
              "MatCreateLatkeStaggeredFromLinks: the fat links live on ", f.lattice->describe(), ", the long links on ",
              l->lattice->describe());
    auto links = [&](const Settings& s, std::string& description) {
      require((l != nullptr) == (s.param.type == StaggeredType::asqtad), "MatCreateLatkeStaggeredFromLinks: the ",
              to_string(s.param.type), " operator ", l ? "takes no long links" : "needs long links (lng is NULL)");
      description = "given links: fat " + f.description + (l ? ", long " + l->description : std::string());
      return StaggeredLinks{f.links, l ? l->links : std::vector<Complex<double>>{}};
    };
    *A = create(form, params, prefix, comm, f.lattice, links);
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeGaugeStripStaggeredPhases(LatkeGauge links, PetscInt hop, const PetscScalar boundary_phase[4]) {
  PetscFunctionBeginUser;
  PetscCheck(links && links->data, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL,
             "LatkeGaugeStripStaggeredPhases: the links are NULL");
  LatkeCheckNull(boundary_phase);
  LatkeGaugeData& g = *links->data;
  PetscCall(guarded(g.lattice->comm(), [&] {
    std::array<Complex<double>, 4> phase;
    for (int mu = 0; mu < 4; ++mu)
      phase[mu] = Complex<double>(PetscRealPart(boundary_phase[mu]), PetscImaginaryPart(boundary_phase[mu]));
    strip_milc_phases(*g.lattice, g.links, phase, static_cast<int>(hop));
    g.description += ", staggered phases divided out";
  }));
  PetscFunctionReturn(0);
}

}  // extern "C"
