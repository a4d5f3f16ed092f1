// The spectroscopy functions of the C API (latke.h): meson correlators of a Wilson-clover
// matrix's propagator (spectroscopy/mesons.h), propagators saved and loaded through PETSc
// viewers, and quark smearing of its vectors (spectroscopy/quark_smearing.h).
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "petsc/gauge_handle.h"
#include "petsc/mat_shell.h"
#include "spectroscopy/baryons.h"
#include "spectroscopy/mesons.h"
#include "spectroscopy/quark_smearing.h"
#include "src/core/error.h"

namespace latke::petsc {
namespace {

MPI_Comm comm_of(Mat A) { return PetscObjectComm(reinterpret_cast<PetscObject>(A)); }

MesonChannel channel_of(LatkeMesonChannel c) {
  require(c >= LATKE_MESON_PION && c <= LATKE_MESON_B1, "meson channel ", static_cast<int>(c),
          ": expected LATKE_MESON_PION ... LATKE_MESON_B1");
  return static_cast<MesonChannel>(c);
}

std::vector<MesonChannel> channels_of(const char* what, PetscInt n, const LatkeMesonChannel channels[],
                                      const PetscScalar* corr) {
  require(n >= 0 && (n == 0 || (channels && corr)), what, ": ", n, " channels with a NULL channel list or output");
  std::vector<MesonChannel> ch;
  for (PetscInt k = 0; k < n; ++k) ch.push_back(channel_of(channels[k]));
  return ch;
}

std::array<int, 4> source_of(const PetscInt site[]) {
  std::array<int, 4> s{};
  for (int mu = 0; mu < 4; ++mu) s[mu] = static_cast<int>(site[mu]);
  return s;
}

/// The n integer triples of momenta[3 m + i] (checked against the lattice by the contractions).
std::vector<std::array<int, 3>> momenta_of(PetscInt n, const PetscInt momenta[]) {
  std::vector<std::array<int, 3>> mom(n);
  for (PetscInt m = 0; m < n; ++m)
    for (int i = 0; i < 3; ++i) mom[m][i] = static_cast<int>(momenta[3 * m + i]);
  return mom;
}

/// A propagator's 12 columns as fields of the operator: read in place where their memory is
/// where the operator runs; a staged one (host vectors of a GPU operator) is copied out of the
/// scratch field the next one reuses.
class PropagatorColumns {
 public:
  PropagatorColumns(ShellOperator& op, const Vec prop[], const char* what) {
    require(op.nspin() == 4 && op.ncolor() == 3, what, ": ", op.name(),
            " is not a Wilson-type operator (4 spins, 3 colours)");
    copies_.reserve(12);
    for (int j = 0; j < 12; ++j) {
      require(prop[j] != nullptr, what, ": propagator column ", j, " is NULL");
      PetscInt size = 0;
      require(VecGetLocalSize(prop[j], &size) == 0, "VecGetLocalSize failed");
      require(is_full_vector(op, size, "a propagator column"), what, ": propagator column ", j,
              " is a vector of one parity; expected full-lattice vectors (MatLatkeCreateFullVecs)");
      auto f = std::make_unique<VecField>(op, prop[j], Access::read, 0);
      if (f->staged()) {
        copies_.push_back(f->field().like(Precision::double_));
        copies_.back().copy_from(f->field());
        f->release();
        fields_.push_back(&copies_.back());
      } else {
        fields_.push_back(&f->field());
        wrapped_.push_back(std::move(f));
      }
    }
  }
  const std::vector<const ColorSpinorField*>& fields() const { return fields_; }
  /// Gives the vectors back to PETSc (read access: nothing is copied back).
  void release() {
    for (auto& f : wrapped_) f->release();
  }

