#!@LATKE_SCALE_PYTHON@
# latke-spectrum: meson spectroscopy from latke-propagator's correlators. It reads one or more
# "latke-propagator/1" JSON files, folds each channel's correlator about T/2 and, per kappa,
# gives the effective masses of every channel, the pion mass and the PCAC quark mass (plateaus
# over one fit range), then kappa_c from m_pi^2 and from m_PCAC, each linear in 1/kappa; for runs
# with -latke_mom2_max, the pion's energy at each momentum class against the continuum and the
# lattice dispersion relations; with point sources, the nucleon mass; with -latke_kappa_pairs, the
# pseudoscalar and PCAC masses of every two kappas. Every error is a leave-one-out jackknife over gauge
# configurations. docs/latke-spectrum.md.
import argparse
import json
import math
import os
import sys

try:
    import numpy as np
except ImportError:
    sys.exit(f"latke-spectrum: error: numpy is not available to {sys.executable}; run it with a Python that has "
             "numpy (and matplotlib for the figures)")

INPUT_SCHEMA = "latke-propagator/1"
SCHEMA = "latke-spectrum/1"
CHANNELS = ("pion", "pion_a4", "a4_pion", "rho", "a0", "a1", "b1")
ANTISYMMETRIC = ("a4_pion",)  # C(T - t) = -C(t); every other channel is symmetric
BARYONS = ("nucleon", "nucleon_minus")  # the (1 + g4)/2 and (1 - g4)/2 projections; analysed together


class SpectrumError(Exception):
    """Input that cannot be analysed, or an analysis that cannot be done; main prints it and exits 1."""


# --- jackknife ---------------------------------------------------------------------------------
# A quantity is carried as "rows": row 0 its value on the full sample, rows 1..N its values with
# configuration j left out. Every derived quantity is computed row by row, so the jackknife of
# a fit or a plateau is the same code as its central value.

def jackknife_rows(x):
    """Rows of the mean over configurations (axis 0 of x): the full mean, then the N leave-one-out means."""
    x = np.asarray(x, dtype=float)
    n = x.shape[0]
    if n < 2:
        raise SpectrumError("a jackknife needs at least 2 configurations")
    total = x.sum(axis=0)
    return np.concatenate([(total / n)[None], (total[None] - x) / (n - 1)])


def jackknife_error(rows):
    """sqrt((N-1)/N sum_j (theta_j - mean_j theta_j)^2) over rows 1..N, per element."""
    samples = np.asarray(rows, dtype=float)[1:]
    n = samples.shape[0]
    return np.sqrt((n - 1) / n * np.sum((samples - samples.mean(axis=0)) ** 2, axis=0))


# --- correlators and effective masses --------------------------------------------------------

def fold(c, antisymmetric=False):
    """(C(t) + C(T-t))/2, or (C(t) - C(T-t))/2 when antisymmetric, for t = 0 .. T/2 (last axis).
    t = 0 is its own mirror: an antisymmetric channel keeps C(0) as measured there (its
    antisymmetric part would be 0 identically, and the PCAC derivative at t = 1 needs C(0))."""
    c = np.asarray(c, dtype=float)
    nt = c.shape[-1]
    t = np.arange(nt // 2 + 1)
    mirror = c[..., (nt - t) % nt]
    if not antisymmetric:
        return 0.5 * (c[..., t] + mirror)
    folded = 0.5 * (c[..., t] - mirror)
    folded[..., 0] = c[..., 0]
    return folded


def _log_cosh(x):
    x = np.abs(x)
    return x + np.log1p(np.exp(-2.0 * x)) - math.log(2.0)


def _log_sinh(x):  # x > 0
    return x + np.log(-np.expm1(-2.0 * x)) - math.log(2.0)


def effective_mass(c, kind="cosh"):
    """m(t), t = 0 .. T/2 - 1, from a folded correlator c[..., 0 .. T/2] (last axis):
    C(t)/C(t+1) = f(m (T/2 - t)) / f(m (T/2 - t - 1)), f = cosh or sinh, solved by bisection.
    The ratio is monotonic in m, so the root is unique where it exists: ratio > 1 (cosh) or
    ratio > a/(a-1), a = T/2 - t (sinh; none at t = T/2 - 1). Elsewhere NaN."""
    c = np.asarray(c, dtype=float)
    half = c.shape[-1] - 1
    a = (half - np.arange(half)).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = c[..., :-1] / c[..., 1:]
        if kind == "cosh":
            log_f, threshold = _log_cosh, np.ones_like(a)
        elif kind == "sinh":
            log_f, threshold = _log_sinh, np.where(a > 1, a / np.maximum(a - 1, 1), np.inf)
        else:
            raise ValueError(f"unknown effective mass kind {kind!r}")
        valid = np.isfinite(ratio) & (ratio > threshold)
    a = np.broadcast_to(np.where(threshold < np.inf, a, 2.0), ratio.shape)
    log_r = np.log(np.where(valid, ratio, 4.0))

    def excess(m):
        return log_f(a * m) - log_f((a - 1) * m) - log_r

    lo = np.zeros(ratio.shape)
    hi = log_r + 1.0
    for _ in range(64):  # both ratios grow like e^m: hi = log r + 1 brackets the root almost always
        short = excess(hi) < 0
        if not short.any():
            break
        hi = np.where(short, 2.0 * hi, hi)
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        above = excess(mid) >= 0
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid)
    return np.where(valid, 0.5 * (lo + hi), np.nan)


