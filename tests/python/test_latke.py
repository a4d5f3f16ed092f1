# The latke Python package (python/latke) with petsc4py: matrices and vectors as petsc4py
# objects, numpy in lexicographic order, a petsc4py KSP with -pc_type latke_mg, the native solver,
# meson correlators against sum |S|^2 computed in numpy, staggered CG, bad input. Runs under
# mpirun with 1 and 2 ranks (the lattice split in t), with the same expectations.
import os
import sys
import unittest

import petsc4py

petsc4py.init(sys.argv[:1])
import numpy as np  # noqa: E402
from petsc4py import PETSc  # noqa: E402

import latke  # noqa: E402

latke.initialize()
COMM = PETSc.COMM_WORLD
LATTICE = (4, 4, 4, 8)
GRID = (1, 1, 1, COMM.getSize())


def allsum(local):
    """Sum of a numpy array over the ranks (every rank gets it)."""
    local = np.asarray(local, dtype=np.complex128).ravel()
    v = PETSc.Vec().createMPI((len(local) if COMM.getRank() == 0 else 0, len(local)), comm=COMM)
    v.setValues(range(len(local)), local, addv=PETSc.InsertMode.ADD_VALUES)
    v.assemble()
    scatter, whole = PETSc.Scatter.toAll(v)
    scatter.scatter(v, whole)
    out = whole.getArray().copy()
    for o in (scatter, whole, v):
        o.destroy()
    return out


