# latke-spectrum (examples/latke_spectrum.py): the estimators against closed forms (jackknife of
# a mean, cosh and sinh effective masses, the PCAC ratio of exact correlators, kappa_c of exact
# masses), a seeded noisy ensemble whose masses and kappa_c are known, one with moving pions on
# the lattice dispersion relation, one with nucleons of known mass, the command line's outputs, and
# bad inputs refused with the problem named.
# Usage: test_spectrum.py DIR_OF_latke_spectrum.py
import contextlib
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, sys.argv[1])
del sys.argv[1]
import latke_spectrum as ls  # noqa: E402

T = 32
KAPPAS = (0.1320, 0.1330, 0.1340)
KAPPA_C = 0.1355
B_PI = 2.0    # m_pi^2 = B_PI (1/kappa - 1/kappa_c): m_pi = 0.63, 0.53, 0.41
B_Q = 0.45    # m_PCAC = B_Q (1/kappa - 1/kappa_c): 0.088, 0.062, 0.037
N_CFG = 20
NOISE = 0.01
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def m_pi_true(kappa):
    return math.sqrt(B_PI * (1 / kappa - 1 / KAPPA_C))


def m_pcac_true(kappa):
    return B_Q * (1 / kappa - 1 / KAPPA_C)


def exact_correlators(kappa, nt=T, amp=1.3):
    """C_PP(t) = A cosh(m (t - T/2)); C_A4P(t) = -B sinh(m (T/2 - t)) with B = 2 A m_PCAC / sinh(m),
    for which [C_A4P(t+1) - C_A4P(t-1)] / (4 C_PP(t)) = B sinh(m) / (2 A) = m_PCAC at every t."""
    t = np.arange(nt)
    m = m_pi_true(kappa)
    b = 2 * amp * m_pcac_true(kappa) / math.sinh(m)
    return amp * np.cosh(m * (t - nt / 2)), -b * np.sinh(m * (nt / 2 - t)), 0.8 * np.cosh(0.9 * (t - nt / 2))


def measurement(config, kappa, pion, a4, rho, converged=True):
    def c(re):
        return {"re": [float(v) for v in re], "im": [0.0] * len(re)}
    corr = {"pion": c(pion), "rho": c(rho)}
    if a4 is not None:
        corr["a4_pion"] = c(a4)
    return {"config": config, "kappa": kappa, "plaquette": 0.59,
            "solve": {"iterations": [10] * 12, "seconds": 1.0, "setup_seconds": 0.5,
                      "max_true_residual": 1e-10, "converged": converged},
            "correlators": corr}


def document(measurements, lattice=(8, 8, 8, T), schema="latke-propagator/1"):
    return {"schema": schema, "latke_version": "0.9.0", "lattice": list(lattice), "csw": 1.769,
            "source": {"type": "point", "site": [0, 0, 0, 0]}, "measurements": measurements}


def noisy_ensemble(seed=20240611, with_a4=True):
    """One document per kappa, N_CFG configurations with 1% multiplicative Gaussian noise per time
    slice; the noise of a configuration is shared by every kappa (the same gauge field)."""
    rng = np.random.default_rng(seed)
    eps = rng.standard_normal((3, N_CFG, T))
    docs = []
    for kappa in KAPPAS:
        pion, a4, rho = exact_correlators(kappa)
        docs.append(document([measurement(c, kappa, pion * (1 + NOISE * eps[0, c]),
                                          a4 * (1 + NOISE * eps[1, c]) if with_a4 else None,
                                          rho * (1 + NOISE * eps[2, c])) for c in range(N_CFG)]))
    return docs


MOMENTA = ([1, 0, 0], [1, 1, 0], [2, 1, 0])  # classes on the 8^3 spatial lattice; p_i = 2 pi n_i / 8
COUNTS = (6, 12, 24)


def e_lattice(m, n, L=8):
    """The free lattice boson's energy: sinh^2(E/2) = sinh^2(m/2) + sum_i sin^2(pi n_i / L)."""
    return 2 * math.asinh(math.sqrt(math.sinh(m / 2) ** 2 + sum(math.sin(math.pi * v / L) ** 2 for v in n)))


