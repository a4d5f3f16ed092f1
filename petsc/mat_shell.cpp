// The generic MATSHELL of Latke's operators (mat_shell.h): operations, vector access and staging, and the
// matrix helpers of the C API (latke.h).
#include "petsc/mat_shell.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>

#include "src/core/error.h"
#include "src/core/log.h"
#include "src/core/options.h"
#include "src/core/petsc_compat.h"
#include "src/core/petsc_device.h"
#include "src/fields/blas.h"

namespace latke::petsc {

// ---- ShellOperator -------------------------------------------------------------------------

SpinorParam ShellOperator::field_param(LatkeOperatorForm form) const {
  SpinorParam p;
  p.nspin = nspin();
  p.ncolor = ncolor();
  p.precision = Precision::double_;
  p.backend = backend();
  p.subset = form == LATKE_OPERATOR_FULL ? Subset::full : (parity() == 0 ? Subset::even : Subset::odd);
  return p;
}

PetscInt ShellOperator::local_size(LatkeOperatorForm form) const {
  const PetscInt per_site = nspin() * ncolor();
  return per_site * lattice()->volume_cb() * (form == LATKE_OPERATOR_FULL ? 2 : 1);
}

std::shared_ptr<LinearOperator> ShellOperator::linear_operator(LatkeOperatorForm form, Precision p, const Coords& block) {
  std::shared_ptr<LinearOperator>& op = linear_[{static_cast<int>(form), static_cast<int>(p), block}];
  if (!op) op = make_linear_operator(form, p, block);
  return op;
}

const ColorSpinorField& ShellOperator::schur_rhs_parity(ColorSpinorField&, const ColorSpinorField&) {
  fail(name(), ": no full-lattice form of its even-odd right-hand sides (needed by the multigrid preconditioner on "
       "the even-odd system; use the full form)");
}

void ShellOperator::hermiticity(LatkeOperatorForm, ColorSpinorField&, const ColorSpinorField&, bool) {
  fail(name(),
       ": no hermiticity relation Op^dag = Gamma Op Gamma^-1 is known for it (needed for the transpose of a "
       "preconditioner built on it)");
}

ColorSpinorField& ShellOperator::stage_field(int slot, bool full) {
  require(slot >= 0 && slot < 3, "staging slot ", slot, ": expected 0, 1 or 2");
  std::unique_ptr<ColorSpinorField>& f = stage_[slot][full ? 1 : 0];
  if (!f) f = std::make_unique<ColorSpinorField>(lattice(), field_param(full ? LATKE_OPERATOR_FULL : LATKE_OPERATOR_EVEN_ODD));
  return *f;
}

bool is_full_vector(const ShellOperator& op, PetscInt n, const char* what) {
  if (n == op.local_size(LATKE_OPERATOR_FULL)) return true;
  if (n == op.local_size(LATKE_OPERATOR_EVEN_ODD)) return false;
  fail(op.name(), ": ", what, " has local size ", n, ", expected ", op.local_size(LATKE_OPERATOR_FULL),
       " (full lattice) or ", op.local_size(LATKE_OPERATOR_EVEN_ODD), " (one parity) on this rank");
}

// ---- helpers the operators' MATSHELLs share ------------------------------------------------

Precision precision_of(LatkePrecision p) {
  switch (p) {
    case LATKE_PRECISION_DOUBLE: return Precision::double_;
    case LATKE_PRECISION_SINGLE: return Precision::single;
    case LATKE_PRECISION_HALF: return Precision::half;
  }
  fail("precision ", static_cast<int>(p), ": expected LATKE_PRECISION_DOUBLE, _SINGLE or _HALF");
}

std::array<Complex<double>, 4> boundary_phases(const PetscScalar given[4], const std::vector<double>& boundary,
                                               const std::vector<double>& twist, const std::string& prefix) {
  std::array<Complex<double>, 4> phase;
  for (int mu = 0; mu < 4; ++mu) phase[mu] = Complex<double>(PetscRealPart(given[mu]), PetscImaginaryPart(given[mu]));
  if (!boundary.empty()) {
    const std::vector<double>& b = boundary;
    require(b.size() == 4, "-", prefix, "latke_boundary '", list_text(b), "': expected four signs (x,y,z,t)");
    for (int mu = 0; mu < 4; ++mu) {
      static const char* const dims[4] = {"x", "y", "z", "t"};
      require(b[mu] == 1 || b[mu] == -1, "-", prefix, "latke_boundary '", list_text(b), "': entry ", mu + 1, " (",
              dims[mu], ") is ", b[mu], ": expected 1 or -1");
      phase[mu] = Complex<double>(b[mu]);
    }
  }
  if (!twist.empty()) {
    const std::vector<double>& t = twist;
    require(t.size() == 4, "-", prefix, "latke_twist '", list_text(t), "': expected four numbers (x,y,z,t)");
    for (int mu = 0; mu < 4; ++mu)
      phase[mu] = phase[mu] * Complex<double>(std::cos(M_PI * t[mu]), std::sin(M_PI * t[mu]));
  }
  for (int mu = 0; mu < 4; ++mu)
    require(std::fabs(norm2(phase[mu]) - 1.0) < 1e-12, "boundary phase (", phase[mu].re, ", ", phase[mu].im,
            ") in dimension ", mu, ": expected modulus one");
  return phase;
}

void StoredShell::apply(LatkeOperatorForm form, ColorSpinorField& out, const ColorSpinorField& in, bool dagger) {
  ColorSpinorField& i = copies_.inner(in, 0);
  ColorSpinorField& o = copies_.inner(out, 1, false);
  apply_stored(form, o, i, dagger);
  copies_.outer(out, o);
}

namespace {
/// Whether set is n fields shaped like f (its lattice, spins, colours, parities and backend) in
/// precision p: scratch sets are made again only when not.
bool holds(const std::vector<ColorSpinorField>& set, std::size_t n, const ColorSpinorField& f, Precision p) {
  if (set.size() != n || n == 0) return false;
  const ColorSpinorField& s = set[0];
  return &s.lattice() == &f.lattice() && s.precision() == p && s.nspin() == f.nspin() && s.ncolor() == f.ncolor() &&
         s.param().subset == f.param().subset && s.backend() == f.backend();
}
}  // namespace

void ShellOperator::apply_set(LatkeOperatorForm form, std::vector<ColorSpinorField>& out,
                              const std::vector<ColorSpinorField>& in) {
  require(out.size() == in.size(), "apply_set: sets of ", in.size(), " and ", out.size(), " fields");
  for (std::size_t k = 0; k < in.size(); ++k) apply(form, out[k], in[k], false);
}

void StoredShell::apply_set(LatkeOperatorForm form, std::vector<ColorSpinorField>& out,
                            const std::vector<ColorSpinorField>& in) {
  const Precision p = copies_.precision();
  const std::shared_ptr<LinearOperator> op = linear_operator(form, p, Coords{});
  if (!op->applies_sets() || in.size() < 2) return ShellOperator::apply_set(form, out, in);
  require(out.size() == in.size(), "apply_set: sets of ", in.size(), " and ", out.size(), " fields");
  if (p == Precision::double_) return op->apply_set(out, in);
  std::vector<ColorSpinorField>&i = low_.in, &o = low_.out;
  if (!holds(i, in.size(), in[0], p)) {
    SpinorParam sp = in[0].param();
    sp.precision = p;
    i = ColorSpinorField::make_set(in[0].lattice_ptr(), sp, static_cast<int>(in.size()));
    o = ColorSpinorField::make_set(in[0].lattice_ptr(), sp, static_cast<int>(in.size()));
  }
  for (std::size_t k = 0; k < in.size(); ++k) i[k].copy_from(in[k]);
  op->apply_set(o, i);
  for (std::size_t k = 0; k < in.size(); ++k) out[k].copy_from(o[k]);
}

void StoredShell::prepare_source(ColorSpinorField& bhat, const ColorSpinorField& b) {
  ColorSpinorField& i = copies_.inner(b, 0);
  ColorSpinorField& o = copies_.inner(bhat, 1, false);
  prepare_stored(o, i);
  copies_.outer(bhat, o);
}

void StoredShell::reconstruct(ColorSpinorField& x, const ColorSpinorField& xhat, const ColorSpinorField& b) {
  ColorSpinorField& xh = copies_.inner(xhat, 0);
  ColorSpinorField& bb = copies_.inner(b, 2);
  ColorSpinorField& o = copies_.inner(x, 1, false);
  reconstruct_stored(o, xh, bb);
  copies_.outer(x, o);
}

ColorSpinorField& PrecisionCopies::inner(const ColorSpinorField& f, int slot, bool copy) {
  if (precision_ == Precision::double_) {
    held_[slot] = std::make_unique<ColorSpinorField>(f);
    return *held_[slot];
  }
  std::unique_ptr<ColorSpinorField>& s = low_[slot][f.n_parity() - 1];
  if (!s) s = std::make_unique<ColorSpinorField>(f.like(precision_));
  if (copy) s->copy_from(f);
  return *s;
}

void PrecisionCopies::outer(ColorSpinorField& f, const ColorSpinorField& inner) {
  if (precision_ != Precision::double_) f.copy_from(inner);
}

// ---- VecField ---------------------------------------------------------------------------------

namespace {
void check_petsc(PetscErrorCode ierr, const char* call) {
  require(ierr == 0, call, " failed (PETSc error ", static_cast<int>(ierr), ")");
}
}  // namespace

namespace {
/// Whether a vector's array is used in place by op: its memory is where op runs and it is
/// aligned for Latke's loads. Otherwise VecField stages it.
bool used_in_place(const ShellOperator& op, bool device_memory, const void* array) {
  return device_memory == (op.backend() == Backend::cuda) && reinterpret_cast<std::uintptr_t>(array) % 16 == 0;
}
}  // namespace

VecField::VecField(ShellOperator& op, Vec v, Access access, int slot) : op_(op), v_(v), access_(access) {
  PetscInt n = 0;
  check_petsc(VecGetLocalSize(v, &n), "VecGetLocalSize");
  full_ = is_full_vector(op, n, "a vector");
  const SpinorParam param = op.field_param(full_ ? LATKE_OPERATOR_FULL : LATKE_OPERATOR_EVEN_ODD);
  PetscMemType mtype = PETSC_MEMTYPE_HOST;
  switch (access) {
    case Access::read: {
      const PetscScalar* a = nullptr;
      check_petsc(VecGetArrayReadAndMemType(v, &a, &mtype), "VecGetArrayReadAndMemType");
      array_ = const_cast<PetscScalar*>(a);
      break;
    }
    case Access::write: check_petsc(VecGetArrayWriteAndMemType(v, &array_, &mtype), "VecGetArrayWriteAndMemType"); break;
    case Access::read_write: check_petsc(VecGetArrayAndMemType(v, &array_, &mtype), "VecGetArrayAndMemType"); break;
  }
  device_memory_ = PetscMemTypeDevice(mtype);
  if (device_memory_ && op.backend() != Backend::cuda) {
    release();
    fail(op.name(), ": a vector in GPU memory was given to an operator on the CPU backend (use -latke_backend cuda "
         "or host vectors)");
  }
  // PETSc's kernels on this vector run on PETSc's stream and may still be queued: Latke's
  // kernels start after them (an event; the host does not wait).
  if (device_memory_) compute_waits_for_petsc();
  if (used_in_place(op, device_memory_, array_)) {
    field_ = std::make_unique<ColorSpinorField>(ColorSpinorField::wrap(op.lattice(), param, array_));
    return;
  }
  staged_ = true;
  field_ = std::make_unique<ColorSpinorField>(op.stage_field(slot, full_));
  if (access == Access::write) return;
  const std::size_t bytes = n * sizeof(PetscScalar);
  if (device_memory_) {
    // A device array not aligned for Latke's loads (a subvector): copied on the device.
    copy_bytes(field_->block_data(0), array_, bytes, compute_stream());
    return;
  }
  const LogScope log(LogEvent::stage, 0, true);
  op.stager().upload(field_->block_data(0), array_, bytes, compute_stream());
  if (op.backend() == Backend::cuda) count_staging(true, static_cast<double>(bytes));
}

void VecField::release() {
  if (released_) return;
  released_ = true;
  if (staged_ && access_ != Access::read && field_) {
    const std::size_t bytes = static_cast<std::size_t>(field_->n_parity()) * field_->lattice().volume_cb() *
                              field_->site_reals() * sizeof(double);
    if (device_memory_) {
      copy_bytes(array_, field_->block_data(0), bytes, compute_stream());
    } else {
      const LogScope log(LogEvent::stage, 0, true);
      op_.stager().download(array_, field_->block_data(0), bytes, compute_stream());
      if (op_.backend() == Backend::cuda) count_staging(false, static_cast<double>(bytes));
    }
  }
  // PETSc's next kernels on this vector (reading what Latke wrote, or overwriting what Latke
  // still reads) start after Latke's: an event PETSc's stream waits on, no host wait.
  if (device_memory_) petsc_waits_for_compute();
  PetscErrorCode ierr = 0;
  switch (access_) {
    case Access::read: {
      const PetscScalar* a = array_;
      ierr = VecRestoreArrayReadAndMemType(v_, &a);
      break;
    }
    case Access::write: ierr = VecRestoreArrayWriteAndMemType(v_, &array_); break;
    case Access::read_write: ierr = VecRestoreArrayAndMemType(v_, &array_); break;
  }
  check_petsc(ierr, "VecRestoreArray*AndMemType");
}

VecField::~VecField() {
  if (released_) return;
  try {
    release();
  } catch (const std::exception&) {
    // Already failing: the first error is the one reported.
  }
}

// ---- MATSHELL operations ---------------------------------------------------------------------

namespace {

MPI_Comm comm_of(Mat A) { return PetscObjectComm(reinterpret_cast<PetscObject>(A)); }

MatContext& ctx(Mat A) {
  void* c = nullptr;
  check_petsc(MatShellGetContext(A, &c), "MatShellGetContext");
  return *static_cast<MatContext*>(c);
}

void require_form(const MatContext& c, const VecField& f, const char* what) {
  require(f.full() == (c.form == LATKE_OPERATOR_FULL), c.op->name(), ": ", what, " is ",
          f.full() ? "a full-lattice vector" : "a one-parity vector", " but the matrix is the ",
          c.form == LATKE_OPERATOR_FULL ? "full operator" : "even-odd operator", " (create vectors with MatCreateVecs)");
}

PetscErrorCode mult(Mat A, Vec x, Vec y, bool dagger) {
  PetscFunctionBeginUser;
  PetscCall(guarded(comm_of(A), [&] {
    MatContext& c = ctx(A);
    const LogScope log(LogEvent::mat_mult, 0, true);
    VecField in(*c.op, x, Access::read, 0);
    VecField out(*c.op, y, Access::write, 1);
    require_form(c, in, "the input");
    require_form(c, out, "the output");
    c.op->apply(c.form, out.field(), in.field(), dagger);
    out.release();
    in.release();
    ++c.applications;
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode MatMult_Latke(Mat A, Vec x, Vec y) { return mult(A, x, y, false); }

/// Y = A X for dense X and Y (MatMatMult, MatProduct AB): the operator on sets of columns (the
/// links read once per set where the form applies sets).
PetscErrorCode MatProductNumeric_Latke(Mat A, Mat X, Mat Y, void*) {
  PetscFunctionBeginUser;
  PetscCall(guarded(comm_of(A), [&] {
    MatContext& c = ctx(A);
    const LogScope log(LogEvent::mat_mult, 0, true);
    apply_to_dense_columns(
        *c.op, X, Y, c.columns,
        [&](std::vector<ColorSpinorField>& out, const std::vector<ColorSpinorField>& in) {
          c.op->apply_set(c.form, out, in);
          c.applications += static_cast<long>(in.size());
        },
        [&](VecField& f) { require_form(c, f, "a column of the dense matrix"); });
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode MatMultHermitianTranspose_Latke(Mat A, Vec x, Vec y) { return mult(A, x, y, true); }

/// A^T x = conj(A^H conj(x)).
PetscErrorCode MatMultTranspose_Latke(Mat A, Vec x, Vec y) {
  Vec t;
  PetscFunctionBeginUser;
  PetscCall(VecDuplicate(x, &t));
  PetscCall(VecCopy(x, t));
  PetscCall(VecConjugate(t));
  PetscCall(mult(A, t, y, true));
  PetscCall(VecConjugate(y));
  PetscCall(VecDestroy(&t));
  PetscFunctionReturn(0);
}

PetscErrorCode MatGetDiagonal_Latke(Mat A, Vec d) {
  PetscFunctionBeginUser;
  PetscCall(guarded(comm_of(A), [&] {
    MatContext& c = ctx(A);
    require(c.op->has_diagonal(c.form), c.op->name(), ": the diagonal of the even-odd operator is not available");
    VecField out(*c.op, d, Access::write, 1);
    require_form(c, out, "the diagonal");
    c.op->diagonal(c.form, out.field());
    out.release();
  }));
  PetscFunctionReturn(0);
}

const char* vector_path(const ShellOperator& op) {
  if (op.backend() == Backend::cpu) return "host vectors used in place (CPU backend)";
  if (device_vectors(op.backend()))
    return "device vectors (VECCUDA) used in place, ordered with PETSc's stream by CUDA events; host vectors "
           "staged through pinned buffers";
  if (device_path_compiled) return "host vectors staged to the GPU through pinned buffers (PETSc's device is not CUDA)";
  return "host vectors staged to the GPU through pinned buffers (this PETSc or this Latke has no CUDA device path)";
}

/// Global rows up to which a viewer that needs the entries (binary, HDF5, draw, ...) gets the
/// assembled operator (one application per column).
constexpr PetscInt assemble_rows_max = 65536;

PetscErrorCode MatView_Latke(Mat A, PetscViewer viewer) {
  PetscBool ascii = PETSC_FALSE;
  PetscFunctionBeginUser;
  PetscCall(PetscObjectTypeCompare(reinterpret_cast<PetscObject>(viewer), PETSCVIEWERASCII, &ascii));
  MatContext& c = ctx(A);
  if (!ascii) {
    // The entries: a matrix-free operator is assembled, column by column, where that is cheap.
    PetscInt rows = 0;
    PetscCall(MatGetSize(A, &rows, nullptr));
    PetscCheck(rows <= assemble_rows_max, comm_of(A), PETSC_ERR_SUP,
               "%s is matrix-free: viewing its entries assembles it with one application per column, and it has "
               "%" PetscInt_FMT " rows (at most %" PetscInt_FMT " are assembled); view it as ASCII (-mat_view, "
               "-ksp_view_mat) or assemble a smaller lattice",
               c.op->name(), rows, assemble_rows_max);
    Mat B = nullptr;
    PetscCall(MatComputeOperator(A, MATAIJ, &B));
    PetscCall(PetscObjectSetName(reinterpret_cast<PetscObject>(B), c.op->name()));
    PetscCall(MatView(B, viewer));
    PetscCall(MatDestroy(&B));
    PetscFunctionReturn(0);
  }
  std::string text;
  PetscCall(guarded(comm_of(A), [&] {
    std::ostringstream s;
    s << c.op->name() << ": " << c.op->describe(c.form) << "\n";
    s << "lattice " << c.op->lattice()->describe() << ", backend " << to_string(c.op->backend()) << "\n";
    s << "vectors: " << vector_path(*c.op) << "\n";
    text = s.str();
  }));
  PetscCall(PetscViewerASCIIPushTab(viewer));
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) PetscCall(PetscViewerASCIIPrintf(viewer, "%s\n", line.c_str()));
  PetscCall(PetscViewerASCIIPopTab(viewer));
  PetscFunctionReturn(0);
}

/// MatGetInfo of a matrix-free operator: each row's entries counted as its stencil's (the
/// coupled sites' spin-colour blocks taken whole; an upper bound on small lattices, where
/// displacements wrap onto one site), nothing allocated for entries, the fields' bytes as
/// memory.
PetscErrorCode MatGetInfo_Latke(Mat A, MatInfoType flag, MatInfo* info) {
  PetscFunctionBeginUser;
  MatContext& c = ctx(A);
  PetscInt rows = 0;
  PetscCall(MatGetLocalSize(A, &rows, nullptr));
  const double nz = static_cast<double>(rows) * c.op->coupled_sites(c.form) * c.op->nspin() * c.op->ncolor();
  double v[2] = {nz, static_cast<double>(c.op->bytes())};
  if (flag == MAT_GLOBAL_SUM) PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE, MPI_SUM, comm_of(A)));
  if (flag == MAT_GLOBAL_MAX) PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE, MPI_MAX, comm_of(A)));
  PetscCall(PetscMemzero(info, sizeof(MatInfo)));
  info->block_size = 1;
  info->nz_used = v[0];
  info->nz_allocated = v[0];
  info->memory = v[1];
  info->assemblies = 1;
  PetscFunctionReturn(0);
}

/// The type of the vectors MatCreateVecs gives: -vec_type (under the matrix's prefix) when
/// given, else VECCUDA where the operator runs on the GPU and PETSc has CUDA (nothing then
/// crosses PCIe), else VECSTANDARD.
std::string vector_type(const ShellOperator& op, const char* prefix) {
  char given[64] = "";
  PetscBool set = PETSC_FALSE;
  check_petsc(PetscOptionsGetString(nullptr, prefix, "-vec_type", given, sizeof given, &set), "PetscOptionsGetString");
  const bool device = device_vectors(op.backend());
  if (!set) return device ? VECCUDA : VECSTANDARD;
  const std::string t = given;
  const bool cuda_type = t == VECCUDA || t == VECSEQCUDA || t == VECMPICUDA;
  require(!cuda_type || device, "-", prefix ? prefix : "", "vec_type ", t, ": ", op.name(), " runs on the ",
          to_string(op.backend()), " backend", op.backend() == Backend::cuda ? " but PETSc's device is not that CUDA GPU" : "",
          "; device vectors need -latke_backend cuda and a PETSc built with CUDA (scripts/build-petsc-cuda.sh)");
  return t;
}

PetscErrorCode destroy_context(void* p) {
  PetscFunctionBeginUser;
  delete compat::destroyed_context<MatContext>(p);
  PetscFunctionReturn(0);
}

void check(PetscErrorCode ierr, const char* call) { check_petsc(ierr, call); }

/// A matrix of another form on A's operator, or on the same operator in double precision.
Mat companion(Mat A, LatkeOperatorForm form, bool in_double) {
  const char* prefix = nullptr;
  check(MatGetOptionsPrefix(A, &prefix), "MatGetOptionsPrefix");
  std::shared_ptr<ShellOperator> op = context_of(A).op;
  if (in_double)
    if (std::shared_ptr<ShellOperator> d = op->in_double()) op = d;
  return create_shell(op, form, prefix);
}

}  // namespace

void apply_to_dense_columns(
    ShellOperator& op, Mat X, Mat Y, ColumnSets& sets,
    const std::function<void(std::vector<ColorSpinorField>& out, const std::vector<ColorSpinorField>& in)>& apply,
    const std::function<void(VecField& column)>& check) {
  PetscInt n = 0;
  check_petsc(MatGetSize(X, nullptr, &n), "MatGetSize");
  std::vector<ColorSpinorField>&in = sets.in, &out = sets.out;
  for (PetscInt j0 = 0; j0 < n; j0 += blas::set_max) {
    const int m = static_cast<int>(std::min<PetscInt>(blas::set_max, n - j0));
    for (int k = 0; k < m; ++k) {
      Vec v = nullptr;
      check_petsc(MatDenseGetColumnVecRead(X, j0 + k, &v), "MatDenseGetColumnVecRead");
      VecField f(op, v, Access::read, 0);
      if (check) check(f);
      if (k == 0 && !holds(in, m, f.field(), f.field().precision())) {
        in = ColorSpinorField::make_set(f.field().lattice_ptr(), f.field().param(), m);
        out = ColorSpinorField::make_set(f.field().lattice_ptr(), f.field().param(), m);
      }
      in[k].copy_from(f.field());
      f.release();
      check_petsc(MatDenseRestoreColumnVecRead(X, j0 + k, &v), "MatDenseRestoreColumnVecRead");
    }
    apply(out, in);
    for (int k = 0; k < m; ++k) {
      Vec v = nullptr;
      check_petsc(MatDenseGetColumnVecWrite(Y, j0 + k, &v), "MatDenseGetColumnVecWrite");
      VecField f(op, v, Access::write, 1);
      f.field().copy_from(out[k]);
      f.release();
      check_petsc(MatDenseRestoreColumnVecWrite(Y, j0 + k, &v), "MatDenseRestoreColumnVecWrite");
    }
  }
}

Mat create_shell(std::shared_ptr<ShellOperator> op, LatkeOperatorForm form, const char* prefix) {
  require(form == LATKE_OPERATOR_FULL || form == LATKE_OPERATOR_EVEN_ODD, "operator form ", static_cast<int>(form),
          ": expected LATKE_OPERATOR_FULL or LATKE_OPERATOR_EVEN_ODD");
  const PetscInt n = op->local_size(form);
  auto* c = new MatContext;
  c->op = std::move(op);
  c->form = form;
  Mat A = nullptr;
  const PetscErrorCode ierr = MatCreateShell(c->op->lattice()->comm(), n, n, PETSC_DETERMINE, PETSC_DETERMINE, c, &A);
  if (ierr) {
    delete c;
    check(ierr, "MatCreateShell");
  }
  check(MatShellSetContextDestroy(A, destroy_context), "MatShellSetContextDestroy");
  check(MatShellSetOperation(A, MATOP_MULT, compat::shell_operation(MatMult_Latke)), "MatShellSetOperation");
  check(MatShellSetOperation(A, MATOP_MULT_TRANSPOSE, compat::shell_operation(MatMultTranspose_Latke)),
        "MatShellSetOperation");
  check(MatShellSetOperation(A, MATOP_MULT_HERMITIAN_TRANSPOSE,
                             compat::shell_operation(MatMultHermitianTranspose_Latke)),
        "MatShellSetOperation");
  check(MatShellSetOperation(A, MATOP_VIEW, compat::shell_operation(MatView_Latke)), "MatShellSetOperation");
  check(MatShellSetOperation(A, MATOP_GETINFO, compat::shell_operation(MatGetInfo_Latke)), "MatShellSetOperation");
  if (c->op->has_diagonal(form))
    check(MatShellSetOperation(A, MATOP_GET_DIAGONAL, compat::shell_operation(MatGetDiagonal_Latke)),
          "MatShellSetOperation");
  // MatMatMult with dense matrices of vectors: the operator on sets of columns.
  check(MatShellSetMatProductOperation(A, MATPRODUCT_AB, nullptr, MatProductNumeric_Latke, nullptr, MATDENSE, MATDENSE),
        "MatShellSetMatProductOperation");
#if defined(PETSC_HAVE_CUDA)
  check(MatShellSetMatProductOperation(A, MATPRODUCT_AB, nullptr, MatProductNumeric_Latke, nullptr, MATDENSECUDA,
                                       MATDENSECUDA),
        "MatShellSetMatProductOperation");
#endif
  if (prefix && *prefix) check(MatSetOptionsPrefix(A, prefix), "MatSetOptionsPrefix");
  check(MatShellSetVecType(A, vector_type(*c->op, prefix).c_str()), "MatShellSetVecType");
  check(PetscObjectSetName(reinterpret_cast<PetscObject>(A), c->op->name()), "PetscObjectSetName");
  // Final assembly, as for any PETSc matrix: -mat_view (under the prefix) shows it here.
  check(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY), "MatAssemblyBegin");
  check(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY), "MatAssemblyEnd");
  return A;
}

MatContext& context_of(Mat A) {
  PetscBool latke = PETSC_FALSE;
  check(MatIsLatke(A, &latke), "MatIsLatke");
  require(latke == PETSC_TRUE, "the matrix is not one of Latke's (create it with MatCreateLatkeWilsonClover or "
                                "MatCreateLatkeStaggered)");
  return ctx(A);
}

}  // namespace latke::petsc

using namespace latke;
using namespace latke::petsc;

extern "C" {

PetscErrorCode MatIsLatke(Mat A, PetscBool* is_latke) {
  PetscBool shell = PETSC_FALSE;
  compat::ShellOperation f = nullptr;
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  LatkeCheckNull(is_latke);
  PetscCall(PetscObjectTypeCompare(reinterpret_cast<PetscObject>(A), MATSHELL, &shell));
  if (shell) PetscCall(MatShellGetOperation(A, MATOP_MULT, &f));
  *is_latke = shell && f == compat::shell_operation(MatMult_Latke) ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(0);
}

PetscErrorCode MatLatkeCreateCompanion(Mat A, LatkeOperatorForm form, Mat* B) {
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  LatkeCheckNull(B);
  PetscCall(guarded(comm_of(A), [&] { *B = companion(A, form, false); }));
  PetscFunctionReturn(0);
}

PetscErrorCode MatLatkeCreateReference(Mat A, LatkeOperatorForm form, Mat* B) {
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  LatkeCheckNull(B);
  PetscCall(guarded(comm_of(A), [&] { *B = companion(A, form, true); }));
  PetscFunctionReturn(0);
}

PetscErrorCode MatLatkeCreateFullVecs(Mat A, Vec* x, Vec* b) {
  PetscInt n = 0;
  VecType type = nullptr;
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  PetscCall(guarded(comm_of(A), [&] { n = context_of(A).op->local_size(LATKE_OPERATOR_FULL); }));
  PetscCall(MatGetVecType(A, &type));
  Vec* out[2] = {x, b};
  for (Vec* v : out) {
    if (!v) continue;
    PetscCall(VecCreate(comm_of(A), v));
    PetscCall(VecSetSizes(*v, n, PETSC_DETERMINE));
    PetscCall(VecSetType(*v, type));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode MatLatkePrepareSource(Mat A, Vec b, Vec bhat) {
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  LatkeCheckNull(b);
  LatkeCheckNull(bhat);
  LatkeOperatorForm form = LATKE_OPERATOR_FULL;
  PetscCall(guarded(comm_of(A), [&] { form = context_of(A).form; }));
  if (form == LATKE_OPERATOR_FULL) {
    PetscCall(VecCopy(b, bhat));
    PetscFunctionReturn(0);
  }
  PetscCall(guarded(comm_of(A), [&] {
    MatContext& c = context_of(A);
    VecField src(*c.op, b, Access::read, 0);
    VecField out(*c.op, bhat, Access::write, 1);
    require(src.full(), c.op->name(), ": MatLatkePrepareSource: the source must be a full-lattice vector");
    require_form(c, out, "the prepared source");
    c.op->prepare_source(out.field(), src.field());
    out.release();
    src.release();
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode MatLatkeReconstruct(Mat A, Vec xhat, Vec b, Vec x) {
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  LatkeCheckNull(xhat);
  LatkeCheckNull(b);
  LatkeCheckNull(x);
  LatkeOperatorForm form = LATKE_OPERATOR_FULL;
  PetscCall(guarded(comm_of(A), [&] { form = context_of(A).form; }));
  if (form == LATKE_OPERATOR_FULL) {
    PetscCall(VecCopy(xhat, x));
    PetscFunctionReturn(0);
  }
  PetscCall(guarded(comm_of(A), [&] {
    MatContext& c = context_of(A);
    VecField sol(*c.op, xhat, Access::read, 0);
    VecField src(*c.op, b, Access::read, 1);
    VecField out(*c.op, x, Access::write, 2);
    require_form(c, sol, "the even-odd solution");
    require(src.full() && out.full(), c.op->name(),
            ": MatLatkeReconstruct: the source and the solution must be full-lattice vectors");
    c.op->reconstruct(out.field(), sol.field(), src.field());
    out.release();
    src.release();
    sol.release();
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode MatLatkeGetApplications(Mat A, PetscInt* applications) {
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  LatkeCheckNull(applications);
  PetscCall(guarded(comm_of(A), [&] { *applications = static_cast<PetscInt>(context_of(A).applications); }));
  PetscFunctionReturn(0);
}

PetscErrorCode MatLatkeVecIsStaged(Mat A, Vec v, PetscBool* staged) {
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  LatkeCheckNull(v);
  LatkeCheckNull(staged);
  const PetscScalar* a = nullptr;
  PetscMemType mtype = PETSC_MEMTYPE_HOST;
  PetscCall(VecGetArrayReadAndMemType(v, &a, &mtype));
  bool in_place = false;
  const PetscErrorCode ierr =
      guarded(comm_of(A), [&] { in_place = used_in_place(*context_of(A).op, PetscMemTypeDevice(mtype), a); });
  PetscCall(VecRestoreArrayReadAndMemType(v, &a));
  PetscCall(ierr);
  *staged = in_place ? PETSC_FALSE : PETSC_TRUE;
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeGetStagingCounts(PetscInt* to_device, PetscInt* to_host) {
  PetscFunctionBeginUser;
  const StagingCounters s = staging_counters();
  if (to_device) *to_device = static_cast<PetscInt>(s.copies_to_device);
  if (to_host) *to_host = static_cast<PetscInt>(s.copies_to_host);
  PetscFunctionReturn(0);
}

}  // extern "C"