 private:
  std::vector<std::unique_ptr<VecField>> wrapped_;
  std::vector<ColorSpinorField> copies_;
  std::vector<const ColorSpinorField*> fields_;
};

/// MatLatkeMesonCorrelators (at a point sink) and MatLatkeMesonCorrelatorsWallSink.
PetscErrorCode mesons_at_rest(const char* what, Mat A, const Vec prop[], PetscInt t0, PetscInt n,
                              const LatkeMesonChannel channels[], PetscScalar corr[], bool wall_sink) {
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  LatkeCheckNull(prop);
  PetscCall(guarded(comm_of(A), [&] {
    ShellOperator& op = *context_of(A).op;
    const std::vector<MesonChannel> ch = channels_of(what, n, channels, corr);
    const int T = op.lattice()->global()[3];
    require(t0 >= 0 && t0 < T, what, ": source time slice ", t0, ": expected 0 to ", T - 1);
    PropagatorColumns cols(op, prop, what);
    const auto c = wall_sink ? meson_correlators_wall_sink(cols.fields(), static_cast<int>(t0), ch)
                             : meson_correlators(cols.fields(), static_cast<int>(t0), ch);
    cols.release();
    for (PetscInt k = 0; k < n; ++k)
      for (int t = 0; t < T; ++t) corr[k * T + t] = PetscScalar(c[k][t].re, c[k][t].im);
  }));
  PetscFunctionReturn(0);
}

/// MatLatkeMesonCorrelatorsMomenta (antiquark NULL: the quark's propagator) and
/// MatLatkeMesonCorrelatorsPair.
PetscErrorCode mesons_at_momenta(const char* what, Mat A, const Vec quark[], const Vec antiquark[],
                                 const PetscInt site[], PetscInt n_momenta, const PetscInt momenta[], PetscInt n,
                                 const LatkeMesonChannel channels[], PetscScalar corr[]) {
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  LatkeCheckNull(quark);
  LatkeCheckNull(site);
  PetscCall(guarded(comm_of(A), [&] {
    ShellOperator& op = *context_of(A).op;
    const std::vector<MesonChannel> ch = channels_of(what, n, channels, corr);
    require(n_momenta >= 0 && (n_momenta == 0 || momenta), what, ": ", n_momenta, " momenta with a NULL list");
    const std::array<int, 4> source = source_of(site);
    const std::vector<std::array<int, 3>> mom = momenta_of(n_momenta, momenta);
    PropagatorColumns q(op, quark, what);
    std::unique_ptr<PropagatorColumns> a;
    if (antiquark) a = std::make_unique<PropagatorColumns>(op, antiquark, what);
    const auto c = meson_correlators(q.fields(), a ? a->fields() : q.fields(), source, ch, mom);
    q.release();
    if (a) a->release();
    const int T = op.lattice()->global()[3];
    for (PetscInt k = 0; k < n; ++k)
      for (PetscInt m = 0; m < n_momenta; ++m)
        for (int t = 0; t < T; ++t) corr[(k * n_momenta + m) * T + t] = PetscScalar(c[k][m][t].re, c[k][m][t].im);
  }));
  PetscFunctionReturn(0);
}

/// Runs io on each column j with the vector named "s<spin>_c<color>" (its dataset in an HDF5
/// file), the vector's own name restored after.
PetscErrorCode each_column(Vec prop[], PetscErrorCode (*io)(Mat, Vec, PetscViewer), Mat A, PetscViewer viewer) {
  PetscFunctionBeginUser;
  for (int j = 0; j < 12; ++j) {
    PetscCheck(prop[j] != nullptr, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "propagator column %d is NULL", j);
    const char* name = nullptr;
    PetscCall(PetscObjectGetName(reinterpret_cast<PetscObject>(prop[j]), &name));
    const std::string own = name ? name : "";
    char dataset[16];
    std::snprintf(dataset, sizeof dataset, "s%d_c%d", j / 3, j % 3);
    PetscCall(PetscObjectSetName(reinterpret_cast<PetscObject>(prop[j]), dataset));
    const PetscErrorCode ierr = io(A, prop[j], viewer);
    PetscCall(PetscObjectSetName(reinterpret_cast<PetscObject>(prop[j]), own.c_str()));
    PetscCall(ierr);
  }
  PetscFunctionReturn(0);
}

}  // namespace
}  // namespace latke::petsc

struct _p_LatkeSmearer {
  Mat A = nullptr;  ///< referenced: its operator's backend and vector layout
  std::unique_ptr<latke::QuarkSmearer> smearer;
};

using namespace latke;
using namespace latke::petsc;