def moving_ensemble(seed=20261204):
    """noisy_ensemble with pions at MOMENTA on the lattice dispersion relation, noise per class."""
    docs = noisy_ensemble()
    rng = np.random.default_rng(seed)
    eps = rng.standard_normal((len(MOMENTA), N_CFG, T))
    t = np.arange(T)
    for doc, kappa in zip(docs, KAPPAS):
        doc["momenta"] = [{"n": n, "n2": sum(v * v for v in n), "count": c} for n, c in zip(MOMENTA, COUNTS)]
        for c, m in enumerate(doc["measurements"]):
            m["correlators_momentum"] = [
                {"pion": {"re": [float(v) for v in 0.9 * np.cosh(e_lattice(m_pi_true(kappa), n) * (t - T / 2))
                                 * (1 + NOISE * eps[k, c])], "im": [0.0] * T}}
                for k, n in enumerate(MOMENTA)]
    return docs


M_N = 0.9     # the nucleon at every kappa, and its negative-parity partner
M_NSTAR = 1.3


def with_nucleons(docs, seed=7):
    """Adds C_+(t) = A e^{-M_N t} + B e^{-M_N* (T - t)} and C_-(t) = -C_+(T - t), with 1% noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(T)
    plus = 2.0 * np.exp(-M_N * t) + 1.5 * np.exp(-M_NSTAR * (T - t))
    minus = -plus[(T - t) % T]
    for doc in docs:
        for m in doc["measurements"]:
            e = 1 + NOISE * rng.standard_normal((2, T))
            m["correlators"]["nucleon"] = {"re": [float(v) for v in plus * e[0]], "im": [0.0] * T}
            m["correlators"]["nucleon_minus"] = {"re": [float(v) for v in minus * e[1]], "im": [0.0] * T}
    return docs


def write(dir_, name, doc):
    path = os.path.join(dir_, name)
    with open(path, "w") as f:
        f.write(doc if isinstance(doc, str) else json.dumps(doc))
    return path


class Estimators(unittest.TestCase):
    def test_jackknife_error_of_a_mean_is_the_standard_error(self):
        x = np.random.default_rng(7).normal(3.0, 2.0, size=13)
        rows = ls.jackknife_rows(x)
        self.assertAlmostEqual(rows[0], x.mean(), delta=1e-14)
        for j in range(13):
            self.assertAlmostEqual(rows[1 + j], np.delete(x, j).mean(), delta=1e-14)
        sem = x.std(ddof=1) / math.sqrt(13)
        self.assertAlmostEqual(float(ls.jackknife_error(rows)), sem, delta=1e-13 * sem)

    def test_fold(self):
        c = np.arange(1.0, 9.0) ** 2
        np.testing.assert_array_equal(ls.fold(c), [1, (4 + 64) / 2, (9 + 49) / 2, (16 + 36) / 2, 25])
        # Antisymmetric: t = 0 has no partner and is kept; t = T/2 is its own mirror, so 0.
        np.testing.assert_array_equal(ls.fold(c, antisymmetric=True), [1, (4 - 64) / 2, (9 - 49) / 2, (16 - 36) / 2, 0])

    def test_cosh_effective_mass_of_one_state_is_exact(self):
        for nt in (32, 24):
            t = np.arange(nt)
            for m in (0.05, 0.4, 1.3, 3.0):
                meff = ls.effective_mass(ls.fold(2.5 * np.cosh(m * (t - nt / 2))))
                self.assertEqual(meff.shape, (nt // 2,))
                np.testing.assert_allclose(meff, m, rtol=0, atol=1e-10)

    def test_sinh_effective_mass_of_one_state_is_exact(self):
        t = np.arange(T)
        for m in (0.1, 0.5, 1.2):
            meff = ls.effective_mass(ls.fold(-0.7 * np.sinh(m * (T / 2 - t)), antisymmetric=True), "sinh")
            np.testing.assert_allclose(meff[:-1], m, rtol=0, atol=1e-10)
            self.assertTrue(math.isnan(meff[-1]))

    def test_effective_mass_is_nan_without_a_solution(self):
        # Ratios 0.5, 1, -8, -1 (no cosh solution), then 2 at t = T/2 - 1 = 4: cosh(m) = 2.
        meff = ls.effective_mass(np.array([4.0, 8.0, 8.0, -1.0, 1.0, 0.5]))
        self.assertTrue(np.all(np.isnan(meff[:4])))
        self.assertAlmostEqual(meff[4], math.acosh(2.0), delta=1e-12)

    def test_pcac_mass_of_exact_correlators(self):
        for kappa in KAPPAS:
            pion, a4, _ = exact_correlators(kappa)
            m = ls.pcac_mass(ls.fold(a4, antisymmetric=True), ls.fold(pion))
            self.assertEqual(m.shape, (T // 2,))
            # t = 0 takes C_A4P(-1) from C_A4P(T-1), where the closed form is not periodic.
            np.testing.assert_allclose(m[1:], m_pcac_true(kappa), rtol=1e-12)
            self.assertGreater(m_pcac_true(kappa), 0)

    def test_kappa_c_of_exact_masses(self):
        rows = [np.array([m_pi_true(k) ** 2] * 3) + np.array([0.0, 1e-3, -1e-3]) for k in KAPPAS]
        f = ls.kappa_c_fit(KAPPAS, rows)
        self.assertAlmostEqual(f["kappa_c"], KAPPA_C, delta=1e-12)
        self.assertAlmostEqual(f["slope"], B_PI, delta=1e-10)

    def test_default_fit_range(self):
        self.assertEqual(ls.default_fit_range(32), (8, 14))
        self.assertEqual(ls.default_fit_range(64), (16, 30))
        self.assertEqual(ls.default_fit_range(8), (2, 2))


class Ensemble(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.paths = [write(cls.dir.name, f"k{i}.json", d) for i, d in enumerate(noisy_ensemble())]
        cls.s = ls.analyse(cls.paths)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def close(self, got, err, truth, rel):
        self.assertGreater(err, 0)
        self.assertLess(abs(got - truth), 3 * err, f"{got} ± {err} against {truth}")
        self.assertLess(abs(got - truth), rel * abs(truth), f"{got} against {truth}")

    def test_masses(self):
        self.assertEqual(self.s["fit_range"], [8, 14])
        self.assertEqual([e["kappa"] for e in self.s["kappas"]], list(KAPPAS))
        for e in self.s["kappas"]:
            self.assertEqual(e["n_configs"], N_CFG)
            self.close(e["m_pi"]["value"], e["m_pi"]["error"], m_pi_true(e["kappa"]), 0.02)
            self.close(e["m_pcac"]["value"], e["m_pcac"]["error"], m_pcac_true(e["kappa"]), 0.03)
            meff = e["effective_mass"]["rho"]
            self.assertEqual(len(meff["value"]), T // 2)
            self.assertAlmostEqual(meff["value"][6], 0.9, delta=5 * meff["error"][6] + 1e-3)

    def test_kappa_c(self):
        for key in ("from_m_pi_sq", "from_m_pcac"):
            f = self.s["kappa_c"][key]
            self.close(f["kappa_c"], f["kappa_c_error"], KAPPA_C, 0.0005 / KAPPA_C)
            self.assertIsNotNone(f["chi2_dof"])

    def test_cli_writes_summary_and_figures(self):
        out = os.path.join(self.dir.name, "out")
        run = subprocess.run([sys.executable, ls.__file__, *self.paths, "--out", out],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("kappa_c", run.stdout)
        with open(os.path.join(out, "summary.json")) as f:
            s = json.load(f)
        self.assertEqual(s["schema"], "latke-spectrum/1")
        self.assertAlmostEqual(s["kappa_c"]["from_m_pi_sq"]["kappa_c"], self.s["kappa_c"]["from_m_pi_sq"]["kappa_c"])
        for name in ("effective_mass.png", "kappa_c.png"):
            with open(os.path.join(out, name), "rb") as f:
                data = f.read()
            self.assertGreater(len(data), 1000)
            self.assertEqual(data[:8], PNG_MAGIC)
        self.assertEqual([n for n in os.listdir(out) if n.endswith(".tmp")], [])


class Dispersion(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.paths = [write(cls.dir.name, f"k{i}.json", d) for i, d in enumerate(moving_ensemble())]
        cls.s = ls.analyse(cls.paths)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def test_energies_follow_the_lattice_dispersion_relation(self):
        for e in self.s["kappas"]:
            self.assertEqual([d["n"] for d in e["dispersion"]], [list(n) for n in MOMENTA])
            m = m_pi_true(e["kappa"])
            for d, n in zip(e["dispersion"], MOMENTA):
                truth = e_lattice(m, n)
                self.assertAlmostEqual(d["p2"], sum((2 * math.pi * v / 8) ** 2 for v in n), delta=1e-12)
                self.assertGreater(d["E"]["error"], 0)
                self.assertLess(abs(d["E"]["value"] - truth), 3 * d["E"]["error"] + 1e-9, f"n = {n}")
                self.assertLess(abs(d["E"]["value"] - truth), 0.01 * truth)
                # the prediction from the measured m_pi, and the continuum one above it
                self.assertLess(abs(d["E_lattice"]["value"] - truth), 3 * d["E_lattice"]["error"] + 1e-9)
                self.assertGreater(d["E_continuum"]["value"], d["E_lattice"]["value"])
                c2 = (d["E"]["value"] ** 2 - e["m_pi"]["value"] ** 2) / d["p2"]
                self.assertAlmostEqual(d["c2"]["value"], c2, delta=1e-12)
                self.assertLess(d["c2"]["value"], 1)  # the lattice relation lies below the continuum's

    def test_cli_draws_the_dispersion(self):
        out = os.path.join(self.dir.name, "out")
        run = subprocess.run([sys.executable, ls.__file__, *self.paths, "--out", out],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("pion dispersion, kappa 0.132", run.stdout)
        with open(os.path.join(out, "dispersion.png"), "rb") as f:
            self.assertEqual(f.read()[:8], PNG_MAGIC)

    def refused(self, docs, *words):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            paths = [write(self.dir.name, f"bad{i}.json", d) for i, d in enumerate(docs)]
            self.assertEqual(ls.main([*paths, "--out", os.path.join(self.dir.name, "bad"), "--json-only"]), 1)
        for w in words:
            self.assertIn(w, err.getvalue())

    def test_momentum_classes_must_agree_and_be_complete(self):
        docs = moving_ensemble()
        docs[1]["momenta"][2]["n"] = [2, 2, 0]
        self.refused(docs, "momentum classes")
        docs = moving_ensemble()
        del docs[2]["measurements"][4]["correlators_momentum"][1]
        self.refused(docs, "config 4", "one set per momentum class")
        docs = moving_ensemble()
        for d in docs:
            d["momenta"][0]["n"] = [4, 0, 0]  # p = pi: not below L/2
        self.refused(docs, "|n_i| < L_i/2")


def with_pairs(docs, seed=11):
    """Adds to each measurement at KAPPAS[j] the pairs with every earlier kappa: a pseudoscalar with
    m_PS^2 = B_PI (1/kappa_1 + 1/kappa_2 - 2/kappa_c) / 2 and m_PCAC the mean of the two quarks'."""
    rng = np.random.default_rng(seed)
    for j, doc in enumerate(docs):
        for m in doc["measurements"]:
            m["pairs"] = []
            for qk in KAPPAS[:j]:
                mq = math.sqrt(B_PI * (0.5 / qk + 0.5 / KAPPAS[j] - 1 / KAPPA_C))
                pcac = 0.5 * (m_pcac_true(qk) + m_pcac_true(KAPPAS[j]))
                t = np.arange(T)
                amp = 1.1
                b = 2 * amp * pcac / math.sinh(mq)
                e = 1 + NOISE * rng.standard_normal((2, T))
                m["pairs"].append({"quark_kappa": qk, "correlators": {
                    "pion": {"re": [float(v) for v in amp * np.cosh(mq * (t - T / 2)) * e[0]], "im": [0.0] * T},
                    "a4_pion": {"re": [float(v) for v in -b * np.sinh(mq * (T / 2 - t)) * e[1]], "im": [0.0] * T}}})
    return docs


