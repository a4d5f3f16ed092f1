"""Latke from Python: its operators as petsc4py matrices, its preconditioners as PETSc PC types.

    import petsc4py; petsc4py.init(sys.argv)
    from petsc4py import PETSc
    import latke
    latke.initialize()                                   # registers latke_mg and latke_schwarz
    U = latke.Gauge.quenched((8, 8, 8, 16), beta=6.0, sweeps=200)   # or Gauge.load(path)
    A = latke.WilsonClover(U, kappa=0.1345, csw=1.769)  # a petsc4py Mat (the even-odd system)
    x, b = latke.full_vecs(A)
    latke.point_source(A, b, site=(0, 0, 0, 0), spin=0, color=0)
    ...                                                  # KSP with -pc_type latke_mg, as in C
    psi = latke.to_numpy(A, x)                           # [t, z, y, x, spin, color] of this rank

The C API (include/latke/latke.h) is called through ctypes on the same PETSc library that
petsc4py loaded; Latke's matrices and vectors come back as petsc4py objects (they are handed
over through PetscObjectCompose/query on a carrier object, which petsc4py wraps in the right
type). Every call checks PETSc's error code and raises latke.Error, PETSc's message having
been printed by PETSc. docs/python.md.
"""
import ctypes
import os

import numpy as np
from petsc4py import PETSc

__all__ = ["Error", "initialize", "version", "backend", "Gauge", "WilsonClover", "Staggered", "full_vecs",
           "prepare_source", "reconstruct", "point_source", "wall_source", "noise_source", "to_numpy", "from_numpy",
           "meson_correlators", "MESON_CHANNELS", "solve", "Smearer"]


class Error(RuntimeError):
    """A Latke or PETSc call failed (PETSc printed why)."""


_lib = None
_Int = ctypes.c_int64 if np.dtype(PETSc.IntType).itemsize == 8 else ctypes.c_int32
_Real = ctypes.c_double
_ptr = ctypes.c_void_p


class _Scalar(ctypes.Structure):
    _fields_ = [("re", ctypes.c_double), ("im", ctypes.c_double)]


class _WilsonCloverParams(ctypes.Structure):
    _fields_ = [("mass", _Real), ("kappa", _Real), ("csw", _Real), ("boundary_phase", _Scalar * 4),
                ("schur", ctypes.c_int), ("parity", _Int), ("precision", ctypes.c_int), ("reconstruct", _Int)]


class _StaggeredParams(ctypes.Structure):
    _fields_ = [("mass", _Real), ("type", ctypes.c_int), ("u0", _Real), ("boundary_phase", _Scalar * 4),
                ("parity", _Int), ("precision", ctypes.c_int), ("reconstruct", _Int)]


class _SolverParams(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("tol", _Real), ("max_it", _Int), ("sloppy", ctypes.c_int),
                ("delta", _Real), ("restart", _Int), ("restart_drop", _Real), ("initial_guess_nonzero", ctypes.c_int)]


class _SolverStats(ctypes.Structure):
    _fields_ = [("iterations", _Int), ("reliable_updates", _Int), ("outer_applications", _Int),
                ("sloppy_applications", _Int), ("fallback_at", _Int), ("restarts", _Int), ("true_residual", _Real),
                ("seconds", _Real), ("gflops", _Real), ("converged", ctypes.c_int), ("pc_setup_seconds", _Real)]


class _GaugeFixInfo(ctypes.Structure):
    _fields_ = [("iterations", _Int), ("theta", _Real), ("functional", _Real), ("converged", ctypes.c_int),
                ("method", ctypes.c_int)]


_FORMS = {"full": 0, "even_odd": 1}
_PRECISIONS = {"double": 0, "single": 1, "half": 2}
_SOLVERS = {"cg": 0, "cgne": 1, "cgnr": 2, "bicgstab": 3, "gcr": 4, "mr": 5}
MESON_CHANNELS = ("pion", "pion_a4", "a4_pion", "rho", "a0", "a1", "b1")
_LINK_SMEARING = {"none": 0, "ape": 1, "stout": 2}
_QUARK_SMEARING = {"none": 0, "wuppertal": 1, "gaussian": 2}
_GAUGE_FIXING = {"coulomb": 0, "landau": 1}
_GAUGE_FIXING_METHODS = {"auto": 0, "fourier": 1, "overrelax": 2}