class Package(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.U = latke.Gauge.random(LATTICE, seed=5, spread=0.4, grid=GRID)
        cls.A = latke.WilsonClover(cls.U, kappa=0.12, csw=1.0)

    def test_a_matrix_is_a_petsc4py_shell_of_the_lattice(self):
        glob, local, grid = self.U.lattice()
        self.assertEqual(glob, LATTICE)
        self.assertEqual(grid, GRID)
        self.assertEqual(self.A.getType(), "shell")
        self.assertEqual(self.A.getName(), "LatkeWilsonClover")
        self.assertEqual(self.A.getSize()[0], 12 * int(np.prod(LATTICE)) // 2)  # one parity
        x, b = latke.full_vecs(self.A)
        self.assertEqual(x.getSize(), 12 * int(np.prod(LATTICE)))
        self.assertEqual(self.A.getRefCount(), 1)  # petsc4py holds the only reference

    def test_numpy_round_trip_and_a_point_source_where_it_belongs(self):
        x, b = latke.full_vecs(self.A)
        shape = latke.to_numpy(self.A, x).shape
        self.assertEqual(shape, (LATTICE[3] // GRID[3], 4, 4, 4, 4, 3))
        rng = np.random.default_rng(COMM.getRank())
        a = rng.normal(size=shape) + 1j * rng.normal(size=shape)
        latke.from_numpy(self.A, x, a)
        self.assertTrue(np.array_equal(latke.to_numpy(self.A, x), a))
        latke.point_source(self.A, b, site=(1, 2, 3, 6), spin=2, color=1)
        s = latke.to_numpy(self.A, b)
        t_local = 6 - COMM.getRank() * shape[0]
        mine = 0 <= t_local < shape[0]
        self.assertEqual(allsum([np.abs(s).sum()])[0], 1.0)
        if mine:
            self.assertEqual(s[t_local, 3, 2, 1, 2, 1], 1.0)

    def test_a_petsc4py_ksp_with_latke_mg_solves(self):
        ksp = PETSc.KSP().create(COMM)
        ksp.setOperators(self.A)
        ksp.setType("fgmres")
        ksp.getPC().setType("latke_mg")
        ksp.setTolerances(rtol=1e-10, max_it=200)
        x, b = latke.full_vecs(self.A)
        latke.noise_source(self.A, b, "z2", seed=3)
        bhat, xhat = self.A.createVecRight(), self.A.createVecLeft()
        latke.prepare_source(self.A, b, bhat)
        ksp.solve(bhat, xhat)
        self.assertGreater(ksp.getConvergedReason(), 0)
        self.assertEqual(ksp.getPC().getType(), "latke_mg")
        r = bhat.duplicate()
        self.A.mult(xhat, r)
        r.aypx(-1.0, bhat)
        self.assertLess(r.norm() / bhat.norm(), 1e-9)
        latke.reconstruct(self.A, xhat, b, x)  # the full solution: nonzero on both parities
        self.assertGreater(x.norm(), xhat.norm())
        ksp.destroy()

    def test_the_pion_is_the_sum_of_squares_of_the_propagator(self):
        cols, sq, sqp = [], np.zeros(LATTICE[3]), np.zeros(LATTICE[3], dtype=complex)
        bhat, xhat = self.A.createVecRight(), self.A.createVecLeft()
        t_offset = COMM.getRank() * (LATTICE[3] // GRID[3])
        for j in range(12):
            x, b = latke.full_vecs(self.A)
            latke.point_source(self.A, b, site=(0, 0, 0, 5), spin=j // 3, color=j % 3)
            latke.prepare_source(self.A, b, bhat)
            xhat.zeroEntries()
            st = latke.solve(self.A, bhat, xhat, solver="bicgstab", tol=1e-12, sloppy="double")
            self.assertTrue(st["converged"], st)
            latke.reconstruct(self.A, xhat, b, x)
            cols.append(x)
            s = latke.to_numpy(self.A, x)
            phase = np.exp(-2j * np.pi * np.arange(LATTICE[0]) / LATTICE[0])  # n = (1, 0, 0), x0 = 0
            for t in range(s.shape[0]):
                sq[(t + t_offset - 5) % LATTICE[3]] += np.sum(np.abs(s[t]) ** 2)
                sqp[(t + t_offset - 5) % LATTICE[3]] += np.sum(np.abs(s[t]) ** 2 * phase[None, None, :, None, None])
        c = latke.meson_correlators(self.A, cols, t0=5)
        self.assertEqual(set(c), set(latke.MESON_CHANNELS))
        want = allsum(sq).real
        np.testing.assert_allclose(c["pion"].real, want, rtol=1e-12)
        self.assertTrue(np.all(c["pion"].real > 0))
        cp = latke.meson_correlators_at(self.A, cols, (0, 0, 0, 5), [(0, 0, 0), (1, 0, 0)], channels=("pion",))
        self.assertEqual(cp["pion"].shape, (2, LATTICE[3]))
        np.testing.assert_array_equal(cp["pion"][0], c["pion"])
        np.testing.assert_allclose(cp["pion"][1], allsum(sqp), rtol=0, atol=1e-12 * want[0])
        same = latke.meson_correlators_at(self.A, cols, (0, 0, 0, 5), [(0, 0, 0)], channels=("pion",), antiquark=cols)
        np.testing.assert_array_equal(same["pion"][0], c["pion"])  # one propagator twice: the degenerate pion

    def test_a_zero_initial_guess_never_reads_x(self):
        bhat, xhat, x0 = self.A.createVecRight(), self.A.createVecLeft(), self.A.createVecLeft()
        bhat.setRandom()
        want = latke.solve(self.A, bhat, x0, solver="bicgstab", tol=1e-10)  # from the zero vector
        xhat.getArray()[:] = np.nan  # written in place (VecSet refuses NaN)
        got = latke.solve(self.A, bhat, xhat, solver="bicgstab", tol=1e-10, initial_guess_nonzero=False)
        self.assertTrue(got["converged"], got)
        self.assertEqual(got["iterations"], want["iterations"])
        self.assertTrue(np.array_equal(xhat.getArray(), x0.getArray()))  # bit for bit

    def test_the_free_nucleon_is_positive_forward_and_its_partner_backward(self):
        unit = latke.Gauge.random(LATTICE, seed=1, spread=0.0, grid=GRID)
        A = latke.WilsonClover(unit, kappa=0.115)
        bhat, xhat = A.createVecRight(), A.createVecLeft()
        cols = []
        for j in range(12):
            x, b = latke.full_vecs(A)
            latke.point_source(A, b, site=(1, 0, 2, 5), spin=j // 3, color=j % 3)
            latke.prepare_source(A, b, bhat)
            xhat.zeroEntries()
            self.assertTrue(latke.solve(A, bhat, xhat, solver="bicgstab", tol=1e-12, sloppy="double")["converged"])
            latke.reconstruct(A, xhat, b, x)
            cols.append(x)
        n = latke.nucleon_correlators(A, cols, (1, 0, 2, 5), momenta=[(0, 0, 0), (0, 0, 1)])
        T = LATTICE[3]
        self.assertEqual(n["nucleon"].shape, (2, T))
        plus, minus = n["nucleon"][0].real, n["nucleon_minus"][0].real
        self.assertTrue(np.all(plus[:T // 2] > 0))
        np.testing.assert_allclose(minus[1:], -plus[:0:-1], rtol=0, atol=1e-12 * abs(plus[0]))
        self.assertTrue(np.all(n["nucleon"][1].real[1:T // 2] < plus[1:T // 2]))  # a moving nucleon: less at t

    def test_gauge_fixing_keeps_the_plaquette_and_refuses_too_few_iterations(self):
        for method in ("fourier", "overrelax"):
            fixed, info = self.U.gauge_fixed("coulomb", tol=1e-12, method=method)
            self.assertTrue(info["converged"])
            self.assertEqual(info["method"], method)
            self.assertLess(info["theta"], 1e-12)
            self.assertAlmostEqual(fixed.plaquette(), self.U.plaquette(), delta=1e-12)
        with self.assertRaisesRegex(latke.Error, "gauge fixing method 'fft'"):
            self.U.gauge_fixed("coulomb", method="fft")
        with self.assertRaisesRegex(latke.Error, "did not converge"):
            self.U.gauge_fixed("landau", max_iter=1)
        with self.assertRaisesRegex(latke.Error, "gauge fixing 'axial'"):
            self.U.gauge_fixed("axial")

    def test_smearing_keeps_a_free_point_source_on_its_slice_and_its_sum(self):
        unit = latke.Gauge.random(LATTICE, seed=1, spread=0.0, grid=GRID)
        A = latke.WilsonClover(unit, kappa=0.12)
        ape = unit.smeared("ape", steps=2, alpha=0.5)
        np.testing.assert_allclose(ape.links(), unit.links(), atol=1e-14)  # unit links stay unit
        sm = latke.Smearer(A, ape, "wuppertal", steps=4, alpha=1.0)
        x, _ = latke.full_vecs(A)
        latke.point_source(A, x, site=(1, 2, 3, 5), spin=1, color=2)
        s = latke.to_numpy(A, sm(x))
        t_offset = COMM.getRank() * (LATTICE[3] // GRID[3])
        total = np.zeros(LATTICE[3], dtype=complex)
        for t in range(s.shape[0]):
            total[t + t_offset] = np.sum(s[t])
        total = allsum(total)
        self.assertAlmostEqual(total[5], 1.0, places=12)  # Wuppertal keeps the slice's sum on unit links
        self.assertEqual(np.count_nonzero(np.delete(total, 5)), 0)
        self.assertGreater(allsum([np.count_nonzero(np.abs(s) > 1e-3)])[0].real, 1)  # and spreads the point
        with self.assertRaisesRegex(latke.Error, "quark smearing 'box'"):
            latke.Smearer(A, ape, "box")

    def test_staggered_cg_on_the_normal_operator(self):
        S = latke.Staggered(self.U, mass=0.2, kind="naive")
        ksp = PETSc.KSP().create(COMM)
        ksp.setOperators(S)
        ksp.setType("cg")
        ksp.getPC().setType("none")
        ksp.setTolerances(rtol=1e-10, max_it=1000)
        bhat, xhat = S.createVecRight(), S.createVecLeft()
        bhat.setRandom()
        ksp.solve(bhat, xhat)
        self.assertGreater(ksp.getConvergedReason(), 0)
        ksp.destroy()

    def test_a_gauge_saved_and_loaded_keeps_its_links(self):
        links = self.U.links()
        self.assertEqual(links.shape, (LATTICE[3] // GRID[3], 4, 4, 4, 4, 3, 3))
        u = links[0, 0, 0, 0, 3]  # an SU(3) matrix
        np.testing.assert_allclose(u @ u.conj().T, np.eye(3), atol=1e-12)
        path = "test_python_gauge.nersc"
        self.U.save(path)
        V = latke.Gauge.load(path, grid=GRID)
        self.assertTrue(np.array_equal(V.links(), links))
        self.assertEqual(V.plaquette(), self.U.plaquette())
        self.assertLess(abs(self.U.plaquette()), 1.0)
        V.destroy()
        with self.assertRaises(latke.Error):
            latke.Gauge.load("no-such-file.nersc")

    def test_bad_input_raises_latke_error(self):
        with self.assertRaisesRegex(latke.Error, "give kappa or mass"):
            latke.WilsonClover(self.U, csw=1.0)
        with self.assertRaisesRegex(latke.Error, "precision 'quad'"):
            latke.WilsonClover(self.U, kappa=0.1, precision="quad")
        x, _ = latke.full_vecs(self.A)
        with self.assertRaisesRegex(latke.Error, "an array of shape"):
            latke.from_numpy(self.A, x, np.zeros((2, 2)))
        with self.assertRaisesRegex(latke.Error, "11 columns; expected 12"):
            latke.meson_correlators(self.A, [x] * 11, 0)
        with self.assertRaisesRegex(latke.Error, "meson channel 'kaon'"):
            latke.meson_correlators(self.A, [x] * 12, 0, channels=("kaon",))
        other = PETSc.Mat().createAIJ((4, 4), comm=PETSc.COMM_SELF)
        with self.assertRaisesRegex(latke.Error, "not made by latke"):
            latke.to_numpy(other, x)


if __name__ == "__main__":
    stream = sys.stderr if COMM.getRank() == 0 else open(os.devnull, "w")  # one report, rank 0's
    runner = unittest.TextTestRunner(stream=stream)
    result = unittest.main(argv=sys.argv[:1], exit=False, testRunner=runner).result
    sys.exit(0 if result.wasSuccessful() else 1)
