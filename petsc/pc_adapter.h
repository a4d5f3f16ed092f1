// One PETSc face for both of Latke's preconditioners (latke_mg, latke_schwarz): the operation
// table of the PCRegister'ed type, whose context is pc->data, and the PCSHELL form, whose
// context is the shell's. A context type C provides, found by argument-dependent lookup,
//   void set_up(C&, Mat pmat);  PetscErrorCode view(C&, PetscViewer);
// the members `k` (the preconditioner, null until set up: k->apply(out, in), k->apply_set for
// PCMatApply's dense columns; PCApplyTranspose goes through the matrix's hermiticity), `op` (the
// matrix's ShellOperator), `form` (the matrix's), `applies` (a count), `columns` (ColumnSets: PCMatApply's fields), and
// `static constexpr const char* type` (its PC type name). PETSc's vectors reach k as Latke fields (VecField: in place
// or staged). PCRegister'ed types fill the PC's operation table, which lives in PETSc's private pcimpl.h (the same
// fields in 3.18 and 3.26).
#pragma once

#include <petsc/private/pcimpl.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

#include "src/core/error.h"
#include "src/fields/blas.h"
#include "petsc/c_api.h"
#include "petsc/mat_shell.h"
#include "petsc/pc_flexible.h"

namespace latke::petsc {

template <class C>
struct PCAdapter {
  static MPI_Comm comm(PC pc) { return PetscObjectComm(reinterpret_cast<PetscObject>(pc)); }
  /// A PETSc call's error as a Latke error naming the call.
  static void checked(PetscErrorCode ierr, const char* call) {
    require(ierr == 0, call, " failed (PETSc error ", static_cast<int>(ierr), ")");
  }
  /// The context of the PCRegister'ed type.
  static C& registered(PC pc) { return *static_cast<C*>(pc->data); }
  /// The context of the PCSHELL form.
  static C& shell(PC pc) {
    void* c = nullptr;
    PCShellGetContext(pc, &c);
    return *static_cast<C*>(c);
  }

  template <C& (*of)(PC)>
  static PetscErrorCode op_apply(PC pc, Vec x, Vec y) {
    PetscFunctionBeginUser;
    PetscCall(guarded(comm(pc), [&] {
      C& c = of(pc);
      require(c.k != nullptr, "the ", C::type, " preconditioner is not set up");
      VecField in(*c.op, x, Access::read, 0);
      VecField out(*c.op, y, Access::write, 1);
      c.k->apply(out.field(), in.field());
      out.release();
      in.release();
      ++c.applies;
    }));
    PetscFunctionReturn(0);
  }
  /// y = K^T x (PCApplyTranspose; KSPSolveTranspose, and conj'ed around it PCApplyHermitianTranspose)
  /// as conj(Gamma K Gamma^-1 conj(x)), with the matrix's hermiticity M^dag = Gamma M Gamma^-1
  /// (ShellOperator::hermiticity; Wilson-clover: gamma_5, or gamma_5 A_pp for the symmetric
  /// Schur complement). For K = M^-1 this is M^-T; the preconditioners are built to respect
  /// the relation as M^-1 does (their smoothers' and block solves' inner products make them do
  /// so only approximately, as they make them variable).
  template <C& (*of)(PC)>
  static PetscErrorCode op_apply_transpose(PC pc, Vec x, Vec y) {
    Vec t = nullptr;
    PetscFunctionBeginUser;
    PetscCall(VecDuplicate(x, &t));
    PetscCall(VecCopy(x, t));
    PetscCall(VecConjugate(t));
    const PetscErrorCode ierr = guarded(comm(pc), [&] {
      C& c = of(pc);
      require(c.k != nullptr, "the ", C::type, " preconditioner is not set up");
      VecField in(*c.op, t, Access::read, 0);
      ColorSpinorField g(in.field().lattice_ptr(), in.field().param());
      c.op->hermiticity(c.form, g, in.field(), true);
      in.release();
      ColorSpinorField k(g.lattice_ptr(), g.param());
      c.k->apply(k, g);
      VecField out(*c.op, y, Access::write, 1);
      c.op->hermiticity(c.form, out.field(), k, false);
      out.release();
      ++c.applies;
    });
    PetscCall(VecDestroy(&t));
    PetscCall(ierr);
    PetscCall(VecConjugate(y));
    PetscFunctionReturn(0);
  }
  /// Y = K X column by column of two dense matrices (PCMatApply; KSPMatSolve): the columns in
  /// sets of at most blas::set_max, each set through k->apply_set at once (the multigrid cycles
  /// the set together).
  template <C& (*of)(PC)>
  static PetscErrorCode op_matapply(PC pc, Mat X, Mat Y) {
    PetscFunctionBeginUser;
    PetscCall(guarded(comm(pc), [&] {
      C& c = of(pc);
      require(c.k != nullptr, "the ", C::type, " preconditioner is not set up");
      apply_to_dense_columns(*c.op, X, Y, c.columns,
                             [&](std::vector<ColorSpinorField>& out, const std::vector<ColorSpinorField>& in) {
                               c.k->apply_set(out, in);
                               c.applies += static_cast<long>(in.size());
                             });
    }));
    PetscFunctionReturn(0);
  }
  template <C& (*of)(PC)>
  static PetscErrorCode op_view(PC pc, PetscViewer viewer) {
    return view(of(pc), viewer);
  }
  template <C& (*of)(PC)>
  static PetscErrorCode op_destroy(PC pc) {
    PetscFunctionBeginUser;
    if (of == registered && methods) PetscCall(methods(pc, false));
    delete &of(pc);
    if (of == registered) pc->data = nullptr;
    PetscFunctionReturn(0);
  }
  /// The type's setters and getters (PCLatkeMGSetLevels_C, ...): methods(pc, true) composes them
  /// on a new PC of the type (PETSc's PetscTryMethod pattern), methods(pc, false) takes them off
  /// when it is destroyed or changes type. Set once, by the type's PCCreate.
  static inline PetscErrorCode (*methods)(PC, bool) = nullptr;
  /// A setter: f changes the registered context (or fails naming its argument), and the PC is
  /// set up again, with the change, at the next PCSetUp.
  template <typename F>
  static PetscErrorCode change(PC pc, F&& f) {
    PetscFunctionBeginUser;
    PetscCall(guarded(comm(pc), [&] { f(registered(pc)); }));
    pc->setupcalled = decltype(pc->setupcalled){};
    PetscFunctionReturn(0);
  }
  static PetscErrorCode op_presolve(PC pc, KSP ksp, Vec, Vec) { return require_flexible_ksp(pc, ksp, C::type); }