def _library_path():
    """$LATKE_LIBRARY, else the library this package was built or installed with (_library.py)."""
    path = os.environ.get("LATKE_LIBRARY")
    if path:
        return path
    try:
        from latke._library import LIBRARY
    except ImportError:
        raise Error("latke: the Latke library is unknown: set LATKE_LIBRARY to liblatke.so, or use the package "
                    "from Latke's build tree (build/python) or installation") from None
    return LIBRARY


def _check(code, what):
    if code != 0:
        raise Error(f"latke: {what} failed (PETSc error {code})")


def _call(name, *args):
    _check(getattr(_lib, name)(*args), name)


def _handle(obj):
    return _ptr(obj.handle)


def _comm(comm):
    """The C MPI_Comm of a petsc4py Comm (through its Fortran handle)."""
    return _ptr(_lib.MPI_Comm_f2c(comm.fortran))


def _adopt(pointer, comm):
    """A petsc4py object for a C PETSc object this module created (the reference moves to it)."""
    carrier = PETSc.Vec().createSeq(1, comm=PETSc.COMM_SELF)
    _call("PetscObjectCompose", _handle(carrier), b"latke_adopt", pointer)
    obj = carrier.query("latke_adopt")  # petsc4py wraps it in its own type, one reference more
    _call("PetscObjectCompose", _handle(carrier), b"latke_adopt", None)
    carrier.destroy()
    _call("PetscObjectDereference", pointer)  # the creator's reference: petsc4py's is the one left
    return obj


def initialize():
    """Load the library and run LatkeInitialize (after petsc4py.init): registers the PC types
    latke_mg and latke_schwarz and reads -latke_backend and -latke_grid. Idempotent."""
    global _lib
    if _lib is not None:
        return
    PETSc.Sys.getVersion()  # PETSc is initialized (petsc4py.init has run) and loaded
    lib = ctypes.CDLL(_library_path(), mode=ctypes.RTLD_GLOBAL)
    lib.PetscObjectCompose.argtypes = [_ptr, ctypes.c_char_p, _ptr]
    lib.PetscObjectDereference.argtypes = [_ptr]
    lib.MPI_Comm_f2c.restype = _ptr
    lib.MPI_Comm_f2c.argtypes = [ctypes.c_int]
    _lib = lib
    _call("LatkeInitialize")


def version():
    """(major, minor, patch) of the library."""
    v = [ctypes.c_int(), ctypes.c_int(), ctypes.c_int()]
    _call("LatkeGetVersion", *[ctypes.byref(x) for x in v])
    return tuple(x.value for x in v)


def backend():
    """'cuda' or 'cpu': where Latke's operators run."""
    name = ctypes.c_char_p()
    _call("LatkeGetBackend", ctypes.byref(name))
    return name.value.decode()


def _ints(values, n, what):
    values = tuple(int(v) for v in values)
    if len(values) != n:
        raise Error(f"latke: {what} {values}: expected {n} integers")
    return (_Int * n)(*values)


class _Owned:
    """An object of the C API held by handle self._h, freed by _destroy_fn with destroy() or when
    garbage-collected."""

    _destroy_fn = None
    _h = None

    def destroy(self):
        if self._h and _lib is not None:
            _call(self._destroy_fn, ctypes.byref(self._h))
        self._h = None

    def __del__(self):
        try:
            self.destroy()
        except Exception:
            pass


