#!/usr/bin/env python3
# The pion from Python, end to end: a quenched configuration, the 12 columns of a point-source
# propagator solved by PETSc's flexible GMRES preconditioned by Latke's multigrid (a petsc4py
# KSP with -pc_type latke_mg), the pion correlator and its effective mass, plotted.
#
#   python3 pion.py [--lattice 8,8,8,16] [--kappa 0.1345] [--csw 1.769] [--sweeps 200]
#                   [--out pion.png] [PETSc options, e.g. -ksp_monitor]
#   mpirun -np 2 python3 pion.py ...
#
# Exit status 0 only when every column converged. docs/python.md.
import argparse
import math
import sys

import petsc4py

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--lattice", default="8,8,8,16", help="X,Y,Z,T (default 8,8,8,16)")
parser.add_argument("--kappa", type=float, default=0.1345)
parser.add_argument("--csw", type=float, default=1.769)
parser.add_argument("--beta", type=float, default=6.0)
parser.add_argument("--sweeps", type=int, default=200, help="quenched sweeps from a hot start (default 200)")
parser.add_argument("--cache", default="", help="gauge cache directory (default: none)")
parser.add_argument("--out", default="pion.png", help="the figure (default pion.png; '' for none)")
args, petsc_args = parser.parse_known_args()
petsc4py.init([sys.argv[0]] + petsc_args)
from petsc4py import PETSc  # noqa: E402

import latke  # noqa: E402

latke.initialize()
lattice = tuple(int(v) for v in args.lattice.split(","))
U = latke.Gauge.quenched(lattice, beta=args.beta, sweeps=args.sweeps, cache=args.cache)
A = latke.WilsonClover(U, kappa=args.kappa, csw=args.csw)  # the even-odd system

ksp = PETSc.KSP().create(A.getComm())
ksp.setOperators(A)
ksp.setType("fgmres")
ksp.getPC().setType("latke_mg")
ksp.setTolerances(rtol=1e-10, max_it=500)
ksp.setFromOptions()

columns, converged, iterations = [], True, []
bhat, xhat = A.createVecRight(), A.createVecLeft()
for j in range(12):  # column 3 spin + color
    x, b = latke.full_vecs(A)
    latke.point_source(A, b, site=(0, 0, 0, 0), spin=j // 3, color=j % 3)
    latke.prepare_source(A, b, bhat)
    xhat.zeroEntries()
    ksp.solve(bhat, xhat)
    converged = converged and ksp.getConvergedReason() > 0
    iterations.append(ksp.getIterationNumber())
    latke.reconstruct(A, xhat, b, x)
    columns.append(x)

C = latke.meson_correlators(A, columns, t0=0, channels=("pion",))["pion"].real
T = lattice[3]
meff = [float("nan")] * (T // 2)
for t in range(T // 2 - 1):  # cosh effective mass by bisection
    r = C[t] / C[t + 1]
    lo, hi = 1e-8, 10.0
    f = lambda m: math.cosh(m * (T / 2 - t)) / math.cosh(m * (T / 2 - t - 1)) - r  # noqa: E731
    if f(lo) < 0 < f(hi):
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
        meff[t] = 0.5 * (lo + hi)

PETSc.Sys.Print(f"latke {'.'.join(map(str, latke.version()))} on {latke.backend()}: {args.lattice}, kappa "
                f"{args.kappa}, c_sw {args.csw}; KSP {ksp.getType()} + PC {ksp.getPC().getType()}: iterations "
                f"{min(iterations)}-{max(iterations)}, {'converged' if converged else 'NOT CONVERGED'}")
PETSc.Sys.Print("  t   C_pi(t)          m_eff(t)")
for t in range(T // 2 + 1):
    m = f"{meff[t]:.5f}" if t < len(meff) and not math.isnan(meff[t]) else "-"
    PETSc.Sys.Print(f"{t:3d}   {C[t]:.6e}     {m}")

if args.out and A.getComm().getRank() == 0:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    a.semilogy(range(T), C, "o-")
    a.set_xlabel("t")
    a.set_ylabel("C_pi(t)")
    b.plot(range(len(meff)), meff, "o")
    b.set_xlabel("t")
    b.set_ylabel("m_eff(t)")
    fig.suptitle(f"pion, {args.lattice}, kappa {args.kappa}, c_sw {args.csw}")
    fig.tight_layout()
    fig.savefig(args.out)
    PETSc.Sys.Print(f"wrote {args.out}")
sys.exit(0 if converged else 1)
