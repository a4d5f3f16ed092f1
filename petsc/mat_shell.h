// The C++ side of Latke's PETSc matrices: what a Latke MATSHELL holds and how its vectors
// become Latke fields (wrapped in place, or staged through pinned buffers). Operators (mat_wilson_clover.cpp, mat_staggered.cpp)
// implement ShellOperator; the MATSHELL operations themselves are generic (mat_shell.cpp).
#pragma once

#include <petscmat.h>

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "latke/latke.h"
#include "operators/linear_operator.h"
#include "petsc/c_api.h"
#include "petsc/gauge_handle.h"
#include "src/core/complex.h"
#include "src/core/lattice.h"
#include "src/core/memory.h"
#include "src/fields/color_spinor_field.h"

namespace latke {
class Preconditioner;
}

namespace latke::petsc {

/// An operator behind Latke MATSHELLs. Matrices of different forms may share one.
class ShellOperator {
 public:
  virtual ~ShellOperator() = default;

  /// "LatkeWilsonClover", for views and errors.
  virtual const char* name() const = 0;
  virtual const std::shared_ptr<const Lattice>& lattice() const = 0;
  virtual int nspin() const = 0;
  virtual int ncolor() const = 0;
  virtual Backend backend() const = 0;
  /// The parity even-odd forms act on.
  virtual int parity() const = 0;
  /// The phases of hops that wrap around the lattice, per direction (conventions.h).
  virtual std::array<Complex<double>, 4> boundary_phases() const = 0;

  /// out = Op in (or its adjoint) for the form: full fields, or fields of parity().
  virtual void apply(LatkeOperatorForm form, ColorSpinorField& out, const ColorSpinorField& in, bool dagger) = 0;
  /// @brief out[k] = Op in[k] for a set of double fields of the form's shape (MatMatMult): in one
  /// pass over the operator's fields where it has a set application, else one by one.
  virtual void apply_set(LatkeOperatorForm form, std::vector<ColorSpinorField>& out,
                         const std::vector<ColorSpinorField>& in);
  /// bhat (parity()) from the full source b.
  virtual void prepare_source(ColorSpinorField& bhat, const ColorSpinorField& b) = 0;
  /// The full solution x from xhat (parity()) and the full source b.
  virtual void reconstruct(ColorSpinorField& x, const ColorSpinorField& xhat, const ColorSpinorField& b) = 0;
  /// Whether diagonal() is defined for the form.
  virtual bool has_diagonal(LatkeOperatorForm form) const = 0;
  /// The diagonal of the form as a field of its shape.
  virtual void diagonal(LatkeOperatorForm form, ColorSpinorField& d) = 0;
  /// @brief For preconditioners built on the full operator (multigrid) that precondition the
  /// even-odd form: the parity() part f_p of the full-lattice right-hand side f = (f_p, 0)
  /// whose solution's parity() part solves the even-odd system with right-hand side r_p
  /// (prepare_source(f) = r_p). Returns r_p itself where f_p = r_p (asymmetric Schur
  /// complement), else scratch, which receives f_p. Fields of parity() in one precision
  /// (double or single). Operators without such a relation fail naming themselves.
  virtual const ColorSpinorField& schur_rhs_parity(ColorSpinorField& scratch, const ColorSpinorField& r_p);
  /// @brief out = Gamma in (inverse: Gamma^-1 in) for the form's hermiticity relation
  /// Op^dag = Gamma Op Gamma^-1, through which preconditioners built to respect it take their
  /// transposes (PCApplyTranspose). Fields of the form's shape, in double or single; out may not
  /// be in. Operators without such a relation fail naming themselves.
  virtual void hermiticity(LatkeOperatorForm form, ColorSpinorField& out, const ColorSpinorField& in, bool inverse);
  /// @brief The same operator with every field held in double precision, built anew from the
  /// links (what an independent residual check applies), or null when this one is double.
  virtual std::shared_ptr<ShellOperator> in_double() const = 0;
  /// Flops of one application of the form (QUDA's counting), for summaries.
  virtual double flops(LatkeOperatorForm form) const = 0;
  /// Lines describing the operator, for MatView.
  virtual std::string describe(LatkeOperatorForm form) const = 0;
  /// Sites one row of the form couples to, the row's own included (the stencil's reach: for a
  /// Schur complement, two hops), for MatGetInfo's nonzero counts.
  virtual int coupled_sites(LatkeOperatorForm form) const = 0;
  /// Bytes of the operator's fields on its backend (links, clover terms), for MatGetInfo.
  virtual std::size_t bytes() const = 0;
  /// @brief The operator of a form for native solvers and preconditioners, with its fields in
  /// precision p; domain-local (Dirichlet blocks, no communication) when block is non-zero.
  /// Made once per (form, precision, block) and kept, so repeated solves and preconditioner
  /// set-ups on one matrix do not rebuild links and clover terms.
  std::shared_ptr<LinearOperator> linear_operator(LatkeOperatorForm form, Precision p, const Coords& block);