class Gauge(_Owned):
    """A gauge configuration on a distributed lattice (LatkeGauge). Destroyed with destroy() or
    when garbage-collected."""

    _options = 0
    _destroy_fn = "LatkeGaugeDestroy"

    def __init__(self, handle, comm):
        self._h = handle
        self.comm = comm

    @classmethod
    def _from_options(cls, options, comm):
        # The C API reads gauge sources from the options database: under a prefix of its own.
        prefix = f"latke_py{Gauge._options}_"
        Gauge._options += 1
        db = PETSc.Options()
        for k, v in options.items():
            db.setValue(f"-{prefix}{k}", v)
        h = _ptr()
        try:
            _call("LatkeGaugeCreateFromOptions", _comm(comm), prefix.encode(), ctypes.byref(h))
        finally:
            for k in options:
                db.delValue(f"-{prefix}{k}")
        return cls(h, comm)

    @classmethod
    def load(cls, path, comm=PETSc.COMM_WORLD, grid=None):
        """A NERSC or ILDG file (format recognized, checksums and SU(3) checked), on the process
        grid `grid` (None: -latke_grid or a chosen one)."""
        h = _ptr()
        g = _ints(grid, 4, "grid") if grid is not None else None
        _call("LatkeGaugeLoad", _comm(comm), str(path).encode(), g, ctypes.byref(h))
        return cls(h, comm)

    def save(self, path, format="nersc"):
        """Write it as a NERSC or ILDG file (double precision; atomically). Collective."""
        _call("LatkeGaugeSave", self._h, str(path).encode(), format.encode())

    def links(self):
        """This rank's links as numpy [t, z, y, x, mu, row, col] (mu = x, y, z, t)."""
        _, local, _ = self.lattice()
        out = np.zeros(tuple(reversed(local)) + (4, 3, 3), dtype=np.complex128)
        _call("LatkeGaugeGetLinks", self._h, out.ctypes.data_as(_ptr))
        return out

    def plaquette(self):
        """The average plaquette Re tr U_P / 3 over the lattice. Collective."""
        p = _Real()
        _call("LatkeGaugeGetPlaquette", self._h, ctypes.byref(p))
        return p.value

    @classmethod
    def quenched(cls, lattice, beta=6.0, sweeps=200, seed=1, cache=None, comm=PETSc.COMM_WORLD):
        """A thermalized quenched configuration from Latke's generator (cached when cache, a
        directory, is given; "" or None: not cached)."""
        opts = {"latke_gauge": "quenched", "latke_lattice": ",".join(str(int(v)) for v in lattice),
                "latke_gauge_beta": repr(float(beta)), "latke_gauge_sweeps": str(int(sweeps)),
                "latke_gauge_seed": str(int(seed)), "latke_gauge_cache": cache or ""}
        return cls._from_options(opts, comm)

    @classmethod
    def random(cls, lattice, seed=1, spread=-1.0, grid=None, comm=PETSc.COMM_WORLD):
        """Reproducible random links (spread < 0: random SU(3); spread = 0: the unit gauge)."""
        h = _ptr()
        g = _ints(grid, 4, "grid") if grid is not None else None
        _call("LatkeGaugeCreateRandom", _comm(comm), _ints(lattice, 4, "lattice"), g, _Int(seed),
              _Real(spread), ctypes.byref(h))
        return cls(h, comm)

    def evolved(self, sweeps, beta=None, seed=None):
        """The configuration `sweeps` sweeps further along its quenched chain."""
        h = _ptr()
        default = -2  # PETSC_DEFAULT
        _call("LatkeGaugeCreateEvolved", self._h, _Real(default if beta is None else beta),
              _Int(default if seed is None else seed), _Int(sweeps), ctypes.byref(h))
        return Gauge(h, self.comm)

    def smeared(self, kind="ape", steps=10, alpha=0.5, spatial=True):
        """A new gauge of these links smeared (LatkeGaugeCreateSmeared): kind "ape" (alpha) or
        "stout" (rho = alpha), `steps` steps; spatial=True smears the x, y, z links only."""
        h = _ptr()
        _call("LatkeGaugeCreateSmeared", self._h, _choice(_LINK_SMEARING, kind, "link smearing"), _Int(steps),
              _Real(alpha), ctypes.c_int(1 if spatial else 0), ctypes.byref(h))
        return Gauge(h, self.comm)

    def gauge_fixed(self, kind="coulomb", tol=1e-12, max_iter=10000, method="auto", omega=1.7, alpha=1.0):
        """(a new gauge of these links in the Coulomb or Landau gauge, {iterations, theta,
        functional, converged, method}) (LatkeGaugeCreateGaugeFixed): method "fourier"
        (Fourier-accelerated conjugate gradient, first trial step alpha), "overrelax" (omega) or
        "auto" (Fourier unless a local extent has a prime factor above 13); raises unless
        theta < tol."""
        h, info = _ptr(), _GaugeFixInfo()
        _call("LatkeGaugeCreateGaugeFixed", self._h, _choice(_GAUGE_FIXING, kind, "gauge fixing"),
              _choice(_GAUGE_FIXING_METHODS, method, "gauge fixing method"), _Real(tol), _Int(max_iter),
              _Real(omega), _Real(alpha), ctypes.byref(h), ctypes.byref(info))
        fixed = Gauge(h, self.comm)
        if not info.converged:
            raise Error(f"latke.Gauge.gauge_fixed: {kind} gauge fixing did not converge: theta {info.theta:.3g} after "
                        f"{info.iterations} iterations, expected below {tol}")
        return fixed, {"iterations": int(info.iterations), "theta": info.theta, "functional": info.functional,
                       "converged": True, "method": "fourier" if info.method == 1 else "overrelax"}

    def lattice(self):
        """(global extents, local extents, process grid), each a tuple of 4."""
        arrays = [(_Int * 4)() for _ in range(3)]
        _call("LatkeGaugeGetLattice", self._h, *arrays)
        return tuple(tuple(int(v) for v in a) for a in arrays)