extern "C" {

PetscErrorCode LatkeMesonChannelGetName(LatkeMesonChannel channel, const char** name) {
  PetscFunctionBeginUser;
  LatkeCheckNull(name);
  PetscCall(guarded(PETSC_COMM_SELF, [&] { *name = to_string(channel_of(channel)); }));
  PetscFunctionReturn(0);
}

PetscErrorCode MatLatkeMesonCorrelators(Mat A, const Vec prop[], PetscInt t0, PetscInt n,
                                        const LatkeMesonChannel channels[], PetscScalar corr[]) {
  PetscFunctionBeginUser;
  PetscCall(mesons_at_rest("MatLatkeMesonCorrelators", A, prop, t0, n, channels, corr, false));
  PetscFunctionReturn(0);
}

PetscErrorCode MatLatkeMesonCorrelatorsMomenta(Mat A, const Vec prop[], const PetscInt site[], PetscInt n_momenta,
                                               const PetscInt momenta[], PetscInt n, const LatkeMesonChannel channels[],
                                               PetscScalar corr[]) {
  PetscFunctionBeginUser;
  PetscCall(mesons_at_momenta("MatLatkeMesonCorrelatorsMomenta", A, prop, nullptr, site, n_momenta, momenta, n,
                              channels, corr));
  PetscFunctionReturn(0);
}

PetscErrorCode MatLatkeMesonCorrelatorsPair(Mat A, const Vec quark[], const Vec antiquark[], const PetscInt site[],
                                           PetscInt n_momenta, const PetscInt momenta[], PetscInt n,
                                           const LatkeMesonChannel channels[], PetscScalar corr[]) {
  PetscFunctionBeginUser;
  LatkeCheckNull(antiquark);
  PetscCall(mesons_at_momenta("MatLatkeMesonCorrelatorsPair", A, quark, antiquark, site, n_momenta, momenta, n,
                              channels, corr));
  PetscFunctionReturn(0);
}

PetscErrorCode MatLatkeMesonCorrelatorsWallSink(Mat A, const Vec prop[], PetscInt t0, PetscInt n,
                                                const LatkeMesonChannel channels[], PetscScalar corr[]) {
  PetscFunctionBeginUser;
  PetscCall(mesons_at_rest("MatLatkeMesonCorrelatorsWallSink", A, prop, t0, n, channels, corr, true));
  PetscFunctionReturn(0);
}

PetscErrorCode MatLatkeNucleonCorrelatorsWallSink(Mat A, const Vec prop[], PetscInt t0, PetscScalar corr[]) {
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  LatkeCheckNull(prop);
  LatkeCheckNull(corr);
  PetscCall(guarded(comm_of(A), [&] {
    const char* what = "MatLatkeNucleonCorrelatorsWallSink";
    ShellOperator& op = *context_of(A).op;
    PropagatorColumns cols(op, prop, what);
    const auto c = nucleon_correlators_wall_sink(cols.fields(), static_cast<int>(t0), op.boundary_phases());
    cols.release();
    const int T = op.lattice()->global()[3];
    for (int k = 0; k < n_baryon_channels; ++k)
      for (int t = 0; t < T; ++t) corr[k * T + t] = PetscScalar(c[k][t].re, c[k][t].im);
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeBaryonChannelGetName(LatkeBaryonChannel channel, const char** name) {
  PetscFunctionBeginUser;
  LatkeCheckNull(name);
  PetscCall(guarded(PETSC_COMM_SELF, [&] {
    require(channel >= LATKE_BARYON_NUCLEON && channel <= LATKE_BARYON_NUCLEON_MINUS, "baryon channel ",
            static_cast<int>(channel), ": expected LATKE_BARYON_NUCLEON or LATKE_BARYON_NUCLEON_MINUS");
    *name = to_string(static_cast<BaryonChannel>(channel));
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode MatLatkeNucleonCorrelators(Mat A, const Vec prop[], const PetscInt site[], PetscInt n_momenta,
                                          const PetscInt momenta[], PetscScalar corr[]) {
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  LatkeCheckNull(prop);
  LatkeCheckNull(site);
  PetscCall(guarded(comm_of(A), [&] {
    const char* what = "MatLatkeNucleonCorrelators";
    ShellOperator& op = *context_of(A).op;
    require(n_momenta >= 1 && momenta && corr, what, ": ", n_momenta,
            " momenta, a list and an output: expected at least one momentum ((0, 0, 0) for the nucleon at rest)");
    const std::array<int, 4> source = source_of(site);
    const std::vector<std::array<int, 3>> mom = momenta_of(n_momenta, momenta);
    PropagatorColumns cols(op, prop, what);
    const auto c = nucleon_correlators(cols.fields(), source, op.boundary_phases(), mom);
    cols.release();
    const int T = op.lattice()->global()[3];
    for (int k = 0; k < n_baryon_channels; ++k)
      for (PetscInt m = 0; m < n_momenta; ++m)
        for (int t = 0; t < T; ++t) corr[(k * n_momenta + m) * T + t] = PetscScalar(c[k][m][t].re, c[k][m][t].im);
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode MatLatkeSmearerCreate(Mat A, LatkeGauge links, LatkeQuarkSmear type, PetscInt steps, PetscReal alpha,
                                     LatkeSmearer* smearer) {
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  PetscCheck(links && links->data, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "MatLatkeSmearerCreate: the links are NULL");
  LatkeCheckNull(smearer);
  PetscCall(guarded(comm_of(A), [&] {
    ShellOperator& op = *context_of(A).op;
    require(op.nspin() == 4 && op.ncolor() == 3, "MatLatkeSmearerCreate: ", op.name(),
            " is not a Wilson-type operator (4 spins, 3 colours)");
    require(type >= LATKE_QUARK_SMEAR_NONE && type <= LATKE_QUARK_SMEAR_GAUSSIAN, "MatLatkeSmearerCreate: type ",
            static_cast<int>(type), ", expected LATKE_QUARK_SMEAR_NONE, _WUPPERTAL or _GAUSSIAN");
    const Lattice& lat = *op.lattice();
    const Lattice& gl = *links->data->lattice;
    require(gl.global() == lat.global() && gl.grid() == lat.grid(), "MatLatkeSmearerCreate: the links' lattice ",
            coords_text(gl.global()), " on grid ", coords_text(gl.grid()), " is not the matrix's ",
            coords_text(lat.global()), " on grid ", coords_text(lat.grid()));
    QuarkSmearing p;
    p.type = static_cast<QuarkSmearingType>(type);
    p.steps = static_cast<int>(steps);
    p.alpha = alpha;
    auto s = std::make_unique<_p_LatkeSmearer>();
    s->smearer = std::make_unique<QuarkSmearer>(lat, op.backend(), links->data->links, p);
    s->A = A;
    *smearer = s.release();
  }));
  PetscCall(PetscObjectReference(reinterpret_cast<PetscObject>(A)));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeSmearerApply(LatkeSmearer smearer, Vec x, PetscInt t) {
  PetscFunctionBeginUser;
  PetscCheck(smearer && smearer->A, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "LatkeSmearerApply: the smearer is NULL");
  LatkeCheckNull(x);
  PetscCall(guarded(comm_of(smearer->A), [&] {
    ShellOperator& op = *context_of(smearer->A).op;
    PetscInt size = 0;
    require(VecGetLocalSize(x, &size) == 0, "VecGetLocalSize failed");
    require(is_full_vector(op, size, "the vector to smear"),
            "LatkeSmearerApply: a vector of one parity; expected a full-lattice vector (MatLatkeCreateFullVecs)");
    VecField f(op, x, Access::read_write, 0);
    smearer->smearer->apply(f.field(), static_cast<int>(t));
    f.release();
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeSmearerDestroy(LatkeSmearer* smearer) {
  PetscFunctionBeginUser;
  if (!smearer || !*smearer) PetscFunctionReturn(0);
  std::unique_ptr<_p_LatkeSmearer> s(*smearer);
  *smearer = nullptr;
  Mat A = s->A;
  s.reset();
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkePropagatorView(Mat A, const Vec prop[], PetscViewer viewer) {
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  LatkeCheckNull(prop);
  PetscCall(each_column(const_cast<Vec*>(prop), LatkeVecView, A, viewer));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkePropagatorLoad(Mat A, Vec prop[], PetscViewer viewer) {
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  LatkeCheckNull(prop);
  PetscCall(each_column(prop, LatkeVecLoad, A, viewer));
  PetscFunctionReturn(0);
}

}  // extern "C"
