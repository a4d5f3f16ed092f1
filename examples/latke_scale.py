#!@LATKE_SCALE_PYTHON@
# latke-scale: strong-scaling studies of latke-solve. `run` solves one problem with each
# configuration (PETSc or native options, as latke-solve takes them) on each rank count,
# repeats it for a spread, and writes one JSON record per run (atomically, so that an earlier
# record is never lost); `report` turns a study's records into a Markdown and an HTML report
# with figures (matplotlib); `validate` checks records against the schema. docs/latke-scale.md.
import argparse
import datetime
import glob
import html
import itertools
import json
import math
import os
import re
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import latke_model as model  # noqa: E402  (installed beside latke-scale)

SCHEMA = "latke-scale/1"
LATKE_VERSION = "@PROJECT_VERSION@"
PETSC_VERSION = "@PETSC_VERSION@"
CUDA_VERSION = "@LATKE_SCALE_CUDA_VERSION@"
HERE = os.path.dirname(os.path.abspath(__file__))

DEFAULT_PROBLEM = ("-latke_lattice 32,32,32,64 -latke_kappa 0.1351 -latke_csw 1.769 -latke_source z2 "
                   "-latke_gauge quenched -latke_gauge_sweeps 100")
# The model's solvers (the options decide which; MG needs a one-rank profile from --study).
DEFAULT_MODEL_CONFIGS = [
    "bicgstab=-latke_native -latke_solver bicgstab -latke_solver_sloppy half",
    "gcr-schwarz=-latke_native -latke_solver gcr -latke_solver_pc schwarz -pc_latke_schwarz_iterations 8",
    "mg=-latke_native -latke_solver gcr -latke_solver_pc mg",
]
# latke-scale model --placements: the multigrid's coarse levels placed other than by default,
# from the same profile: gathered whole onto every rank once small (the rule before gathering
# onto fewer ranks existed), and never gathered.
PLACEMENTS = [("whole", "-pc_latke_mg_gather_onto_sites 2147483647"), ("spread", "-pc_latke_mg_gather_sites 0")]
DEFAULT_CONFIGS = [
    "mg=-latke_native -latke_solver gcr -latke_solver_pc mg",
    "bicgstab=-latke_native -latke_solver bicgstab",
]

# Field: (type, required). Types: str, int, float, bool, list, dict, "num" (int or float).
RECORD_FIELDS = {
    "schema": (str, True), "study": (str, True), "config": (str, True), "options": (list, True),
    "problem": (list, True), "backend": (str, True), "ranks": (int, True), "grid": (list, False),
    "lattice": (str, False), "repeat": (int, True), "status": (str, True), "error": (str, False),
    "command": (str, True), "iterations": (int, False), "converged": (bool, False),
    "setup_seconds": ("num", False), "solve_seconds": ("num", False), "solve_seconds_warm": ("num", False),
    "time_to_solution": ("num", False), "true_residual": ("num", False), "events": (dict, False),
    "profiled_solves": (int, False), "mg_levels": (list, False), "versions": (dict, True),
    "devices": (list, True), "host": (str, True), "date": (str, True), "halo": (dict, False),
    "memory_peak_bytes": (dict, False),
}


def validate_record(rec):
    """Problems with a record, as sentences naming the field; empty when it is valid."""
    problems = []
    if not isinstance(rec, dict):
        return ["the record is not a JSON object"]
    for name, (kind, required) in RECORD_FIELDS.items():
        if name not in rec:
            if required:
                problems.append(f"field '{name}' is missing")
            continue
        value = rec[name]
        if kind == "num":
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        elif kind is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
        else:
            ok = isinstance(value, kind)
        if not ok:
            want = "a number" if kind == "num" else kind.__name__
            problems.append(f"field '{name}' is {json.dumps(value)[:40]}, expected {want}")
    for name in rec:
        if name not in RECORD_FIELDS:
            problems.append(f"field '{name}' is not in schema {SCHEMA}")
    if rec.get("schema") not in (None, SCHEMA):
        problems.append(f"field 'schema' is '{rec.get('schema')}', expected '{SCHEMA}'")
    if rec.get("status") not in (None, "ok", "failed"):
        problems.append(f"field 'status' is '{rec.get('status')}', expected 'ok' or 'failed'")
    if rec.get("status") == "ok":
        for name in ("iterations", "solve_seconds", "setup_seconds"):
            if name not in rec:
                problems.append(f"field '{name}' is missing from a run that succeeded")
    if rec.get("status") == "failed" and not rec.get("error"):
        problems.append("a failed run has no 'error'")
    if isinstance(rec.get("ranks"), int) and rec["ranks"] < 1:
        problems.append(f"field 'ranks' is {rec['ranks']}, expected 1 or more")
    return problems