def WilsonClover(gauge, kappa=None, mass=None, csw=1.0, form="even_odd", precision="double", prefix=None):
    """A Latke Wilson-clover matrix (petsc4py Mat): kappa (M_kappa = 2 kappa M) or mass; the
    options database still overrides under the matrix's prefix (latke.h)."""
    if (kappa is None) == (mass is None):
        raise Error("latke.WilsonClover: give kappa or mass, one of them")
    p = _WilsonCloverParams()
    _call("LatkeWilsonCloverParamsDefault", ctypes.byref(p))
    if kappa is not None:
        p.kappa = float(kappa)
    else:
        p.mass = float(mass)
    p.csw = float(csw)
    p.precision = _choice(_PRECISIONS, precision, "precision")
    a = _ptr()
    _call("MatCreateLatkeWilsonClover", gauge._h, _choice(_FORMS, form, "form"), ctypes.byref(p),
          prefix.encode() if prefix else None, ctypes.byref(a))
    return _remember(_adopt(a, gauge.comm), gauge, 4)


def Staggered(gauge, mass, kind="asqtad", u0=1.0, form="even_odd", precision="double", prefix=None):
    """A Latke staggered matrix (naive or asqtad; even_odd: the normal operator 4m^2 - D D)."""
    p = _StaggeredParams()
    _call("LatkeStaggeredParamsDefault", ctypes.byref(p))
    p.mass = float(mass)
    p.type = _choice({"naive": 0, "asqtad": 1}, kind, "staggered kind")
    p.u0 = float(u0)
    p.precision = _choice(_PRECISIONS, precision, "precision")
    a = _ptr()
    _call("MatCreateLatkeStaggered", gauge._h, _choice(_FORMS, form, "form"), ctypes.byref(p),
          prefix.encode() if prefix else None, ctypes.byref(a))
    return _remember(_adopt(a, gauge.comm), gauge, 1)


def _choice(table, value, what):
    if value not in table:
        raise Error(f"latke: {what} {value!r}: expected one of {', '.join(table)}")
    return table[value]


def full_vecs(A):
    """(x, b): full-lattice vectors of Latke matrix A (solution and source)."""
    x, b = _ptr(), _ptr()
    _call("MatLatkeCreateFullVecs", _handle(A), ctypes.byref(x), ctypes.byref(b))
    comm = A.getComm()
    return _adopt(x, comm), _adopt(b, comm)


def prepare_source(A, b, bhat):
    """bhat, the right-hand side of A's (even-odd) system, from the full source b."""
    _call("MatLatkePrepareSource", _handle(A), _handle(b), _handle(bhat))


def reconstruct(A, xhat, b, x):
    """The full solution x from the system's solution xhat and the full source b."""
    _call("MatLatkeReconstruct", _handle(A), _handle(xhat), _handle(b), _handle(x))


def point_source(A, b, site, spin=0, color=0):
    _call("LatkeVecSetPointSource", _handle(A), _handle(b), _ints(site, 4, "site"), _Int(spin), _Int(color))