class KappaPairs(unittest.TestCase):
    def test_pair_masses_and_pcac(self):
        with tempfile.TemporaryDirectory() as d:
            s = ls.analyse([write(d, f"p{i}.json", doc) for i, doc in enumerate(with_pairs(noisy_ensemble()))])
            out = io.StringIO()
            ls.print_table(s, out)
        self.assertIn("kappa pairs (quark, antiquark)", out.getvalue())
        self.assertEqual([(p["quark_kappa"], p["antiquark_kappa"]) for p in s["pairs"]],
                         [(KAPPAS[0], KAPPAS[1]), (KAPPAS[0], KAPPAS[2]), (KAPPAS[1], KAPPAS[2])])
        for p in s["pairs"]:
            truth = math.sqrt(B_PI * (0.5 / p["quark_kappa"] + 0.5 / p["antiquark_kappa"] - 1 / KAPPA_C))
            self.assertLess(abs(p["m_ps"]["value"] - truth), 3 * p["m_ps"]["error"] + 1e-9)
            self.assertLess(abs(p["m_ps"]["value"] - truth), 0.02 * truth)
            mean = p["m_pcac_mean_of_degenerate"]
            self.assertLess(abs(p["m_pcac"]["value"] - mean["value"]), 3 * (p["m_pcac"]["error"] + mean["error"]))

    def test_bad_quark_kappa_is_refused(self):
        docs = with_pairs(noisy_ensemble())
        docs[2]["measurements"][3]["pairs"][1]["quark_kappa"] = "light"
        with tempfile.TemporaryDirectory() as d:
            err = io.StringIO()
            paths = [write(d, f"p{i}.json", doc) for i, doc in enumerate(docs)]
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(ls.main([*paths, "--out", os.path.join(d, "out"), "--json-only"]), 1)
        self.assertIn("pairs[1] has quark_kappa 'light'", err.getvalue())