  /// The field shape of the form's vectors (full, or parity()).
  SpinorParam field_param(LatkeOperatorForm form) const;
  /// Complex numbers per rank in a vector of the form.
  PetscInt local_size(LatkeOperatorForm form) const;

  /// Scratch device fields a staged vector goes through, one per slot and shape.
  ColorSpinorField& stage_field(int slot, bool full);
  PinnedStager& stager() { return stager_; }

 protected:
  /// A new LinearOperator for linear_operator(); shares this operator's fields where
  /// precision and blocking are the same.
  virtual std::unique_ptr<LinearOperator> make_linear_operator(LatkeOperatorForm form, Precision p,
                                                               const Coords& block) = 0;

 private:
  std::map<std::tuple<int, int, Coords>, std::shared_ptr<LinearOperator>> linear_;
  std::unique_ptr<ColorSpinorField> stage_[3][2];
  PinnedStager stager_;
};

/// The fields dense matrices' columns go through (apply_to_dense_columns), kept between calls:
/// a loop of MatMatMult or PCMatApply (a block Krylov method's) allocates them once, not once
/// per call with a device synchronization at each free. Freed with their matrix or PC.
struct ColumnSets {
  std::vector<ColorSpinorField> in, out;
};

/// The context of a Latke MATSHELL: its operator and form.
struct MatContext {
  std::shared_ptr<ShellOperator> op;
  LatkeOperatorForm form = LATKE_OPERATOR_FULL;
  long applications = 0;  ///< MatMult and MatMultHermitianTranspose calls
  /// MatLatkeSolve's multigrid preconditioners, per options prefix: built at the first solve
  /// that asks for one, reused by the next (the operator of a Latke matrix does not change),
  /// built again when the multigrid options under the prefix change.
  struct NativePreconditioner {
    std::shared_ptr<Preconditioner> k;
    std::string options;  ///< the multigrid options it was built with
  };
  std::map<std::string, NativePreconditioner> native_mg;
  ColumnSets columns;  ///< MatMatMult's
};

/// @brief A MATSHELL for op in the given form (sizes, operations, vector type, prefix).
Mat create_shell(std::shared_ptr<ShellOperator> op, LatkeOperatorForm form, const char* prefix);
/// @brief The context of a Latke matrix; fails naming the matrix type otherwise.
MatContext& context_of(Mat A);

enum class Access { read, write, read_write };

/// A PETSc vector seen as a Latke field on the operator's backend, for one operation: wrapped
/// in place when the vector's memory is where the operator runs (and suitably aligned),
/// otherwise staged through pinned buffers into a scratch field (counted in LatkeStage).
/// release() writes a staged field back and returns the array to PETSc.
class VecField {
 public:
  /// @param slot which scratch field to stage into (0..2), distinct per vector of one call.
  VecField(ShellOperator& op, Vec v, Access access, int slot);
  ~VecField();
  VecField(const VecField&) = delete;
  VecField& operator=(const VecField&) = delete;
  ColorSpinorField& field() { return *field_; }
  bool full() const { return full_; }
  /// Whether the vector went through a scratch field (which the next VecField of its slot reuses).
  bool staged() const { return staged_; }
  void release();