def wall_source(A, b, t, spin=0, color=0):
    _call("LatkeVecSetWallSource", _handle(A), _handle(b), _Int(t), _Int(spin), _Int(color))


def noise_source(A, b, noise="z2", seed=1):
    _call("LatkeVecSetNoiseSource", _handle(A), _handle(b), _choice({"z2": 0, "z4": 1}, noise, "noise"), _Int(seed))


def to_numpy(A, x):
    """This rank's part of vector x of A as a numpy array [t, z, y, x, spin, color] over the
    local volume in lexicographic order (a parity vector's other sites are zero)."""
    shape = _shape(A)
    out = np.zeros(shape, dtype=np.complex128)
    _call("LatkeVecGetLexicographic", _handle(A), _handle(x), out.ctypes.data_as(_ptr))
    return out


def from_numpy(A, x, array):
    """Set vector x of A from this rank's local volume [t, z, y, x, spin, color] (lexicographic)."""
    a = np.ascontiguousarray(array, dtype=np.complex128)
    if a.shape != _shape(A):
        raise Error(f"latke.from_numpy: an array of shape {a.shape}; expected {_shape(A)}")
    _call("LatkeVecSetLexicographic", _handle(A), _handle(x), a.ctypes.data_as(_ptr))


_matrices = {}  # Mat handle -> (global extents, local extents, spins) of the Latke matrices made here


def _remember(A, gauge, nspin):
    glob, local, _ = gauge.lattice()
    _matrices[A.handle] = (glob, local, nspin)
    return A


def _info(A):
    info = _matrices.get(A.handle)
    if info is None:
        raise Error("latke: the matrix was not made by latke.WilsonClover or latke.Staggered")
    return info


def _shape(A):
    """[t, z, y, x, spin, color] of this rank's local volume for Latke matrix A."""
    _, local, nspin = _info(A)
    return tuple(reversed(local)) + (nspin, 3)


def meson_correlators(A, columns, t0, channels=MESON_CHANNELS):
    """{channel: complex array C(t), t = 0..T-1 from time slice t0} from the 12 propagator
    columns (full vectors of Wilson-clover matrix A, column 3 spin + color); every rank gets them.
    (meson_correlators_at at rest: the same numbers as MatLatkeMesonCorrelators, bit for bit.)"""
    return {c: v[0] for c, v in meson_correlators_at(A, columns, (0, 0, 0, t0), [(0, 0, 0)], channels).items()}


def meson_correlators_at(A, columns, site, momenta, channels=MESON_CHANNELS, antiquark=None):
    """{channel: complex array C[m, t]} at the integer momenta n = momenta[m] (p_i = 2 pi n_i / L_i),
    C(t, p) = sum_x e^{-i p.(x - x0)} <O(x, t) O(x0)^dag>, from the 12 columns of the propagator of
    a point (or smeared point) source at site = (x, y, z, t0) (MatLatkeMesonCorrelatorsMomenta);
    with antiquark (another propagator's 12 columns, another kappa) the meson of the two quarks
    (MatLatkeMesonCorrelatorsPair)."""
    if len(columns) != 12 or (antiquark is not None and len(antiquark) != 12):
        raise Error(f"latke.meson_correlators_at: {len(columns)} columns"
                    + (f" and {len(antiquark)} antiquark columns" if antiquark is not None else "") + "; expected 12")
    if len(site) != 4:
        raise Error(f"latke.meson_correlators_at: site {tuple(site)}; expected (x, y, z, t)")
    mom = np.asarray(momenta, dtype=np.int64).reshape(-1)
    if mom.size % 3:
        raise Error(f"latke.meson_correlators_at: momenta {momenta!r}; expected integer triples (n_x, n_y, n_z)")
    nm = mom.size // 3
    ids = [_choice({c: i for i, c in enumerate(MESON_CHANNELS)}, c, "meson channel") for c in channels]
    T = _global_t(A)
    corr = np.zeros(len(ids) * nm * T, dtype=np.complex128)
    cols = (_ptr * 12)(*[c.handle for c in columns])
    common = ((_Int * 4)(*[int(v) for v in site]), _Int(nm), (_Int * max(1, mom.size))(*[int(v) for v in mom]),
              _Int(len(ids)), (ctypes.c_int * len(ids))(*ids), corr.ctypes.data_as(_ptr))
    if antiquark is None:
        _call("MatLatkeMesonCorrelatorsMomenta", _handle(A), cols, *common)
    else:
        _call("MatLatkeMesonCorrelatorsPair", _handle(A), cols, (_ptr * 12)(*[c.handle for c in antiquark]), *common)
    corr = corr.reshape(len(ids), nm, T)
    return {c: corr[k].copy() for k, c in enumerate(channels)}