class Nucleon(unittest.TestCase):
    def test_nucleon_mass_from_both_projections(self):
        nt = T
        c = ls.nucleon_forward([1.0 * np.exp(-0.5 * np.arange(nt))], [-np.exp(-0.5 * ((nt - np.arange(nt)) % nt))])
        np.testing.assert_allclose(ls.log_effective_mass(c)[0, 1:], 0.5, atol=1e-12)
        with tempfile.TemporaryDirectory() as d:
            paths = [write(d, f"n{i}.json", doc) for i, doc in enumerate(with_nucleons(noisy_ensemble()))]
            s = ls.analyse(paths)
            out = io.StringIO()
            ls.print_table(s, out)
        self.assertIn("m_N", out.getvalue())
        with tempfile.TemporaryDirectory() as d:
            paths = [write(d, f"n{i}.json", doc) for i, doc in enumerate(with_nucleons(noisy_ensemble()))]
            run = subprocess.run([sys.executable, ls.__file__, *paths, "--out", os.path.join(d, "out")],
                                 capture_output=True, text=True, timeout=120)
            self.assertEqual(run.returncode, 0, run.stderr)
            with open(os.path.join(d, "out", "nucleon.png"), "rb") as f:
                self.assertEqual(f.read()[:8], PNG_MAGIC)
        for e in s["kappas"]:
            self.assertEqual(e["nucleon"]["effective_mass"]["kind"], "log")
            mn = e["m_n"]
            self.assertGreater(mn["error"], 0)
            self.assertLess(abs(mn["value"] - M_N), 3 * mn["error"] + 1e-9)
            self.assertLess(abs(mn["value"] - M_N), 0.01 * M_N)
            self.assertAlmostEqual(e["m_n_over_m_pi"]["value"], mn["value"] / e["m_pi"]["value"], delta=1e-12)

    def test_nucleon_fit_range_of_its_own(self):
        with tempfile.TemporaryDirectory() as d:
            paths = [write(d, f"n{i}.json", doc) for i, doc in enumerate(with_nucleons(noisy_ensemble()))]
            s = ls.analyse(paths, nucleon_fit_range=(3, 6))
            self.assertEqual(s["nucleon_fit_range"], [3, 6])
            self.assertEqual(s["fit_range"], [8, 14])
            mn = s["kappas"][0]["m_n"]
            self.assertLess(abs(mn["value"] - M_N), 3 * mn["error"] + 1e-9)
            with self.assertRaisesRegex(ls.SpectrumError, "--nucleon-fit-range t = 3..20"):
                ls.analyse(paths, nucleon_fit_range=(3, 20))

    def test_moving_nucleon_on_the_continuum_dispersion(self):
        docs = with_nucleons(moving_ensemble())
        rng = np.random.default_rng(3)
        t = np.arange(T)
        for doc in docs:
            for m in doc["measurements"]:
                for k, n in enumerate(MOMENTA):
                    e = math.sqrt(M_N ** 2 + sum((2 * math.pi * v / 8) ** 2 for v in n))
                    plus = 2.0 * np.exp(-e * t) + 1.5 * np.exp(-M_NSTAR * (T - t))
                    noise = 1 + NOISE * rng.standard_normal((2, T))
                    m["correlators_momentum"][k]["nucleon"] = {"re": [float(v) for v in plus * noise[0]],
                                                              "im": [0.0] * T}
                    m["correlators_momentum"][k]["nucleon_minus"] = {
                        "re": [float(v) for v in -plus[(T - t) % T] * noise[1]], "im": [0.0] * T}
        with tempfile.TemporaryDirectory() as d:
            s = ls.analyse([write(d, f"m{i}.json", doc) for i, doc in enumerate(docs)], nucleon_fit_range=(3, 6))
            out = io.StringIO()
            ls.print_table(s, out)
        self.assertIn("nucleon dispersion, kappa", out.getvalue())
        for entry in s["kappas"]:
            for dd, n in zip(entry["nucleon_dispersion"], MOMENTA):
                truth = math.sqrt(M_N ** 2 + sum((2 * math.pi * v / 8) ** 2 for v in n))
                self.assertLess(abs(dd["E"]["value"] - truth), 3 * dd["E"]["error"] + 1e-9, f"n = {n}")
                self.assertLess(abs(dd["E"]["value"] - truth), 0.02 * truth)

    def test_without_baryons_there_is_no_nucleon(self):
        with tempfile.TemporaryDirectory() as d:
            s = ls.analyse([write(d, f"n{i}.json", doc) for i, doc in enumerate(noisy_ensemble())])
        self.assertTrue(all(e["m_n"] is None and "nucleon" not in e for e in s["kappas"]))