def nucleon_forward(c_plus, c_minus):
    """The nucleon propagating forward from both projections, t = 0 .. T/2 (last axis):
    [C_+(t) - C_-(T - t)] / 2, as C_-(T - t) = -C_+(t) for the nucleon with antiperiodic quarks."""
    c_plus = np.asarray(c_plus, dtype=float)
    c_minus = np.asarray(c_minus, dtype=float)
    nt = c_plus.shape[-1]
    t = np.arange(nt // 2 + 1)
    return 0.5 * (c_plus[..., t] - c_minus[..., (nt - t) % nt])


def log_effective_mass(c):
    """log(C(t)/C(t+1)), t = 0 .. len - 2 (last axis); NaN where the ratio is not positive."""
    c = np.asarray(c, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = c[..., :-1] / c[..., 1:]
        return np.where(np.isfinite(ratio) & (ratio > 0), np.log(np.where(ratio > 0, ratio, 1.0)), np.nan)


def pcac_mass(c_a4p, c_pp, sign=1.0):
    """m_PCAC(t) = sign [C_A4P(t+1) - C_A4P(t-1)] / (4 C_PP(t)), t = 0 .. T/2 - 1, from folded
    correlators (last axis 0 .. T/2); at t = 0, C_A4P(-1) = C_A4P(T-1) = -C_A4P(1)."""
    c_a4p = np.asarray(c_a4p, dtype=float)
    c_pp = np.asarray(c_pp, dtype=float)
    half = c_pp.shape[-1] - 1
    ahead = c_a4p[..., 1:half + 1]
    behind = np.concatenate([-c_a4p[..., 1:2], c_a4p[..., 0:half - 1]], axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return sign * (ahead - behind) / (4.0 * c_pp[..., :half])


# --- fits ---------------------------------------------------------------------------------------

def _weights(err):
    """1/sigma^2, or equal weights where some sigma is zero (noiseless data)."""
    err = np.asarray(err, dtype=float)
    return 1.0 / err ** 2 if np.all(err > 0) else np.ones_like(err)


def plateau(rows, tmin, tmax):
    """Error-weighted mean over t = tmin .. tmax of each row of rows[:, t], the weights 1/sigma_t^2
    from the jackknife errors of the t's (held fixed in every row); and the uncorrelated
    chi^2/dof of the full sample (None for one point)."""
    seg = np.asarray(rows, dtype=float)[:, tmin:tmax + 1]
    err = jackknife_error(seg)
    w = _weights(err)
    mean = (seg * w).sum(axis=1) / w.sum()
    n = seg.shape[1]
    chi2_dof = None
    if n > 1 and np.all(err > 0):
        chi2_dof = float(np.sum(((seg[0] - mean[0]) / err) ** 2) / (n - 1))
    return mean, chi2_dof


def fit_line(x, rows):
    """y = a + b x by weighted least squares on each row of rows[:, i] (y at x[i]), the weights
    1/sigma_i^2 from the jackknife errors (held fixed in every row). Rows of a and b, and the
    uncorrelated chi^2/dof of the full sample (None with two points)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(rows, dtype=float)
    err = jackknife_error(y)
    w = _weights(err)
    s, sx, sxx = w.sum(), (w * x).sum(), (w * x * x).sum()
    sy, sxy = (y * w).sum(axis=1), (y * w * x).sum(axis=1)
    det = s * sxx - sx * sx
    b = (s * sxy - sx * sy) / det
    a = (sxx * sy - sx * sxy) / det
    chi2_dof = None
    if len(x) > 2 and np.all(err > 0):
        chi2_dof = float(np.sum(((y[0] - a[0] - b[0] * x) / err) ** 2) / (len(x) - 2))
    return a, b, chi2_dof


def default_fit_range(nt):
    """tmin = max(2, T//4), tmax = T//2 - 2."""
    return max(2, nt // 4), nt // 2 - 2


# --- input --------------------------------------------------------------------------------------

class KappaData:
    """The measurements at one kappa: configs (sorted), the file of each, correlators[channel]
    (N x T, real parts, in config order), plaquettes."""

    def __init__(self, kappa):
        self.kappa = kappa
        self.by_config = {}  # config -> (path, measurement)
        self.momenta = []    # the files' momentum classes ("momenta"), the same in each

    def finish(self):
        self.configs = sorted(self.by_config)
        present = [set(m["correlators"]) & set(CHANNELS) for _, m in self.by_config.values()]
        self.channels = [ch for ch in CHANNELS if all(ch in p for p in present)]
        self.dropped = sorted(set().union(*present) - set(self.channels))
        self.correlators = {ch: np.array([self.by_config[c][1]["correlators"][ch]["re"] for c in self.configs],
                                         dtype=float) for ch in self.channels}
        baryons = all(all(b in m["correlators"] for b in BARYONS) for _, m in self.by_config.values())
        self.nucleon = (tuple(np.array([self.by_config[c][1]["correlators"][b]["re"] for c in self.configs],
                                       dtype=float) for b in BARYONS) if baryons else None)
        # the pion at each momentum class: [class] -> N x T
        self.moving_pion = [np.array([self.by_config[c][1]["correlators_momentum"][k]["pion"]["re"]
                                      for c in self.configs], dtype=float)
                            for k in range(len(self.momenta))]
        # the nucleon's two projections at each momentum class, where every measurement has them
        moving_baryons = self.nucleon is not None and all(
            all(b in cm for b in BARYONS) for _, m in self.by_config.values() for cm in m.get("correlators_momentum") or [])
        self.moving_nucleon = [tuple(np.array([self.by_config[c][1]["correlators_momentum"][k][b]["re"]
                                               for c in self.configs], dtype=float) for b in BARYONS)
                               for k in range(len(self.momenta))] if moving_baryons else []
        plaq = [self.by_config[c][1].get("plaquette") for c in self.configs]
        self.plaquette = float(np.mean(plaq)) if all(isinstance(p, (int, float)) for p in plaq) else None


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise SpectrumError(f"{path}: cannot read it ({e.strerror})")
    except (ValueError, UnicodeDecodeError) as e:
        raise SpectrumError(f"{path}: not JSON ({e})")


def load(paths, notes, sink="point", pairs=None):
    """Meta data (lattice, csw, source) and {kappa: KappaData} of the files' measurements, checked;
    sink "smeared" takes each measurement's correlators_smeared_sink for its correlators. With a
    dict `pairs`, also {(quark kappa, antiquark kappa): KappaData} of the measurements' pairs (point
    sink)."""
    meta = None
    data = {}
    pair_data = pairs if pairs is not None else {}
    for path in paths:
        doc = _read(path)
        if not isinstance(doc, dict):
            raise SpectrumError(f"{path}: not a latke-propagator file (the JSON is not an object)")
        if doc.get("schema") != INPUT_SCHEMA:
            raise SpectrumError(f"{path}: schema is {doc.get('schema')!r}, expected {INPUT_SCHEMA!r}")
        lattice = doc.get("lattice")
        if not (isinstance(lattice, list) and len(lattice) == 4
                and all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in lattice)):
            raise SpectrumError(f"{path}: 'lattice' is {lattice!r}, expected four positive integers")
        nt = lattice[3]
        if nt % 2 or nt < 4:
            raise SpectrumError(f"{path}: T = {nt}; folding needs an even T of at least 4")
        momenta = _check_momenta(path, doc.get("momenta", []), lattice)
        if meta is None:
            meta = {"lattice": lattice, "csw": doc.get("csw"), "source": doc.get("source"), "file": path,
                    "momenta": momenta}
        elif lattice[3] != meta["lattice"][3]:
            raise SpectrumError(f"{path}: inconsistent T: lattice {lattice} has T = {nt}, "
                                f"but {meta['file']} has T = {meta['lattice'][3]}")
        elif lattice != meta["lattice"]:
            raise SpectrumError(f"{path}: lattice {lattice} differs from {meta['lattice']} of {meta['file']}")
        elif doc.get("csw") != meta["csw"]:
            raise SpectrumError(f"{path}: csw {doc.get('csw')!r} differs from {meta['csw']!r} of {meta['file']}")
        elif momenta != meta["momenta"]:
            raise SpectrumError(f"{path}: momentum classes {[c['n'] for c in momenta]} differ from "
                                f"{[c['n'] for c in meta['momenta']]} of {meta['file']}")
        measurements = doc.get("measurements")
        if not isinstance(measurements, list) or not measurements:
            raise SpectrumError(f"{path}: no 'measurements' (expected a non-empty list)")
        for i, m in enumerate(measurements):
            if sink != "point" and isinstance(m, dict):
                key, run = (("correlators_smeared_sink", "-latke_smear") if sink == "smeared"
                            else ("correlators_wall_sink", "-latke_source wall"))
                ss = m.get(key)
                if not isinstance(ss, dict):
                    raise SpectrumError(f"{path}: measurement {i} (config {m.get('config')!r}, kappa "
                                        f"{m.get('kappa')!r}) has no '{key}' (a run without {run}); "
                                        f"--sink {sink} needs them")
                m = dict(m, correlators=ss)
                if momenta:  # only point sources have momenta, so here the smeared sink's
                    m["correlators_momentum"] = m.get("correlators_momentum_smeared_sink")
            _check_measurement(path, i, m, nt, notes)
            _check_moving(path, m, momenta, nt)
            kd = data.setdefault(m["kappa"], KappaData(m["kappa"]))
            kd.momenta = momenta
            if m["config"] in kd.by_config:
                raise SpectrumError(f"{path}: config {m['config']} at kappa {m['kappa']} is measured twice "
                                    f"(also in {kd.by_config[m['config']][0]})")
            kd.by_config[m["config"]] = (path, m)
            for j, pr in enumerate(m.get("pairs", []) if sink == "point" else []):
                qk = pr.get("quark_kappa") if isinstance(pr, dict) else None
                if not _is_number(qk) or qk <= 0:
                    raise SpectrumError(f"{path}: config {m['config']}, kappa {m['kappa']}: pairs[{j}] has "
                                        f"quark_kappa {qk!r}, expected a positive number")
                pm = {"config": m["config"], "kappa": m["kappa"], "solve": m.get("solve"),
                      "correlators": pr.get("correlators")}
                _check_measurement(path, i, pm, nt, notes)
                pkd = pair_data.setdefault((qk, m["kappa"]), KappaData((qk, m["kappa"])))
                pkd.by_config[m["config"]] = (path, pm)
    if meta is None:
        raise SpectrumError("no input files")
    for kappa, kd in sorted(data.items()):
        if len(kd.by_config) < 2:
            files = sorted({p for p, _ in kd.by_config.values()})
            raise SpectrumError(f"kappa {kappa}: {len(kd.by_config)} configuration ({', '.join(files)}); "
                                "a jackknife needs at least 2")
        kd.finish()
        if kd.dropped:
            notes.append(f"kappa {kappa}: channels {', '.join(kd.dropped)} are missing from some "
                         "configurations and are not analysed")
    for key, pkd in sorted(pair_data.items()):
        pkd.finish()
        if pkd.configs != sorted(data[key[1]].by_config):
            raise SpectrumError(f"kappa pair {key}: measured on configurations {pkd.configs}, but kappa {key[1]} "
                                f"on {sorted(data[key[1]].by_config)}")
    kappas = sorted(data)
    for kappa in kappas[1:]:
        if data[kappa].configs != data[kappas[0]].configs:
            a, b = set(data[kappas[0]].configs), set(data[kappa].configs)
            raise SpectrumError(f"kappa {kappa} and kappa {kappas[0]} have different configurations "
                                f"(only at {kappas[0]}: {sorted(a - b)}; only at {kappa}: {sorted(b - a)}); "
                                "the kappa_c jackknife needs the same set at every kappa")
    return meta, data


def _check_measurement(path, i, m, nt, notes):
    if not isinstance(m, dict):
        raise SpectrumError(f"{path}: measurement {i} is not an object")
    config, kappa = m.get("config"), m.get("kappa")
    if not isinstance(config, int) or isinstance(config, bool):
        raise SpectrumError(f"{path}: measurement {i}: 'config' is {config!r}, expected an integer")
    if not _is_number(kappa) or kappa <= 0:
        raise SpectrumError(f"{path}: measurement {i}: 'kappa' is {kappa!r}, expected a positive number")
    where = f"{path}: config {config}, kappa {kappa}"
    fixing = m.get("gauge_fixing")
    if isinstance(fixing, dict) and fixing.get("converged") is not True:
        raise SpectrumError(f"{where}: the Coulomb gauge fixing of the wall source's configuration did not "
                            f"converge (theta {fixing.get('theta')!r} after {fixing.get('iterations')!r} iterations); "
                            "refusing to analyse it")
    solve = m.get("solve")
    converged = solve.get("converged") if isinstance(solve, dict) else None
    if converged is not True:
        raise SpectrumError(f"{where}: the propagator's solve did not converge (solve.converged is "
                            f"{json.dumps(converged)}); refusing to analyse it")
    corr = m.get("correlators")
    if not isinstance(corr, dict):
        raise SpectrumError(f"{where}: no 'correlators' object")
    if "pion" not in corr:
        raise SpectrumError(f"{where}: the pion correlator is missing (correlators has {sorted(corr)})")
    for ch in list(corr):
        if ch not in CHANNELS + BARYONS:
            note = f"{path}: unknown channel {ch!r} ignored"
            if note not in notes:
                notes.append(note)
            continue
        re = corr[ch].get("re") if isinstance(corr[ch], dict) else None
        if not (isinstance(re, list) and len(re) == nt and all(_is_number(v) for v in re)):
            got = f"{len(re)} values" if isinstance(re, list) else repr(type(re).__name__)
            raise SpectrumError(f"{where}: correlators.{ch}.re must be T = {nt} finite numbers (got {got})")


def _check_momenta(path, momenta, lattice):
    """The record's momentum classes: a list of {n: three integers, n2, count}; p_i = 2 pi n_i / L_i."""
    if not isinstance(momenta, list):
        raise SpectrumError(f"{path}: 'momenta' is {momenta!r}, expected a list of momentum classes")
    for k, c in enumerate(momenta):
        n = c.get("n") if isinstance(c, dict) else None
        if not (isinstance(n, list) and len(n) == 3 and all(isinstance(v, int) and not isinstance(v, bool) for v in n)
                and any(n)):
            raise SpectrumError(f"{path}: momenta[{k}] is {c!r}, expected an object with 'n': three integers, not all 0")
        if any(2 * abs(v) >= lattice[i] for i, v in enumerate(n)):
            raise SpectrumError(f"{path}: momenta[{k}] n = {n}: expected |n_i| < L_i/2 on the lattice {lattice}")
    return [{"n": c["n"], "n2": sum(v * v for v in c["n"]), "count": c.get("count")} for c in momenta]


def _check_moving(path, m, momenta, nt):
    if not momenta:
        return
    where = f"{path}: config {m['config']}, kappa {m['kappa']}"
    sets = m.get("correlators_momentum")
    if not (isinstance(sets, list) and len(sets) == len(momenta)):
        got = f"{len(sets)} sets" if isinstance(sets, list) else "none"
        raise SpectrumError(f"{where}: 'correlators_momentum' must hold one set per momentum class "
                            f"({len(momenta)}; got {got})")
    for k, c in enumerate(sets):
        re = c.get("pion", {}).get("re") if isinstance(c, dict) and isinstance(c.get("pion"), dict) else None
        if not (isinstance(re, list) and len(re) == nt and all(_is_number(v) for v in re)):
            raise SpectrumError(f"{where}: correlators_momentum[{k}] (n = {momenta[k]['n']}) needs pion.re with "
                                f"T = {nt} finite numbers")


# --- analysis -----------------------------------------------------------------------------------

def _value_error(rows):
    return {"value": rows[0], "error": jackknife_error(rows)}


def analyse_kappa(kd, tmin, tmax, a4_sign, pcac=True, nucleon_range=None):
    """Rows (full sample, then leave-one-out) of everything measured at one kappa; the PCAC mass
    only with pcac (local currents at the sink)."""
    rows = {ch: jackknife_rows(fold(kd.correlators[ch], ch in ANTISYMMETRIC)) for ch in kd.channels}
    meff = {ch: effective_mass(rows[ch], "sinh" if ch in ANTISYMMETRIC else "cosh") for ch in kd.channels}
    bad = [t for t in range(tmin, tmax + 1) if not np.all(np.isfinite(meff["pion"][:, t]))]
    if bad:
        raise SpectrumError(f"kappa {kd.kappa}: the pion effective mass is undefined at t = "
                            f"{', '.join(map(str, bad))} (C(t)/C(t+1) <= 1 in the mean or a jackknife sample); "
                            "choose another --fit-range")
    m_pi, chi2_pi = plateau(meff["pion"], tmin, tmax)
    result = {"kappa": kd.kappa, "rows": rows, "meff": meff, "m_pi": m_pi, "m_pi_chi2_dof": chi2_pi}
    if kd.nucleon is not None:
        n_rows = jackknife_rows(nucleon_forward(*kd.nucleon))
        n_eff = log_effective_mass(n_rows)
        result["nucleon_rows"], result["nucleon_meff"] = n_rows, n_eff
        nmin, nmax = nucleon_range or (tmin, tmax)
        if np.all(np.isfinite(n_eff[:, nmin:nmax + 1])):
            result["m_n"], result["m_n_chi2_dof"] = plateau(n_eff, nmin, nmax)
    if pcac and "a4_pion" in kd.channels:
        pcac_t = pcac_mass(rows["a4_pion"], rows["pion"], a4_sign)
        result["pcac_t"] = pcac_t
        result["m_pcac"], result["m_pcac_chi2_dof"] = plateau(pcac_t, tmin, tmax)
    return result


def kappa_c_fit(kappas, rows_by_kappa):
    """y = a + b/kappa = b (1/kappa - 1/kappa_c): kappa_c = -b/a, jackknifed."""
    x = 1.0 / np.asarray(kappas)
    a, b, chi2_dof = fit_line(x, np.stack(rows_by_kappa, axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        kc = -b / a
    return {"kappa_c": float(kc[0]), "kappa_c_error": float(jackknife_error(kc)),
            "slope": float(b[0]), "slope_error": float(jackknife_error(b)),
            "intercept": float(a[0]), "intercept_error": float(jackknife_error(a)),
            "chi2_dof": chi2_dof, "n_kappa": len(kappas)}


def dispersion(kd, m_pi, lattice, tmin, tmax, notes):
    """The pion's energy at each momentum class (a cosh plateau over tmin..tmax, as m_pi), against
    the continuum E^2 = m^2 + p^2 and the free lattice boson sinh^2(E/2) = sinh^2(m/2) +
    sum_i sin^2(p_i/2), p_i = 2 pi n_i / L_i; c^2 = (E^2 - m^2) / p^2, the squared speed of light."""
    out = []
    for k, cls in enumerate(kd.momenta):
        p = np.array([2 * math.pi * v / lattice[i] for i, v in enumerate(cls["n"])])
        p2, phat2 = float(np.sum(p ** 2)), float(np.sum(np.sin(p / 2) ** 2))
        entry = {"n": cls["n"], "n2": cls["n2"], "count": cls["count"], "p2": p2,
                 "E": None, "E_continuum": _value_error(np.sqrt(m_pi ** 2 + p2)),
                 "E_lattice": _value_error(2 * np.arcsinh(np.sqrt(np.sinh(m_pi / 2) ** 2 + phat2))),
                 "c2": None, "effective_energy": None}
        rows = jackknife_rows(fold(kd.moving_pion[k]))
        eff = effective_mass(rows)
        entry["effective_energy"] = _value_error(eff)
        bad = [t for t in range(tmin, tmax + 1) if not np.all(np.isfinite(eff[:, t]))]
        if bad:
            notes.append(f"kappa {kd.kappa}, momentum n = {cls['n']}: the pion's effective energy is undefined "
                         f"at t = {', '.join(map(str, bad))}; no E(p) there")
        else:
            energy, chi2 = plateau(eff, tmin, tmax)
            entry["E"] = dict(_value_error(energy), chi2_dof=chi2)
            entry["c2"] = _value_error((energy ** 2 - m_pi ** 2) / p2)
        out.append(entry)
    return out


def nucleon_dispersion(kd, m_n, lattice, nmin, nmax, notes):
    """The nucleon's energy at each momentum class (a log plateau over nmin..nmax, as m_N) against
    the continuum E^2 = m_N^2 + p^2."""
    out = []
    for k, cls in enumerate(kd.momenta):
        p2 = float(sum((2 * math.pi * v / lattice[i]) ** 2 for i, v in enumerate(cls["n"])))
        eff = log_effective_mass(jackknife_rows(nucleon_forward(*kd.moving_nucleon[k])))
        entry = {"n": cls["n"], "p2": p2, "E": None, "E_continuum": _value_error(np.sqrt(m_n ** 2 + p2)),
                 "effective_energy": _value_error(eff)}
        if np.all(np.isfinite(eff[:, nmin:nmax + 1])):
            energy, chi2 = plateau(eff, nmin, nmax)
            entry["E"] = dict(_value_error(energy), chi2_dof=chi2)
        else:
            notes.append(f"kappa {kd.kappa}, momentum n = {cls['n']}: the nucleon's effective energy is undefined "
                         f"in t = {nmin}..{nmax}; no E_N(p) there")
        out.append(entry)
    return out


def analyse(paths, fit_range=None, a4_sign=1, sink="point", nucleon_fit_range=None):
    """The whole analysis of the files: the summary (schema latke-spectrum/1) and its notes."""
    notes = []
    pair_data = {}
    meta, data = load(paths, notes, sink, pair_data)
    nt = meta["lattice"][3]
    half = nt // 2
    tmin, tmax = fit_range if fit_range is not None else default_fit_range(nt)
    if not 0 <= tmin <= tmax <= half - 1:
        what = "--fit-range" if fit_range is not None else "the default fit range"
        raise SpectrumError(f"{what} t = {tmin}..{tmax} is not within 0..{half - 1} (T = {nt}); "
                            "give --fit-range tmin,tmax with 0 <= tmin <= tmax <= T/2 - 1")
    nmin, nmax = nucleon_fit_range if nucleon_fit_range is not None else (tmin, tmax)
    if not 0 <= nmin <= nmax <= half - 1:
        raise SpectrumError(f"--nucleon-fit-range t = {nmin}..{nmax} is not within 0..{half - 1} (T = {nt})")
    kappas = sorted(data)
    # PCAC relates the local A_4 and P at the sink: a smeared sink's ratio is not the quark mass.
    results = [analyse_kappa(data[k], tmin, tmax, a4_sign, pcac=sink == "point", nucleon_range=(nmin, nmax))
               for k in kappas]
    if sink != "point":
        notes.append(f"{sink} sink: no PCAC mass and no kappa_c from it (PCAC needs the local currents "
                     "at the sink: --sink point)")

    per_kappa = []
    for kd, r in zip((data[k] for k in kappas), results):
        entry = {"kappa": kd.kappa, "n_configs": len(kd.configs), "configs": kd.configs,
                 "plaquette": kd.plaquette, "channels": kd.channels,
                 "m_pi": {"value": r["m_pi"][0], "error": jackknife_error(r["m_pi"]),
                          "chi2_dof": r["m_pi_chi2_dof"]},
                 "m_pi_sq": _value_error(r["m_pi"] ** 2), "m_pcac": None,
                 "correlator": {ch: _value_error(r["rows"][ch]) for ch in kd.channels},
                 "effective_mass": {ch: dict(_value_error(r["meff"][ch]),
                                             kind="sinh" if ch in ANTISYMMETRIC else "cosh")
                                    for ch in kd.channels}}
        if "pcac_t" in r:
            entry["m_pcac"] = {"value": r["m_pcac"][0], "error": jackknife_error(r["m_pcac"]),
                               "chi2_dof": r["m_pcac_chi2_dof"]}
            entry["pcac_mass"] = _value_error(r["pcac_t"])
        if kd.momenta:
            entry["dispersion"] = dispersion(kd, r["m_pi"], meta["lattice"], tmin, tmax, notes)
        entry["m_n"] = None
        if "nucleon_rows" in r:
            entry["nucleon"] = {"correlator": _value_error(r["nucleon_rows"]),
                                "effective_mass": dict(_value_error(r["nucleon_meff"]), kind="log")}
            if "m_n" in r:
                entry["m_n"] = {"value": r["m_n"][0], "error": jackknife_error(r["m_n"]), "chi2_dof": r["m_n_chi2_dof"]}
                entry["m_n_over_m_pi"] = _value_error(r["m_n"] / r["m_pi"])
                if kd.moving_nucleon:
                    entry["nucleon_dispersion"] = nucleon_dispersion(kd, r["m_n"], meta["lattice"], nmin, nmax, notes)
            else:
                notes.append(f"kappa {kd.kappa}: the nucleon's effective mass is undefined somewhere in t = "
                             f"{nmin}..{nmax} (too noisy there); no m_N")
        per_kappa.append(entry)

    kappa_c = {"from_m_pi_sq": None, "from_m_pcac": None}
    if len(kappas) < 2:
        notes.append("one kappa: no kappa_c (it needs at least two)")
    else:
        kappa_c["from_m_pi_sq"] = kappa_c_fit(kappas, [r["m_pi"] ** 2 for r in results])
        if all("pcac_t" in r for r in results):
            kappa_c["from_m_pcac"] = kappa_c_fit(kappas, [r["m_pcac"] for r in results])
    without = [k for k, r in zip(kappas, results) if "pcac_t" not in r]
    if without and sink == "point":
        notes.append(f"no a4_pion correlator at kappa {', '.join(map(str, without))}: no PCAC mass there"
                     + (" and no kappa_c from m_PCAC" if len(kappas) > 1 else ""))
    pcac = [e["m_pcac"]["value"] for e in per_kappa if e["m_pcac"]]
    if pcac and all(v < 0 for v in pcac):
        notes.append("m_PCAC < 0 at every kappa: the data's a4_pion sign is the opposite of the convention "
                     "in docs/latke-spectrum.md; --a4-sign -1 flips it")

    pairs = []
    by_kappa = dict(zip(kappas, results))
    for (qk, ak), pkd in sorted(pair_data.items()):
        r = analyse_kappa(pkd, tmin, tmax, a4_sign, pcac=True)
        entry = {"quark_kappa": qk, "antiquark_kappa": ak, "n_configs": len(pkd.configs),
                 "m_ps": {"value": r["m_pi"][0], "error": jackknife_error(r["m_pi"]), "chi2_dof": r["m_pi_chi2_dof"]},
                 "m_pcac": None, "m_pcac_mean_of_degenerate": None}
        if "m_pcac" in r:
            entry["m_pcac"] = {"value": r["m_pcac"][0], "error": jackknife_error(r["m_pcac"]),
                               "chi2_dof": r["m_pcac_chi2_dof"]}
            if all(k in by_kappa and "m_pcac" in by_kappa[k] for k in (qk, ak)):
                entry["m_pcac_mean_of_degenerate"] = _value_error(0.5 * (by_kappa[qk]["m_pcac"] + by_kappa[ak]["m_pcac"]))
        pairs.append(entry)

    summary = {"schema": SCHEMA, "inputs": list(paths), "sink": sink, "lattice": meta["lattice"], "csw": meta["csw"],
               "source": meta["source"], "fit_range": [tmin, tmax], "nucleon_fit_range": [nmin, nmax],
               "fit_range_rule": "given" if fit_range is not None else "default: tmin = max(2, T//4), tmax = T//2 - 2",
               "a4_sign": a4_sign, "kappas": per_kappa, "pairs": pairs, "kappa_c": kappa_c, "notes": notes}
    return _plain(summary)


def _plain(v):
    """JSON-ready: arrays to lists, numpy scalars to floats, NaN and inf to None."""
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, np.ndarray):
        return _plain(v.tolist())
    if isinstance(v, (np.floating, float)):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, np.integer):
        return int(v)
    return v


# --- output -------------------------------------------------------------------------------------

def fmt(v, e):
    """v(e), the error to two significant digits; '-' for a missing value."""
    if v is None:
        return "-"
    if e is None or not e > 0:
        return f"{v:.6g}"
    d = max(0, 1 - math.floor(math.log10(e)))
    return f"{v:.{d}f}({round(e * 10 ** d)})"


def fmt_pm(v, e):
    if v is None:
        return "-"
    if e is None or not e > 0:
        return f"{v:.6g}"
    d = max(0, 1 - math.floor(math.log10(e)))
    return f"{v:.{d}f} ± {e:.{d}f}"


def print_table(s, out=None):
    out = out or sys.stdout
    lat = s["lattice"]
    kappas = s["kappas"]
    tmin, tmax = s["fit_range"]
    print(f"latke-spectrum: {len(kappas)} kappa value(s), lattice {'x'.join(map(str, lat))}, "
          f"fit range t = {tmin}..{tmax} ({s['fit_range_rule']})"
          + (f", nucleon t = {s['nucleon_fit_range'][0]}..{s['nucleon_fit_range'][1]}"
             if s.get("nucleon_fit_range") and s["nucleon_fit_range"] != [tmin, tmax] else ""), file=out)
    for e in kappas:
        chans = e["channels"]
        kinds = ", ".join(f"{ch}: {e['effective_mass'][ch]['kind']}" for ch in chans if ch in ANTISYMMETRIC)
        print(f"\neffective masses, kappa {e['kappa']} ({e['n_configs']} configurations; cosh"
              + (f", {kinds}" if kinds else "") + ")", file=out)
        meffs = [e["effective_mass"][ch] for ch in chans]
        if e.get("nucleon"):
            chans, meffs = chans + ["nucleon (log)"], meffs + [e["nucleon"]["effective_mass"]]
        print("  t " + "".join(f"{ch:>14}" for ch in chans), file=out)
        for t in range(lat[3] // 2):
            cells = [fmt(m["value"][t], m["error"][t]) for m in meffs]
            print(f"{t:3d} " + "".join(f"{c:>14}" for c in cells), file=out)
    baryons = any(e.get("nucleon") for e in kappas)
    print(f"\n{'kappa':>10} {'N':>4}  {'m_pi':<22}{'m_PCAC':<22}{'m_pi^2':<22}" + ("m_N" if baryons else ""),
          file=out)
    for e in kappas:
        pcac, mn = e["m_pcac"], e.get("m_n")
        print(f"{e['kappa']:>10} {e['n_configs']:>4}  {fmt_pm(e['m_pi']['value'], e['m_pi']['error']):<22}"
              f"{fmt_pm(pcac['value'], pcac['error']) if pcac else '-':<22}"
              f"{fmt_pm(e['m_pi_sq']['value'], e['m_pi_sq']['error']):<22}"
              + ((fmt_pm(mn["value"], mn["error"]) if mn else "-") if baryons else ""), file=out)
    for e in kappas:
        if e.get("nucleon_dispersion"):
            print(f"\nnucleon dispersion, kappa {e['kappa']} (E at rest = m_N)", file=out)
            print(f"  {'n':<10}{'p^2':>8}  {'E':<20}{'continuum':<20}", file=out)
            for d in e["nucleon_dispersion"]:
                E = d["E"] or {}
                print(f"  {','.join(map(str, d['n'])):<10}{d['p2']:>8.4f}  {fmt(E.get('value'), E.get('error')):<20}"
                      f"{fmt(d['E_continuum']['value'], d['E_continuum']['error']):<20}", file=out)
    for e in kappas:
        if not e.get("dispersion"):
            continue
        print(f"\npion dispersion, kappa {e['kappa']} (E at rest = m_pi; lattice: sinh^2(E/2) = sinh^2(m/2) + "
              "sum sin^2(p/2))", file=out)
        print(f"  {'n':<10}{'p^2':>8}  {'E':<20}{'continuum':<20}{'lattice':<20}{'c^2':<18}", file=out)
        for d in e["dispersion"]:
            E, c2 = d["E"] or {}, d["c2"] or {}
            print(f"  {','.join(map(str, d['n'])):<10}{d['p2']:>8.4f}  {fmt(E.get('value'), E.get('error')):<20}"
                  f"{fmt(d['E_continuum']['value'], d['E_continuum']['error']):<20}"
                  f"{fmt(d['E_lattice']['value'], d['E_lattice']['error']):<20}"
                  f"{fmt(c2.get('value'), c2.get('error')):<18}", file=out)
    if s.get("pairs"):
        print("\nkappa pairs (quark, antiquark): pseudoscalar mass, PCAC mass and the mean of the two "
              "degenerate PCAC masses", file=out)
        print(f"  {'kappa_q':>10} {'kappa_a':>10}  {'m_PS':<22}{'m_PCAC':<22}{'(m_q + m_a)/2':<22}", file=out)
        for p in s["pairs"]:
            mp, mm = p["m_pcac"], p["m_pcac_mean_of_degenerate"]
            print(f"  {p['quark_kappa']:>10} {p['antiquark_kappa']:>10}  "
                  f"{fmt_pm(p['m_ps']['value'], p['m_ps']['error']):<22}"
                  f"{fmt_pm(mp['value'], mp['error']) if mp else '-':<22}"
                  f"{fmt_pm(mm['value'], mm['error']) if mm else '-':<22}", file=out)
    for key, label in (("from_m_pi_sq", "m_pi^2 "), ("from_m_pcac", "m_PCAC")):
        f = s["kappa_c"][key]
        if f is None:
            print(f"kappa_c from {label}: -", file=out)
            continue
        chi = f"   chi2/dof {f['chi2_dof']:.2f}" if f["chi2_dof"] is not None else ""
        print(f"kappa_c from {label}: {fmt_pm(f['kappa_c'], f['kappa_c_error'])}   "
              f"(slope {fmt_pm(f['slope'], f['slope_error'])}, {f['n_kappa']} kappas){chi}", file=out)


def _atomic_write(path, write, binary=False):
    """write(file) into a temporary file beside path, then rename it over path: a reader sees the
    old file or the whole new one, never part of one."""
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb" if binary else "w", encoding=None if binary else "utf-8") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_summary(s, out_dir):
    path = os.path.join(out_dir, "summary.json")
    _atomic_write(path, lambda f: (json.dump(s, f, indent=1, allow_nan=False), f.write("\n")))
    return path


def write_plots(s, out_dir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SpectrumError("matplotlib is not available to this Python; use --json-only, or another Python")
    tmin, tmax = s["fit_range"]
    nan = float("nan")

    def arr(values):
        return np.array([nan if v is None else v for v in values], dtype=float)

    def plateau_figure(entries, curve, mass, symbol, first, lo, hi, ylabel, title, name):
        """Effective masses of each entry (curve(e)), from t = first, with the fitted mass's band
        over the plateau lo..hi, into name."""
        fig, ax = plt.subplots(figsize=(7, 4.5))
        values = []
        for i, e in enumerate(entries):
            m = curve(e)
            t = np.arange(len(m["value"])) + 0.08 * (i - (len(entries) - 1) / 2)
            bars = ax.errorbar(t[first:], arr(m["value"])[first:], yerr=arr(m["error"])[first:], fmt="o", ms=3,
                               capsize=2,
                               label=f"κ = {e['kappa']}: {symbol} = {fmt(e[mass]['value'], e[mass]['error'])}")
            v, err = e[mass]["value"], e[mass]["error"] or 0.0
            ax.fill_between([lo, hi], v - err, v + err, color=bars[0].get_color(), alpha=0.3, lw=0)
            ax.plot([lo, hi], [v, v], color=bars[0].get_color(), lw=1)
            values.append(v)
        ax.set_ylim(0.7 * min(values), 1.3 * max(values))
        ax.set_xlabel("t")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{title}, plateau t = {lo}..{hi}")
        ax.legend(fontsize="small")
        fig.tight_layout()
        _atomic_write(os.path.join(out_dir, name), lambda f: fig.savefig(f, format="png", dpi=120), binary=True)
        plt.close(fig)

    plateau_figure(s["kappas"], lambda e: e["effective_mass"]["pion"], "m_pi", "m_π", 0, tmin, tmax,
                   "pion effective mass (cosh)", "pion effective mass", "effective_mass.png")

    panels = [("m_pi_sq", "from_m_pi_sq", "m_π²"), ("m_pcac", "from_m_pcac", "m_PCAC")]
    panels = [p for p in panels if all(e[p[0]] for e in s["kappas"])]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.5), squeeze=False)
    for ax, (key, fit_key, label) in zip(axes[0], panels):
        x = np.array([1.0 / e["kappa"] for e in s["kappas"]])
        ax.errorbar(x, [e[key]["value"] for e in s["kappas"]], yerr=[e[key]["error"] or 0.0 for e in s["kappas"]],
                    fmt="o", capsize=3, label=label)
        f = s["kappa_c"][fit_key]
        if f and f["kappa_c"]:
            xc = 1.0 / f["kappa_c"]
            lo, hi = min(x.min(), xc), max(x.max(), xc)
            xs = np.linspace(lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo), 50)
            ax.plot(xs, f["intercept"] + f["slope"] * xs, lw=1, label=f"{f['intercept']:.4g} + {f['slope']:.4g}/κ")
            ax.axvline(xc, color="k", ls="--", lw=1,
                       label=f"κ_c = {fmt(f['kappa_c'], f['kappa_c_error'])}")
        ax.axhline(0.0, color="gray", lw=0.5)
        ax.set_xlabel("1/κ")
        ax.set_ylabel(label)
        ax.legend(fontsize="small")
    fig.suptitle("κ_c: linear extrapolation in 1/κ")
    fig.tight_layout()
    _atomic_write(os.path.join(out_dir, "kappa_c.png"), lambda f: fig.savefig(f, format="png", dpi=120), binary=True)
    plt.close(fig)

    if any(e.get("m_n") for e in s["kappas"]):
        nmin, nmax = s.get("nucleon_fit_range", [tmin, tmax])
        plateau_figure([k for k in s["kappas"] if k.get("m_n")], lambda e: e["nucleon"]["effective_mass"], "m_n",
                       "m_N", 1, nmin, nmax, "nucleon effective mass (log)", "nucleon effective mass", "nucleon.png")

    if any(e.get("dispersion") for e in s["kappas"]):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for e in s["kappas"]:
            d = [x for x in e["dispersion"] if x["E"]]
            m, merr = e["m_pi"]["value"], e["m_pi"]["error"] or 0.0
            p2 = np.array([0.0] + [x["p2"] for x in d])
            e2 = np.array([m * m] + [x["E"]["value"] ** 2 for x in d])
            e2err = np.array([2 * m * merr] + [2 * x["E"]["value"] * (x["E"]["error"] or 0.0) for x in d])
            bars = ax.errorbar(p2, e2, yerr=e2err, fmt="o", ms=4, capsize=2, label=f"κ = {e['kappa']}")
            ps = np.linspace(0, max(p2.max(), 1e-3) * 1.05, 50)
            ax.plot(ps, m * m + ps, color=bars[0].get_color(), lw=1)
            lat = [x["E_lattice"]["value"] ** 2 for x in d]
            ax.plot(p2[1:], lat, "x", color=bars[0].get_color(), ms=6)
        ax.set_xlabel("p² = Σ (2π n_i / L_i)²")
        ax.set_ylabel("E_π²")
        ax.set_title("pion dispersion: E² against p² (line: m² + p²; ×: free lattice boson)")
        ax.legend(fontsize="small")
        fig.tight_layout()
        _atomic_write(os.path.join(out_dir, "dispersion.png"), lambda f: fig.savefig(f, format="png", dpi=120),
                      binary=True)
        plt.close(fig)


# --- command line -------------------------------------------------------------------------------

def _fit_range(text):
    try:
        tmin, tmax = (int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not tmin,tmax (two integers)")
    return tmin, tmax


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="latke-spectrum",
        description="Meson spectroscopy from latke-propagator files: effective masses, the pion and PCAC "
                    "masses per kappa, kappa_c; jackknife errors over configurations.")
    p.add_argument("files", nargs="+", metavar="FILE", help="latke-propagator/1 JSON files (measurements concatenated)")
    p.add_argument("--out", default="spectrum", metavar="DIR",
                   help="where summary.json and the figures go (default: spectrum/)")
    p.add_argument("--nucleon-fit-range", type=_fit_range, metavar="TMIN,TMAX",
                   help="plateau range of m_N (default: --fit-range's; a nucleon's plateau starts later)")
    p.add_argument("--fit-range", type=_fit_range, metavar="TMIN,TMAX",
                   help="plateau range of m_pi and m_PCAC (default: max(2, T//4), T//2 - 2)")
    p.add_argument("--a4-sign", type=int, choices=(1, -1), default=1,
                   help="multiplies a4_pion before the PCAC mass (default 1; see the docs)")
    p.add_argument("--sink", choices=("point", "smeared", "wall"), default="point",
                   help="the correlators at a point sink, or (runs with -latke_smear) at the smeared sink, or "
                        "(runs with -latke_source wall) at the wall sink")
    p.add_argument("--json-only", action="store_true", help="write summary.json only, no figures (no matplotlib)")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    try:
        summary = analyse(args.files, args.fit_range, args.a4_sign, args.sink, args.nucleon_fit_range)
        print_table(summary)
        for note in summary["notes"]:
            print(f"latke-spectrum: note: {note}", file=sys.stderr)
        try:
            os.makedirs(args.out, exist_ok=True)
        except OSError as e:
            raise SpectrumError(f"{args.out}: cannot create the output directory ({e.strerror})")
        written = [write_summary(summary, args.out)]
        if not args.json_only:
            write_plots(summary, args.out)
            written += [os.path.join(args.out, n) for n in ("effective_mass.png", "kappa_c.png")]
            if any(e.get("m_n") for e in summary["kappas"]):
                written.append(os.path.join(args.out, "nucleon.png"))
            if any(e.get("dispersion") for e in summary["kappas"]):
                written.append(os.path.join(args.out, "dispersion.png"))
        print(f"wrote {', '.join(written)}")
    except SpectrumError as e:
        print(f"latke-spectrum: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