BARYON_CHANNELS = ("nucleon", "nucleon_minus")


def nucleon_correlators(A, columns, site, momenta=((0, 0, 0),)):
    """{"nucleon": C_+[m, t], "nucleon_minus": C_-[m, t]}: the nucleon eps (u^T C g5 d) u projected
    with (1 + g4)/2 and (1 - g4)/2 at the integer momenta, t from the source's slice, from the 12
    columns of the propagator of a point source at site = (x, y, z, t0) (MatLatkeNucleonCorrelators)."""
    if len(columns) != 12:
        raise Error(f"latke.nucleon_correlators: {len(columns)} columns; expected 12")
    if len(site) != 4:
        raise Error(f"latke.nucleon_correlators: site {tuple(site)}; expected (x, y, z, t)")
    mom = np.asarray(momenta, dtype=np.int64).reshape(-1)
    if mom.size == 0 or mom.size % 3:
        raise Error(f"latke.nucleon_correlators: momenta {momenta!r}; expected integer triples (n_x, n_y, n_z)")
    nm = mom.size // 3
    T = _global_t(A)
    corr = np.zeros(2 * nm * T, dtype=np.complex128)
    cols = (_ptr * 12)(*[c.handle for c in columns])
    _call("MatLatkeNucleonCorrelators", _handle(A), cols, (_Int * 4)(*[int(v) for v in site]), _Int(nm),
          (_Int * mom.size)(*[int(v) for v in mom]), corr.ctypes.data_as(_ptr))
    corr = corr.reshape(2, nm, T)
    return {c: corr[k].copy() for k, c in enumerate(BARYON_CHANNELS)}


class Smearer(_Owned):
    """Quark smearing of full vectors of Wilson-clover matrix A (MatLatkeSmearerCreate) with the
    spatial links of `links` (usually Gauge.smeared()): kind "wuppertal" (alpha) or "gaussian"
    (alpha = omega, the width), `steps` steps. smearer(x) smears x in place and returns it;
    smearer(x, t) smears only global time slice t (a source there), the others left as they are."""

    _destroy_fn = "LatkeSmearerDestroy"

    def __init__(self, A, links, kind="wuppertal", steps=40, alpha=3.0):
        self._h = _ptr()
        _call("MatLatkeSmearerCreate", _handle(A), links._h, _choice(_QUARK_SMEARING, kind, "quark smearing"),
              _Int(steps), _Real(alpha), ctypes.byref(self._h))

    def __call__(self, x, t=-1):
        _call("LatkeSmearerApply", self._h, _handle(x), _Int(t))
        return x



def _global_t(A):
    return _info(A)[0][3]


def solve(A, b, x, solver="gcr", tol=1e-10, max_it=10000, sloppy="single", prefix=None, initial_guess_nonzero=True):
    """Latke's native solver on A x = b (MatLatkeSolve; x holds the initial guess, or is only
    written with initial_guess_nonzero=False; the multigrid with -latke_solver_pc mg in the
    options). Returns a dict of the solver's statistics."""
    p = _SolverParams()
    _call("LatkeSolverParamsDefault", ctypes.byref(p))
    p.initial_guess_nonzero = 1 if initial_guess_nonzero else 0
    p.type = _choice(_SOLVERS, solver, "solver")
    p.tol = float(tol)
    p.max_it = int(max_it)
    p.sloppy = _choice(_PRECISIONS, sloppy, "sloppy precision")
    st = _SolverStats()
    _call("MatLatkeSolve", _handle(A), _handle(b), _handle(x), ctypes.byref(p), prefix.encode() if prefix else None,
          ctypes.byref(st))
    return {name: getattr(st, name) for name, _ in _SolverStats._fields_} | {"converged": bool(st.converged)}