 private:
  ShellOperator& op_;
  Vec v_;
  Access access_;
  PetscScalar* array_ = nullptr;
  bool device_memory_ = false, staged_ = false, full_ = false, released_ = false;
  std::unique_ptr<ColorSpinorField> field_;
};

/// @brief Y = apply(X) for dense matrices of op's vectors (MatMatMult, PCMatApply): the columns
/// in sets of at most blas::set_max, each set copied into `sets` (made again only when their
/// count or shape differs), given to apply(out, in) at once, and copied back. check(f) sees each
/// input column first.
void apply_to_dense_columns(
    ShellOperator& op, Mat X, Mat Y, ColumnSets& sets,
    const std::function<void(std::vector<ColorSpinorField>& out, const std::vector<ColorSpinorField>& in)>& apply,
    const std::function<void(VecField& column)>& check = {});

/// @brief Whether a vector of local size n of op is full (true) or of its parity (false);
/// fails naming the size otherwise.
bool is_full_vector(const ShellOperator& op, PetscInt n, const char* what);

// ---- helpers the operators' MATSHELLs share ------------------------------------------------

/// @brief The storage precision named by the C API's enum; fails naming the value otherwise.
Precision precision_of(LatkePrecision p);

/// @brief Boundary phases from the C API's array, then -latke_boundary (signs, each 1 or -1)
/// and -latke_twist (extra phases e^{i pi a}) as read (empty: not given); checks modulus one.
std::array<Complex<double>, 4> boundary_phases(const PetscScalar given[4], const std::vector<double>& boundary,
                                               const std::vector<double>& twist, const std::string& prefix);

/// Copies of double-precision vectors in an operator's own precision (the fields themselves
/// when that is double), kept between applications: slot k for the k-th vector of a call.
class PrecisionCopies {
 public:
  explicit PrecisionCopies(Precision p) : precision_(p) {}
  /// @brief f in the operator's precision, copied unless copy is false (an output).
  ColorSpinorField& inner(const ColorSpinorField& f, int slot, bool copy = true);
  /// @brief Write an output computed in inner() back to the double field f.
  void outer(ColorSpinorField& f, const ColorSpinorField& inner);
  Precision precision() const { return precision_; }

 private:
  Precision precision_;
  std::unique_ptr<ColorSpinorField> low_[3][2], held_[3];
};

/// A ShellOperator whose own fields are held in one storage precision while PETSc's vectors
/// are double: apply, prepare_source and reconstruct copy their fields into that precision,
/// call the operator's *_stored form, and copy the result back. Wilson-clover and staggered
/// derive from it.
class StoredShell : public ShellOperator {
 public:
  /// What the operator is: its name for views and errors, its field shape and its backend.
  struct Kind {
    const char* name;
    int nspin, ncolor;
    Backend backend;
  };
  StoredShell(const Kind& kind, std::shared_ptr<const Lattice> lattice, int parity, Precision storage)
      : lattice_(std::move(lattice)), parity_(parity), kind_(kind), copies_(storage) {}
  const char* name() const final { return kind_.name; }
  int nspin() const final { return kind_.nspin; }
  int ncolor() const final { return kind_.ncolor; }
  Backend backend() const final { return kind_.backend; }
  const std::shared_ptr<const Lattice>& lattice() const final { return lattice_; }
  int parity() const final { return parity_; }
  void apply(LatkeOperatorForm form, ColorSpinorField& out, const ColorSpinorField& in, bool dagger) final;
  /// The set through the form's LinearOperator in the storage precision where it applies sets.
  void apply_set(LatkeOperatorForm form, std::vector<ColorSpinorField>& out,
                 const std::vector<ColorSpinorField>& in) final;
  void prepare_source(ColorSpinorField& bhat, const ColorSpinorField& b) final;
  void reconstruct(ColorSpinorField& x, const ColorSpinorField& xhat, const ColorSpinorField& b) final;

 protected:
  /// The same three on fields in the storage precision.
  virtual void apply_stored(LatkeOperatorForm form, ColorSpinorField& out, const ColorSpinorField& in,
                            bool dagger) = 0;
  virtual void prepare_stored(ColorSpinorField& bhat, const ColorSpinorField& b) = 0;
  virtual void reconstruct_stored(ColorSpinorField& x, const ColorSpinorField& xhat, const ColorSpinorField& b) = 0;

  std::shared_ptr<const Lattice> lattice_;
  int parity_;

 private:
  Kind kind_;
  PrecisionCopies copies_;
  ColumnSets low_;  ///< apply_set's fields in the storage precision, kept between calls
};

}  // namespace latke::petsc