def write_atomically(path, text):
    """Writes path through a temporary file in its directory and a rename."""
    d = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=d)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def command_output(args):
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def gpu_names():
    out = command_output(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"])
    return [line.strip() for line in out.splitlines() if line.strip()]


def mpi_version(mpirun):
    lines = command_output([mpirun, "--version"]).splitlines()
    return lines[0].strip() if lines else ""


# -log_view's table: name, count, count ratio, max time, time ratio, ...
LOG_ROW = re.compile(r"^(\S+)\s+(\d+)\s+[\d.]+\s+([\d.eE+-]+)\s+[\d.]+")
# -pc_latke_mg_monitor's per-level profile lines
MG_ROW = re.compile(r"Latke MG: level (\d+) \(([^)]*)\): ([\d.]+) ms in ([\d.]+) visits; halo wait ([\d.]+) ms in "
                    r"([\d.]+) exchanges; global sums ([\d.]+) ms in ([\d.]+); ([\d.]+) launches"
                    r"(?:; gathering its right-hand side ([\d.]+) ms)?")
EVENTS = ("KSPSolve", "MatMult", "PCApply", "LatkeMatMult", "LatkeDslash", "LatkeClover", "LatkeHalo", "LatkeStage",
          "LatkeMGSetup", "LatkeMGApply", "LatkeMGSmooth0", "LatkeMGSmooth1", "LatkeMGSmooth2", "LatkeMGSmooth3",
          "LatkeMGTransfer", "LatkeMGGather", "LatkeMGCoarseOp", "LatkeMGCoarseSolve", "LatkeSchwarzBlocks", "VecMDot", "VecNorm",
          "VecMAXPY", "VecAXPY", "VecAYPX", "VecWAXPY")


STAGE = "Solved again"  # latke-solve's log stage of the solves after the first


def parse_log_view(text):
    """The events of latke-solve's "Solved again" stage (the warm solves) in -log_view's table,
    with the stage's own time as "Stage" (max over ranks: time ratio 1 for a whole stage)."""
    events = {}
    m = re.search(r"^\s*\d+:\s+" + STAGE + r":\s+([\d.eE+-]+)", text, re.M)
    if m:
        events["Stage"] = {"count": 1, "seconds": float(m.group(1))}
    inside = False
    for line in text.splitlines():
        if line.startswith("--- Event Stage"):
            if inside:
                break  # the next stage, or the object tables after the events
            inside = line.rstrip().endswith(": " + STAGE)
            continue
        row = LOG_ROW.match(line) if inside else None
        if row and row.group(1) in EVENTS:
            events[row.group(1)] = {"count": int(row.group(2)), "seconds": float(row.group(3))}
    return events


def parse_mg_profile(text):
    levels = []
    for line in text.splitlines():
        m = MG_ROW.search(line)
        if m:
            levels.append({"level": int(m.group(1)), "where": m.group(2), "ms_per_cycle": float(m.group(3)),
                           "visits": float(m.group(4)), "halo_wait_ms": float(m.group(5)),
                           "exchanges": float(m.group(6)), "global_sum_ms": float(m.group(7)),
                           "global_sums": float(m.group(8)), "launches": float(m.group(9)),
                           "gather_ms": float(m.group(10) or 0.0)})
    return levels


def grid_of(lattice):
    m = re.search(r"on (\d+)x(\d+)x(\d+)x(\d+) ranks", lattice or "")
    return [int(g) for g in m.groups()] if m else None


def failure_reason(text):
    """The message of a failed latke-solve run: PETSc's error message (the line after its class),
    else the last line naming an error, else the last line."""
    lines = [line for line in text.splitlines() if line.strip()]
    for i, line in enumerate(lines):
        if "PETSC ERROR:" in line and "Error Message" in line:
            msgs = [m.split("PETSC ERROR:", 1)[1].strip() for m in lines[i + 1:i + 3] if "PETSC ERROR:" in m]
            if msgs:
                return msgs[-1]
    errors = [line for line in lines if "error" in line.lower()]
    return (errors or lines or ["no output"])[-1].strip()


def run_case(a, study, config, options, ranks, grid, repeat, out_dir, versions, devices):
    """One run (and, with --phases, one profiled run) of latke-solve; returns the record."""
    tag = f"{config}_np{ranks}{'_' + grid.replace(',', '') if grid else ''}_r{repeat}"
    base = shlex.split(a.mpirun) + ["-np", str(ranks)] + [a.solve] + shlex.split(a.problem) + options
    base += ["-latke_backend", a.backend, "-latke_solves", "2"]
    if grid:
        base += ["-latke_grid", grid]
    rec = {"schema": SCHEMA, "study": study, "config": config, "options": options, "problem": shlex.split(a.problem),
           "backend": a.backend, "ranks": ranks, "repeat": repeat, "versions": versions, "devices": devices,
           "host": socket.gethostname(), "date": datetime.datetime.now().isoformat(timespec="seconds")}
    if grid:
        rec["grid"] = [int(g) for g in grid.split(",")]
    json_path = os.path.join(out_dir, "logs", tag + ".json")
    cmd = base + ["-latke_json", json_path]
    rec["command"] = shlex.join(cmd)
    log_path = os.path.join(out_dir, "logs", tag + ".log")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
        text, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:  # (OpenMPI's mpiexec may also hang after ranks that failed)
        out = (e.stdout or b"") + (e.stderr or b"") if isinstance(e.stdout or b"", bytes) else (e.stdout or "") + (
            e.stderr or "")
        text = out.decode(errors="replace") if isinstance(out, bytes) else out
        text, rc = text + f"\nlatke-scale: the run took longer than {a.timeout} s and was stopped", None
    write_atomically(log_path, text)
    summary = None
    if rc == 0 and os.path.exists(json_path):
        with open(json_path) as f:
            summary = json.load(f)
    if summary is None or not summary.get("converged", False):
        rec["status"] = "failed"
        why = failure_reason(text) if summary is None else f"did not converge ({summary.get('reason', '?')})"
        rec["error"] = (f"exit {rc}: " if rc is not None else "") + why[:300]
        return rec
    rec["status"] = "ok"
    rec["versions"] = dict(versions, latke=summary.get("latke_version", versions["latke"]),
                           petsc=summary.get("petsc_version", versions["petsc"]))  # the ones that ran
    rec["lattice"] = summary["lattice"]
    if "grid" not in rec and grid_of(summary["lattice"]):
        rec["grid"] = grid_of(summary["lattice"])
    rec["iterations"] = int(summary["iterations"])
    rec["converged"] = bool(summary["converged"])
    rec["true_residual"] = float(summary["true_residual"])
    rec["setup_seconds"] = float(summary["setup_seconds"])
    rec["solve_seconds"] = float(summary["solve_seconds"])
    warm = summary.get("repeat_solve_seconds") or [summary["solve_seconds"]]
    rec["solve_seconds_warm"] = float(min(warm))
    rec["time_to_solution"] = rec["setup_seconds"] + rec["solve_seconds"]
    for key in ("halo", "memory_peak_bytes"):  # a warm solve's exchanges; Latke's buffers at their peak
        if isinstance(summary.get(key), dict):
            rec[key] = summary[key]
    if a.phases:  # the same run with PETSc's log events and the multigrid's per-level profile
        view = os.path.join(out_dir, "logs", tag + ".log_view")
        pcmd = base + ["-log_view", f":{view}", "-pc_latke_mg_monitor"]
        try:
            p = subprocess.run(pcmd, capture_output=True, text=True, timeout=a.timeout)
            ptext = p.stdout + p.stderr
        except subprocess.TimeoutExpired:
            ptext = ""
        write_atomically(log_path + ".profiled", ptext)
        if os.path.exists(view):
            with open(view) as f:
                rec["events"] = parse_log_view(f.read())
            rec["profiled_solves"] = 1  # -latke_solves 2: one solve in the stage
        levels = parse_mg_profile(ptext)
        if levels:
            rec["mg_levels"] = levels
    return rec


def cmd_run(a):
    devices = gpu_names() if a.backend == "cuda" else []
    present = max(1, len(devices)) if a.backend == "cuda" else 4
    if a.grids:
        cases = []
        for item in a.grids.split():
            np_text, _, grid = item.partition(":")
            cases.append((int(np_text), grid))
    elif a.ranks:
        cases = [(int(n), "") for n in a.ranks.split(",")]
    else:  # every grid the lattice allows, 1, 2, 4, ... up to the GPUs present
        lattice = lattice_of(shlex.split(a.problem)) or [8, 8, 8, 8]
        cases = [(n, ",".join(map(str, g))) for n in (1, 2, 4, 8, 16, 32, 64) if n <= present
                 for g in process_grids(lattice, n)]
    if a.list:
        for n, grid in cases:
            print(f"{n} rank(s){' grid ' + grid if grid else ''}")
        return 0
    if not os.path.exists(a.solve):
        sys.exit(f"latke-scale: latke-solve not found at {a.solve} (give --solve)")
    if a.backend == "cuda" and devices:
        for n, _ in cases:
            if n > len(devices):
                print(f"latke-scale: {n} ranks asked, {len(devices)} GPUs present: ranks will share GPUs "
                      "(correct, but not a scaling measurement)", file=sys.stderr)
    os.makedirs(os.path.join(a.out, "records"), exist_ok=True)
    os.makedirs(os.path.join(a.out, "logs"), exist_ok=True)
    versions = {"latke": LATKE_VERSION, "petsc": PETSC_VERSION, "cuda": CUDA_VERSION,
                "mpi": mpi_version(shlex.split(a.mpirun)[0])}
    configs = a.config or DEFAULT_CONFIGS
    failed = 0
    for item in configs:
        name, _, opts = item.partition("=")
        for n, grid in cases:
            for r in range(a.repeat):
                rec = run_case(a, a.study, name, shlex.split(opts), n, grid, r, a.out, versions, devices)
                path = os.path.join(a.out, "records",
                                    f"{name}_np{n}{'_' + grid.replace(',', '') if grid else ''}_r{r}.json")
                write_atomically(path, json.dumps(rec, indent=1) + "\n")
                state = (f"{rec['iterations']} iterations, solve {rec['solve_seconds_warm']:.4g} s, "
                         f"setup {rec['setup_seconds']:.4g} s" if rec["status"] == "ok" else "FAILED: " + rec["error"])
                halo = rec.get("halo") or {}
                if halo.get("exchanges_per_rank"):
                    state += (f", {halo['exchanges_per_rank']:.0f} halo exchanges per rank of "
                              f"{halo['bytes_per_exchange'] * 1e-3:.3g} kB")
                print(f"{name}, {n} rank(s){' grid ' + grid if grid else ''}, run {r + 1}/{a.repeat}: {state}",
                      flush=True)
                failed += rec["status"] != "ok"
    if not a.no_report:
        try:
            for path in report(a.out, a.out):
                print(f"wrote {path}")
        except ImportError as e:  # a GPU host without matplotlib: the records are there
            print(f"latke-scale: no report ({e}); run 'latke-scale report {a.out}' where matplotlib is installed",
                  file=sys.stderr)
    return 1 if failed else 0


def load_records(study_dir):
    records, problems = [], []
    for path in sorted(glob.glob(os.path.join(study_dir, "records", "*.json"))):
        try:
            with open(path) as f:
                rec = json.load(f)
        except (OSError, ValueError) as e:
            problems.append(f"{os.path.basename(path)}: not readable JSON ({e})")
            continue
        bad = validate_record(rec)
        if bad:
            problems.append(f"{os.path.basename(path)}: " + "; ".join(bad))
            continue
        records.append(rec)
    return records, problems


def phase_split(rec):
    """Seconds per warm solve in the profiled run, in parts that do not overlap: for a multigrid
    configuration each level's own time and the halo waits and gathers of all of them (from the
    per-level profile, times the cycles per solve) and the outer solver; otherwise the halo
    wait, the operator's kernels, the Schwarz blocks solved on chip (where there are) and the
    rest of the solver."""
    ev = rec.get("events") or {}
    n = max(1, rec.get("profiled_solves", 1))
    total = ev.get("Stage", {}).get("seconds")
    if not total:
        return None
    get = lambda k: ev.get(k, {}).get("seconds", 0.0) / n
    levels = rec.get("mg_levels")
    cycles = ev.get("LatkeMGApply", {}).get("count", 0) / n
    if levels and cycles:
        parts = {f"MG level {lv['level']}": max(0.0, lv["ms_per_cycle"] - lv["halo_wait_ms"] - lv["gather_ms"])
                 * 1e-3 * cycles for lv in levels}
        parts["MG halo wait"] = sum(lv["halo_wait_ms"] for lv in levels) * 1e-3 * cycles
        parts["MG gathers"] = sum(lv["gather_ms"] for lv in levels) * 1e-3 * cycles
        parts["outer solver"] = max(0.0, total / n - get("LatkeMGApply"))
        return parts
    halo = get("LatkeHalo")
    # The operator: PETSc's MatMult of it (LatkeMatMult) or, in Latke's solvers, its kernels;
    # the Schwarz blocks solved on chip (no exchange) apart.
    op = max(get("LatkeMatMult"), get("LatkeDslash") + get("LatkeClover"))
    blocks = get("LatkeSchwarzBlocks")
    parts = {"halo wait": halo, "operator": max(0.0, op - halo)}
    if blocks:
        parts["Schwarz blocks"] = blocks
    parts["rest of the solver"] = max(0.0, total / n - op - blocks)
    return parts



def option_value(options, name, default=None):
    """The value after `name` in a list of options (the last one given)."""
    value = default
    for i, o in enumerate(options[:-1]):
        if o == name:
            value = options[i + 1]
    return value


def process_grids(lattice, ranks):
    """Every process grid of `ranks` ranks (powers of two per dimension) that leaves even local
    extents, one per class of grids that differ only by a permutation of dimensions of equal
    extent (the same problem): within such a class the one splitting later dimensions more."""
    powers = [2 ** k for k in range(int(math.log2(ranks)) + 1)]
    out = [g for g in itertools.product(powers, repeat=4) if math.prod(g) == ranks and model.grid_fits(lattice, g)]
    canonical = set()
    for grid in out:
        grid = list(grid)
        for extent in set(lattice):
            dims = [m for m in range(4) if lattice[m] == extent]
            for m, v in zip(dims, sorted(grid[m] for m in dims)):
                grid[m] = v
        canonical.add(tuple(grid))
    return sorted(canonical, key=lambda g: tuple(reversed(g)), reverse=True)


def lattice_of(options):
    text = option_value(options, "-latke_lattice")
    if text is None:
        return None
    try:
        dims = [int(v) for v in text.split(",")]
    except ValueError:
        return None
    return dims if len(dims) == 4 else None


def predict_iteration(machine, options, lattice, grid, mg_profiles):
    """The model's parts of one iteration (microseconds) of the solver `options` name, or None
    for solvers the model does not cover (and MG without a one-rank profile)."""
    s = model.Split(lattice, grid, machine)
    solver = option_value(options, "-latke_solver", "bicgstab")
    pc = option_value(options, "-latke_solver_pc", "none")
    if "-latke_native" not in options:
        return None
    if solver == "bicgstab" and pc == "none":
        return model.bicgstab_iteration_us(machine, s, option_value(options, "-latke_solver_sloppy", "single"))
    if solver == "gcr" and pc == "schwarz":
        return model.gcr_schwarz_iteration_us(machine, s, int(option_value(options, "-pc_latke_schwarz_iterations", 4)))
    if solver == "gcr" and pc == "mg" and mg_profiles and mg_profiles.get(1):
        comm = mg_profiles.get("comm")
        if model.parse_where(mg_profiles[1][0]["where"]) != list(lattice):
            comm = None  # its levels are another lattice's: the counts of the one-rank profile
        return model.mg_iteration_us(machine, s, model.rescale_profile(mg_profiles[1], lattice),
                                     int(option_value(options, "-pc_latke_mg_nvec", 24)), comm,
                                     int(option_value(options, "-pc_latke_mg_gather_sites", model.GATHER_SITES)),
                                     int(option_value(options, "-pc_latke_mg_gather_onto_sites",
                                                      model.GATHER_ONTO_SITES)))
    return None


def mg_profiles_of(records):
    """Per configuration, the multigrid profiles the model is calibrated with: its work from a
    one-rank run ({1: levels}) and its exchanges and launches per cycle from the run on the
    fewest ranks above one ({"comm": levels})."""
    out = {}
    for r in sorted(records, key=lambda r: r["ranks"]):
        if r["status"] != "ok" or not r.get("mg_levels"):
            continue
        got = out.setdefault(r["config"], {})
        if r["ranks"] == 1:
            got.setdefault(1, r["mg_levels"])
        else:
            got.setdefault("comm", r["mg_levels"])
    return out


def report(study_dir, out_dir, machine=None):
    """Writes report.md, report.html and the figures; returns the files written. With a
    machine (latke_model.Machine) the model's solve times (its time per iteration times the
    measured iterations) are drawn over the measurements and tabled beside them."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records, problems = load_records(study_dir)
    os.makedirs(out_dir, exist_ok=True)
    ok = [r for r in records if r["status"] == "ok"]
    failed = [r for r in records if r["status"] != "ok"]
    configs = sorted({r["config"] for r in records})
    by = {}
    for r in ok:
        by.setdefault(r["config"], {}).setdefault(r["ranks"], []).append(r)
    written = []
    unit = "GPUs" if any(r["backend"] == "cuda" for r in records) else "ranks"
    profiles = mg_profiles_of(records)

    def median(rs, key):
        return statistics.median(r[key] for r in rs)

    # Time and speed-up against the rank count.
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    table = []
    for c in configs:
        pts = sorted(by.get(c, {}).items())
        if not pts:
            continue
        n = [p[0] for p in pts]
        t = [median(rs, "solve_seconds_warm") for _, rs in pts]
        lo = [t[i] - min(r["solve_seconds_warm"] for r in rs) for i, (_, rs) in enumerate(pts)]
        hi = [max(r["solve_seconds_warm"] for r in rs) - t[i] for i, (_, rs) in enumerate(pts)]
        line = ax1.errorbar(n, t, yerr=[lo, hi], marker="o", capsize=3, label=c)
        base_n, base_t = n[0], t[0]
        speed = [base_t / x for x in t]
        ax2.plot(n, speed, marker="o", label=c)
        predicted = {}
        if machine:
            for k, rs in pts:
                lattice, grid = lattice_of(rs[0]["problem"]), rs[0].get("grid")
                try:
                    parts = predict_iteration(machine, rs[0]["options"], lattice, grid, profiles.get(c)) \
                        if lattice and grid else None
                except model.ModelError:
                    parts = None
                if parts:
                    predicted[k] = model.total(parts) * 1e-6 * median(rs, "iterations")
            if predicted:
                ks = sorted(predicted)
                ax1.plot(ks, [predicted[k] for k in ks], "--", color=line[0].get_color(), label=f"{c} (model)")
        for i, (k, rs) in enumerate(pts):
            eff = speed[i] * base_n / k
            table.append((c, k, len(rs), median(rs, "iterations"), t[i], median(rs, "setup_seconds"), speed[i], eff,
                          predicted.get(k)))
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_xlabel(unit)
        ax.grid(True, which="both", alpha=0.3)
    ax1.set_yscale("log")
    ax1.set_ylabel("solve time (s, median; bars: min to max)")
    all_n = sorted({r["ranks"] for r in ok})
    if all_n:
        ax2.plot(all_n, [x / all_n[0] for x in all_n], "k--", lw=1, label="ideal")
    ax2.set_ylabel(f"speed-up over the fewest {unit}")
    ax1.legend()
    ax2.legend()
    fig.tight_layout()
    scaling_png = os.path.join(out_dir, "scaling.png")
    fig.savefig(scaling_png, dpi=110)
    plt.close(fig)
    written.append(scaling_png)

    # Per-phase split of a solve (profiled runs), one bar per rank count and configuration.
    phase_png = None
    bars = []
    for c in configs:
        for k, rs in sorted(by.get(c, {}).items()):
            split = next((phase_split(r) for r in rs if phase_split(r)), None)
            if split:
                bars.append((f"{c}\n{k}", split))
    if bars:
        names = []
        for _, split in bars:
            names += [k for k in split if k not in names]
        fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(bars) + 3), 4.5))
        bottom = [0.0] * len(bars)
        for name in names:
            vals = [split.get(name, 0.0) for _, split in bars]
            ax.bar(range(len(bars)), vals, bottom=bottom, label=name)
            bottom = [b + v for b, v in zip(bottom, vals)]
        ax.set_xticks(range(len(bars)))
        ax.set_xticklabels([b[0] for b in bars])
        ax.set_ylabel("seconds per solve (profiled run, events synchronized)")
        ax.legend(fontsize=8, bbox_to_anchor=(1.01, 1), loc="upper left")
        fig.tight_layout()
        phase_png = os.path.join(out_dir, "phases.png")
        fig.savefig(phase_png, dpi=110)
        plt.close(fig)
        written.append(phase_png)

    study = records[0]["study"] if records else os.path.basename(os.path.abspath(study_dir))
    first = ok[0] if ok else (records[0] if records else None)
    md = [f"# Strong scaling: {study}", ""]
    if first:
        md += [f"Problem: `{' '.join(first['problem'])}`; backend {first['backend']}; "
               f"{', '.join(sorted(set(first['devices']))) or 'no GPU'}; Latke {first['versions'].get('latke')}, "
               f"PETSc {first['versions'].get('petsc')}, CUDA {first['versions'].get('cuda') or '-'}, "
               f"MPI {first['versions'].get('mpi') or '-'}; {first['host']}, {first['date']}.", ""]
    md += ["Solve time: the faster of a process's second and third solves (kernels tuned, preconditioner set up); "
           "speed-up and parallel efficiency against the fewest " + unit + " of each configuration.", "",
           f"| configuration | {unit} | runs | iterations | solve (s) | setup (s) | speed-up | efficiency |"
           + (" model (s) | model error |" if machine else ""),
           "|---|---|---|---|---|---|---|---|" + ("---|---|" if machine else "")]
    for c, k, runs, its, t, setup, sp, eff, pred in table:
        row = f"| {c} | {k} | {runs} | {its:g} | {t:.4g} | {setup:.4g} | {sp:.2f}x | {100 * eff:.0f}% |"
        if machine:
            row += f" {pred:.4g} | {100 * (pred - t) / t:+.0f}% |" if pred else " - | - |"
        md.append(row)
    if machine:
        md += ["", f"Model: `latke-scale model` with the machine file of {machine.d['device']} "
               "(its time per iteration times the measured iterations; docs/latke-scale.md)."]
    md += ["", "![time and speed-up](scaling.png)", ""]
    if phase_png:
        md += ["Where a solve goes (a separate run with `-log_view` and `-pc_latke_mg_monitor`, whose events "
               "synchronize the device):", "", "![phases](phases.png)", ""]
    levels = [(r["config"], r["ranks"], r["mg_levels"]) for r in ok if r.get("mg_levels") and r["repeat"] == 0]
    if levels:
        md += ["Multigrid, per cycle and level (`-pc_latke_mg_monitor`, rank 0):", "",
               f"| configuration | {unit} | level | where | ms | halo wait ms | exchanges | global sums | launches | "
               "gather ms |", "|---|---|---|---|---|---|---|---|---|---|"]
        for c, k, ls in sorted(levels, key=lambda x: (x[0], x[1])):
            for lv in ls:
                md.append(f"| {c} | {k} | {lv['level']} | {lv['where']} | {lv['ms_per_cycle']:.3f} | "
                          f"{lv['halo_wait_ms']:.3f} | {lv['exchanges']:g} | {lv['global_sums']:g} | "
                          f"{lv['launches']:g} | {lv['gather_ms']:.3f} |")
        md.append("")
    usage = [r for r in ok if r["repeat"] == 0 and (r.get("halo") or r.get("memory_peak_bytes"))]
    if usage:
        md += ["Communication in a warm solve and memory (per rank; Latke's own buffers at their peak, "
               "PETSc's vectors not included):", "",
               f"| configuration | {unit} | halo exchanges | kB per exchange | host wait in them (s) | "
               "device GB | host GB |", "|---|---|---|---|---|---|---|"]
        for r in sorted(usage, key=lambda r: (r["config"], r["ranks"], r.get("grid") or [])):
            h, m = r.get("halo") or {}, r.get("memory_peak_bytes") or {}
            md.append(f"| {r['config']} | {r['ranks']} | {h.get('exchanges_per_rank', 0):.0f} | "
                      f"{h.get('bytes_per_exchange', 0) * 1e-3:.3g} | {h.get('wait_seconds', 0):.3g} | "
                      f"{m.get('device', 0) * 1e-9:.3g} | {m.get('host', 0) * 1e-9:.3g} |")
        md.append("")
    if failed or problems:
        md += ["## Runs that failed", ""]
        for r in failed:
            md.append(f"- {r['config']} on {r['ranks']} {unit}"
                      f"{' (grid ' + ','.join(map(str, r['grid'])) + ')' if r.get('grid') else ''}, run "
                      f"{r['repeat'] + 1}: {r['error']}")
        for p in problems:
            md.append(f"- record {p}")
        md.append("")
    md_path = os.path.join(out_dir, "report.md")
    write_atomically(md_path, "\n".join(md) + "\n")
    written.append(md_path)
    html_path = os.path.join(out_dir, "report.html")
    write_atomically(html_path, markdown_to_html(md, study))
    written.append(html_path)
    return written


def markdown_to_html(lines, title):
    """The report's Markdown (headings, paragraphs, tables, images, lists) as a standalone page."""
    out = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
           "<style>body{font-family:sans-serif;max-width:70em;margin:2em auto}table{border-collapse:collapse}"
           "td,th{border:1px solid #bbb;padding:2px 8px;text-align:right}img{max-width:100%}</style></head><body>"]
    in_table = in_list = False
    for line in lines:
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
        if cells is not None:
            if set(line.replace("|", "").strip()) <= set("-"):
                continue
            if not in_table:
                out.append("<table>")
                in_table = True
                out.append("<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in cells) + "</tr>")
            else:
                out.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
            continue
        if in_table:
            out.append("</table>")
            in_table = False
        if line.startswith("- "):
            if not in_list:
                out.append("<ul>")
                in_list = True
            out.append(f"<li>{html.escape(line[2:])}</li>")
            continue
        if in_list:
            out.append("</ul>")
            in_list = False
        m = re.match(r"!\[(.*)\]\((.*)\)", line)
        if m:
            out.append(f"<p><img alt='{html.escape(m.group(1))}' src='{html.escape(m.group(2))}'></p>")
        elif line.startswith("## "):
            out.append(f"<h2>{html.escape(line[3:])}</h2>")
        elif line.startswith("# "):
            out.append(f"<h1>{html.escape(line[2:])}</h1>")
        elif line.strip():
            out.append(f"<p>{html.escape(line)}</p>")
    if in_table:
        out.append("</table>")
    if in_list:
        out.append("</ul>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"



def parse_grids(text):
    out = []
    for item in text.split():
        np_, _, g = item.partition(":")
        out.append((int(np_), [int(v) for v in g.split(",")]))
    return out


def cmd_model(a):
    """Predictions per rank count: MatPC per precision and one iteration of each solver; with
    --study the measured time per iteration beside them; --extrapolate past one node."""
    net = {}
    if a.gpus_per_node:
        net["gpus_per_node"] = a.gpus_per_node
    if a.network_gbs:
        net["gbs_per_gpu"] = a.network_gbs
    if a.network_latency_us is not None:
        net["latency_us"] = a.network_latency_us
    machine = model.Machine.load(a.machine, net)
    records = load_records(a.study)[0] if a.study else []
    profiles = mg_profiles_of(records)
    lattices = [[int(v) for v in t.split(",")] for t in (a.lattice or (["64,64,64,128", "96,96,96,192"] if a.extrapolate
                                                                        else ["32,32,32,64"]))]
    if a.extrapolate:
        rank_list = [2 ** k for k in range(0, 13)]
    elif a.ranks:
        rank_list = [int(v) for v in a.ranks.split(",")]
    else:
        rank_list = [2 ** k for k in range(0, int(math.log2(max(1, machine.d["ranks"]))) + 1)]
    configs = [c.partition("=") for c in (a.config or DEFAULT_MODEL_CONFIGS)]
    profile_of = {name: name for name, _, _ in configs}
    if a.placements:  # each multigrid configuration again, its coarse levels placed otherwise
        for name, _, opts in [c for c in configs if "-latke_solver_pc mg" in c[2]]:
            for tag, extra in PLACEMENTS:
                configs.append((f"{name}-{tag}", "=", f"{opts} {extra}"))
                profile_of[f"{name}-{tag}"] = name
    out = {"schema": "latke-model/1", "machine": machine.d["device"], "network": machine.net, "lattices": []}
    for lattice in lattices:
        cases = parse_grids(a.grids) if a.grids else [(n, None) for n in rank_list]
        rows = []
        print(f"lattice {','.join(map(str, lattice))}, machine {machine.d['device']} "
              f"({machine.net['gpus_per_node']} per node); microseconds")
        head = f"{'ranks':>5} {'grid':<10} {'matpc h':>9} {'matpc s':>9} {'matpc d':>9}"
        for name, _, _ in configs:
            head += f" {name + '/it':>16}"
        print(head)
        base = {}
        for n, grid in cases:
            try:
                grid = grid or model.default_grid(lattice, n)
                s = model.Split(lattice, grid, machine)
            except model.ModelError as e:
                print(f"{n:>5} {'-':<10} {e}")
                rows.append({"ranks": n, "error": str(e)})
                continue
            row = {"ranks": n, "grid": grid, "matpc_us": {p: model.matpc_us(machine, s, p)
                                                          for p in ("half", "single", "double")}, "solvers": {}}
            line = f"{n:>5} {','.join(map(str, grid)):<10}" + "".join(f" {row['matpc_us'][p]:>9.1f}"
                                                                     for p in ("half", "single", "double"))
            for name, _, opts in configs:
                options = shlex.split(opts)
                try:
                    parts = predict_iteration(machine, options, lattice, grid, profiles.get(profile_of[name]))
                except model.ModelError as e:
                    parts, err = None, str(e)
                if not parts:
                    line += f" {'-':>16}"
                    continue
                t = model.total(parts)
                base.setdefault(name, (n, t))
                eff = base[name][1] * base[name][0] / (t * n)
                row["solvers"][name] = {"us": t, "efficiency": eff, "breakdown": model.breakdown(parts),
                                        "parts": {k: v for k, v in parts.items() if k != "levels"},
                                        "levels": parts.get("levels", [])}
                line += f" {t:>9.1f} {100 * eff:>4.0f}%"
            print(line)
            rows.append(row)
        for name, _, _ in configs:
            stop = next((r for r in rows if name in r.get("solvers", {}) and r["solvers"][name]["efficiency"] < 0.5),
                        None)
            if stop:
                print(f"  {name}: parallel efficiency below 50% from {stop['ranks']} ranks; there: "
                      f"{stop['solvers'][name]['breakdown']}")
        if records:
            print("  measured (the study's median warm solve per iteration) against the model:")
            for r in sorted({(r["config"], r["ranks"]) for r in records if r["status"] == "ok"}):
                rs = [x for x in records if x["status"] == "ok" and (x["config"], x["ranks"]) == r]
                if lattice_of(rs[0]["problem"]) != lattice:
                    continue
                measured = statistics.median(x["solve_seconds_warm"] / x["iterations"] for x in rs) * 1e6
                try:
                    parts = predict_iteration(machine, rs[0]["options"], lattice, rs[0]["grid"], profiles.get(r[0]))
                except model.ModelError:
                    parts = None
                pred = model.total(parts) if parts else None
                print(f"  {r[0]:>12} {r[1]:>3} ranks: measured {measured:9.1f}, model "
                      + (f"{pred:9.1f} ({100 * (pred - measured) / measured:+.0f}%)" if pred else "-"))
        out["lattices"].append({"lattice": lattice, "rows": rows})
    if a.json:
        write_atomically(a.json, json.dumps(out, indent=1) + "\n")
        print(f"wrote {a.json}")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="latke-scale", description="Strong-scaling studies of latke-solve.")
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run a study and write its records and report")
    r.add_argument("--out", required=True, help="the study's directory (records/, logs/, the report)")
    r.add_argument("--study", default="latke-solve strong scaling", help="the study's name")
    r.add_argument("--problem", default=DEFAULT_PROBLEM, help="latke-solve options of the problem")
    r.add_argument("--config", action="append",
                   help="NAME=OPTIONS, a solver/preconditioner configuration (repeat; default: native MG-GCR and "
                        "BiCGstab)")
    r.add_argument("--ranks", help="rank counts, comma list; the process grid is latke-solve's choice (default: "
                                   "every grid the lattice allows for 1, 2, 4, ... ranks up to the GPUs present, "
                                   "4 on the CPU backend, one per class of grids equal by symmetry)")
    r.add_argument("--list", action="store_true", help="print the cases (rank counts and grids) and stop")
    r.add_argument("--grids", help="instead of --ranks: 'np:a,b,c,d ...' rank counts with their process grids")
    r.add_argument("--repeat", type=int, default=3, help="runs per case, for a spread (default 3)")
    r.add_argument("--backend", default="cuda" if gpu_names() else "cpu", help="cpu or cuda (default: cuda on a "
                                                                              "host with GPUs)")
    r.add_argument("--mpirun", default="mpirun --bind-to none", help="the MPI launcher and its options")
    r.add_argument("--solve", default=os.path.join(HERE, "latke-solve"), help="the latke-solve to run")
    r.add_argument("--timeout", type=float, default=600, help="seconds a run may take (default 600)")
    r.add_argument("--no-phases", dest="phases", action="store_false",
                   help="skip the profiled run per case (-log_view, -pc_latke_mg_monitor)")
    r.add_argument("--no-report", action="store_true", help="write the records only")
    p = sub.add_parser("report", help="write a study's report from its records")
    p.add_argument("study", help="the study's directory")
    p.add_argument("--out", help="where to write the report (default: the study's directory)")
    p.add_argument("--machine", help="a machine file (latke-bench machine): draw the model over the measurements")
    m = sub.add_parser("model", help="the performance model's predictions (docs/latke-scale.md)")
    m.add_argument("--machine", required=True, help="the machine file written by latke-bench machine")
    m.add_argument("--lattice", action="append", help="X,Y,Z,T (repeat; default 32,32,32,64, or with --extrapolate "
                                                      "64,64,64,128 and 96,96,96,192)")
    m.add_argument("--ranks", help="rank counts, comma list of powers of two (default: 1 to the machine's ranks)")
    m.add_argument("--grids", help="'np:a,b,c,d ...' rank counts with their process grids")
    m.add_argument("--extrapolate", action="store_true", help="1 to 4096 GPUs over the network model")
    m.add_argument("--placements", action="store_true",
                   help="also each multigrid configuration with its coarse levels gathered whole onto every rank "
                        "once small (NAME-whole) and never gathered (NAME-spread)")
    m.add_argument("--config", action="append", help="NAME=OPTIONS as latke-solve takes them (default: BiCGstab, "
                                                     "GCR + Schwarz, MG-GCR)")
    m.add_argument("--study", help="a study's directory: the MG profile of its one-rank run, and its measurements")
    m.add_argument("--gpus-per-node", type=int, help="GPUs per node of the network model (default 4)")
    m.add_argument("--network-gbs", type=float, help="network GB/s per GPU (default 50: one NDR port)")
    m.add_argument("--network-latency-us", type=float, help="network latency in us (default 3)")
    m.add_argument("--json", help="also write the predictions to this file")
    v = sub.add_parser("validate", help="check record files against the schema")
    v.add_argument("files", nargs="+")
    a = ap.parse_args(argv)
    if a.command == "run":
        if a.repeat < 1:
            ap.error(f"--repeat {a.repeat}: expected 1 or more")
        if a.backend not in ("cpu", "cuda"):
            ap.error(f"--backend {a.backend}: expected cpu or cuda")
        return cmd_run(a)
    if a.command == "report":
        if not os.path.isdir(os.path.join(a.study, "records")):
            sys.exit(f"latke-scale: {a.study} has no records/ directory (not a study written by latke-scale run)")
        machine = None
        if a.machine:
            try:
                machine = model.Machine.load(a.machine)
            except (OSError, model.ModelError) as e:
                sys.exit(f"latke-scale: --machine {a.machine}: {e}")
        for path in report(a.study, a.out or a.study, machine):
            print(f"wrote {path}")
        records, problems = load_records(a.study)
        failed = sum(r["status"] != "ok" for r in records)
        print(f"{len(records)} runs: {len(records) - failed} succeeded, {failed} failed; "
              f"{len(problems)} record(s) unreadable or invalid")
        return 0
    if a.command == "model":
        try:
            return cmd_model(a)
        except (OSError, model.ModelError) as e:
            sys.exit(f"latke-scale model: {e}")
    status = 0
    for path in a.files:
        try:
            with open(path) as f:
                bad = validate_record(json.load(f))
        except (OSError, ValueError) as e:
            bad = [f"not readable JSON ({e})"]
        for b in bad:
            print(f"{path}: {b}")
        status |= bool(bad)
        if not bad:
            print(f"{path}: valid {SCHEMA} record")
    return status


if __name__ == "__main__":
    sys.exit(main())