class BadInput(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.good = noisy_ensemble()

    def tearDown(self):
        self.dir.cleanup()

    def refused(self, docs, *words, extra=()):
        paths = [write(self.dir.name, f"in{i}.json", d) for i, d in enumerate(docs)]
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = ls.main([*paths, "--out", os.path.join(self.dir.name, "out"), "--json-only", *extra])
        self.assertNotEqual(rc, 0)
        msg = err.getvalue()
        self.assertIn("error", msg)
        for w in words:
            self.assertIn(w, msg)
        self.assertFalse(os.path.exists(os.path.join(self.dir.name, "out", "summary.json")))
        return msg

    def test_good_input_is_accepted(self):  # the baseline the refusals below depart from
        paths = [write(self.dir.name, f"in{i}.json", d) for i, d in enumerate(self.good)]
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(ls.main([*paths, "--out", os.path.join(self.dir.name, "out"), "--json-only"]), 0)

    def test_wrong_schema(self):
        self.good[1]["schema"] = "latke-solve/1"
        self.refused(self.good, "in1.json", "schema", "latke-solve/1")

    def test_not_json(self):
        self.refused([self.good[0], "{not json"], "in1.json", "not JSON")

    def test_unconverged_solve(self):
        self.good[1]["measurements"][3]["solve"]["converged"] = False
        self.refused(self.good, "in1.json", "config 3", "kappa 0.133", "converge")

    def test_unconverged_gauge_fixing(self):
        self.good[2]["measurements"][1]["gauge_fixing"] = {"iterations": 10000, "theta": 3e-9, "converged": False}
        self.refused(self.good, "in2.json", "config 1", "gauge fixing", "3e-09")

    def test_single_configuration(self):
        self.good[2]["measurements"] = self.good[2]["measurements"][:1]
        self.refused(self.good, "kappa 0.134", "1 configuration", "in2.json")

    def test_missing_pion(self):
        del self.good[0]["measurements"][5]["correlators"]["pion"]
        self.refused(self.good, "in0.json", "config 5", "pion")

    def test_inconsistent_t(self):
        self.good[1]["lattice"] = [8, 8, 8, 16]
        self.refused(self.good, "in1.json", "inconsistent T")

    def test_different_configurations_at_two_kappas(self):
        self.good[1]["measurements"] = self.good[1]["measurements"][:-1]
        self.refused(self.good, "different configurations", str(N_CFG - 1))

    def test_fit_range_beyond_t_half(self):
        self.refused(self.good, "--fit-range", extra=["--fit-range", "4,16"])

    def test_missing_a4_pion_skips_pcac_with_a_note(self):
        paths = [write(self.dir.name, f"in{i}.json", d) for i, d in enumerate(noisy_ensemble(with_a4=False))]
        err, out = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            rc = ls.main([*paths, "--out", os.path.join(self.dir.name, "out"), "--json-only"])
        self.assertEqual(rc, 0)
        self.assertIn("no a4_pion", err.getvalue())
        with open(os.path.join(self.dir.name, "out", "summary.json")) as f:
            s = json.load(f)
        self.assertIsNone(s["kappa_c"]["from_m_pcac"])
        self.assertIsNotNone(s["kappa_c"]["from_m_pi_sq"])


if __name__ == "__main__":
    unittest.main()