  /// @brief Fill the operation table of a PCRegister'ed type (PCCreate_X) with a new context:
  /// set-up by `setup` (PCSetUp_X), options by `setfromoptions` where given; compose `methods`
  /// (the setters) where given.
  template <typename SetFromOptions = std::nullptr_t>
  static PetscErrorCode install(PC pc, PetscErrorCode (*setup)(PC), SetFromOptions setfromoptions = nullptr,
                                PetscErrorCode (*compose)(PC, bool) = nullptr) {
    PetscFunctionBeginUser;
    pc->data = new C;
    pc->ops->setup = setup;
    pc->ops->apply = op_apply<registered>;
    pc->ops->matapply = op_matapply<registered>;
    pc->ops->applytranspose = op_apply_transpose<registered>;
    pc->ops->view = op_view<registered>;
    pc->ops->presolve = op_presolve;
    pc->ops->destroy = op_destroy<registered>;
    if constexpr (!std::is_same_v<SetFromOptions, std::nullptr_t>) pc->ops->setfromoptions = setfromoptions;
    methods = compose;
    if (methods) PetscCall(methods(pc, true));
    PetscFunctionReturn(0);
  }

  /// @brief Make pc a PCSHELL named `name` around a new context that `configure` prepares and
  /// that is set up on A; nothing changes on pc when that fails.
  static PetscErrorCode make_shell(PC pc, Mat A, const char* name, const std::function<void(C&)>& configure) {
    PetscFunctionBeginUser;
    auto c = std::make_unique<C>();
    PetscCall(guarded(comm(pc), [&] {
      configure(*c);
      set_up(*c, A);
    }));
    PetscCall(PCSetType(pc, PCSHELL));
    PetscCall(PCSetOperators(pc, A, A));
    PetscCall(PCShellSetContext(pc, c.release()));
    PetscCall(PCShellSetApply(pc, op_apply<shell>));
    PetscCall(PCShellSetMatApply(pc, op_matapply<shell>));
    PetscCall(PCShellSetApplyTranspose(pc, op_apply_transpose<shell>));
    PetscCall(PCShellSetView(pc, op_view<shell>));
    PetscCall(PCShellSetPreSolve(pc, op_presolve));
    PetscCall(PCShellSetDestroy(pc, op_destroy<shell>));
    PetscCall(PCShellSetName(pc, name));
    PetscFunctionReturn(0);
  }
};

}  // namespace latke::petsc
