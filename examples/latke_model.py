# The performance model of latke-scale (docs/latke-scale.md, "The model"): predictions of the
# time of Latke's kernels and of one iteration of its solvers on any lattice and process grid,
# from a machine file of micro-benchmarks (latke-bench machine) and the byte and flop counts
# latke-bench prints; for the multigrid also from a one-rank profile of its cycle. Times are
# in microseconds. Beyond one node, a network model (its parameters documented and given)
# replaces the measured exchanges and global sums.
import json
import math

MACHINE_SCHEMA = "latke-machine/1"

# One node's GPUs and the network between nodes: one NDR InfiniBand port (400 Gb/s) per GPU,
# its one-way latency, and each doubling of an allreduce across nodes.
DEFAULT_NETWORK = {"gpus_per_node": 4, "gbs_per_gpu": 50.0, "latency_us": 3.0, "allreduce_step_us": 4.0}

REAL_BYTES = {"double": 8, "single": 4, "half": 2}
MATPC_FLOPS = 3792.0  # QUDA's count per site of the even-odd operator
MR_FLOPS = 8 * 24.0   # the block MR's vector work per site and step
GATHER_SITES = 512    # the multigrid's default agglomeration rule (-pc_latke_mg_gather_sites) ...
GATHER_ONTO_SITES = 1024  # ... and where it gathers to (-pc_latke_mg_gather_onto_sites)


def norm_bytes(p):
    return 4 if p == "half" else 0


def spinor_bytes(p):
    return 24 * REAL_BYTES[p] + norm_bytes(p)


def link_bytes(p, reconstruct=12):
    return reconstruct * REAL_BYTES[p]


def clover_bytes(p):
    return 72 * REAL_BYTES[p] + (8 if p == "half" else 0)


def face_site_bytes(p):
    """A face site of the Wilson hopping term: the spin-projected half spinor (and its norm)."""
    return 12 * REAL_BYTES[p] + norm_bytes(p)


def dslash_site_bytes(p, reconstruct=12):
    """latke-bench's byte model of one output site of the hopping term with its clover epilogue."""
    return 8.0 * (link_bytes(p, reconstruct) + spinor_bytes(p)) + clover_bytes(p) + spinor_bytes(p)


class ModelError(ValueError):
    pass


def interpolate(points, x, log_x=False):
    """Piecewise-linear through (x, y) points; below the first point its value, past the last
    the last segment extended."""
    pts = sorted(points)
    if len(pts) == 1 or x <= pts[0][0]:
        return pts[0][1]
    f = math.log2 if log_x else (lambda v: v)
    i = 0
    while i < len(pts) - 2 and x > pts[i + 1][0]:
        i += 1
    (x0, y0), (x1, y1) = pts[i], pts[i + 1]
    return y0 + (f(x) - f(x0)) / (f(x1) - f(x0)) * (y1 - y0)


class Machine:
    """A machine file (latke-bench machine) with the network model for more GPUs than it had."""

    FIELDS = {"schema": str, "backend": str, "device": str, "ranks": int, "copy_gbs": (int, float),
              "read_gbs": (int, float), "launch_us": (int, float), "host_device_gbs": (int, float),
              "exchange": list, "global_sum": list, "kernel_lattice": list, "matpc_vs_copy": dict,
              "schwarz_gflops": (int, float)}
    OPTIONAL = {"matpc_by_volume": dict}

    def __init__(self, data, network=None):
        problems = []
        for name, kind in self.FIELDS.items():
            if name not in data:
                problems.append(f"missing field '{name}'")
            elif not isinstance(data[name], kind) or isinstance(data[name], bool):
                problems.append(f"field '{name}' is {type(data[name]).__name__}")
        if not problems and data["schema"] != MACHINE_SCHEMA:
            problems.append(f"schema '{data['schema']}', expected '{MACHINE_SCHEMA}'")
        if not problems:
            for p in ("half", "single", "double"):
                if not isinstance(data["matpc_vs_copy"].get(p), (int, float)) or data["matpc_vs_copy"][p] <= 0:
                    problems.append(f"matpc_vs_copy['{p}'] missing or not positive")
        for name, kind in self.OPTIONAL.items():
            if name in data and not isinstance(data[name], kind):
                problems.append(f"field '{name}' is {type(data[name]).__name__}")
        if problems:
            raise ModelError("machine file: " + "; ".join(problems))
        self.d = data
        self.net = dict(DEFAULT_NETWORK, **(network or {}))
        self.exchanges = [(e["face_bytes"], e["us"]) for e in data["exchange"]]
        self.sums = [(s["ranks"], s["us"]) for s in data["global_sum"]]

    @classmethod
    def load(cls, path, network=None):
        with open(path) as f:
            try:
                data = json.load(f)
            except json.JSONDecodeError as e:
                raise ModelError(f"machine file {path}: not JSON ({e})")
        try:
            return cls(data, network)
        except ModelError as e:
            raise ModelError(f"{path}: {e}")

    def copy_bytes_per_us(self):
        return self.d["copy_gbs"] * 1e3

    def efficiency(self, precision, sites_cb):
        """A stencil kernel's effective bandwidth as a fraction of the copy bandwidth, at its
        volume (matpc_by_volume, interpolated in log volume; outside the volumes measured the
        nearest one's) or, without that table, at the kernel lattice."""
        table = self.d.get("matpc_by_volume", {}).get(precision)
        if table:
            pts = sorted((v, r) for v, r in table)
            return interpolate(pts, min(sites_cb, pts[-1][0]), log_x=True)
        return self.d["matpc_vs_copy"][precision]

    def kernel_us(self, nbytes, precision, sites_cb):
        """A stencil kernel of nbytes (latke-bench's byte model) over sites_cb output sites."""
        return nbytes / (self.efficiency(precision, sites_cb) * self.copy_bytes_per_us())

    def stream_us(self, nbytes):
        """Vector kernels (BLAS-1): at the copy bandwidth."""
        return nbytes / self.copy_bytes_per_us()

    def launches_us(self, n):
        return n * self.d["launch_us"]

    def exchange_us(self, face_bytes, ranks, crosses_nodes=False):
        """One halo exchange with faces of face_bytes (0 without neighbours)."""
        if ranks <= 1 or face_bytes <= 0:
            return 0.0
        within = interpolate(self.exchanges, face_bytes) if self.exchanges else 0.0
        if not crosses_nodes:
            return within
        return max(within, self.net["latency_us"] + face_bytes / (self.net["gbs_per_gpu"] * 1e3))

    def global_sum_us(self, ranks):
        """A device reduction read back and an MPI_Allreduce over `ranks` ranks: within a node
        the measured sums (interpolated in log ranks, the last step extended to the node's
        GPUs), beyond it the node's plus allreduce_step_us per doubling."""
        node = self.net["gpus_per_node"]
        if ranks <= node:
            return interpolate(self.sums, ranks, log_x=True)
        return interpolate(self.sums, node, log_x=True) + self.net["allreduce_step_us"] * math.log2(ranks / node)


def default_grid(lattice, ranks):
    """Ranks as a process grid: each doubling splits the dimension of largest local extent,
    the later dimension first on ties (t, z, y, x), as long as its local extent stays even."""
    if ranks & (ranks - 1):
        raise ModelError(f"{ranks} ranks: the model's default grids take powers of two (give --grids)")
    grid = [1, 1, 1, 1]
    for _ in range(int(math.log2(ranks))):
        local = [lattice[m] // grid[m] for m in range(4)]
        choices = [m for m in (3, 2, 1, 0) if local[m] % 4 == 0]
        if not choices:
            raise ModelError(f"{ranks} ranks: lattice {lattice} cannot be split further")
        mu = max(choices, key=lambda m: (local[m], m))
        grid[mu] *= 2
    return grid


def grid_fits(lattice, grid):
    """Whether a process grid divides the lattice into even local extents."""
    return all(grid[m] >= 1 and lattice[m] % grid[m] == 0 and (lattice[m] // grid[m]) % 2 == 0 for m in range(4))


def check_grid(lattice, grid):
    for m in range(4):
        if not grid_fits(lattice, [grid[k] if k == m else 1 for k in range(4)]):
            raise ModelError(f"grid {grid} does not fit lattice {lattice}: extent {lattice[m]} in dimension {m} "
                             f"over {grid[m]} ranks must leave an even local extent")


class Split:
    """A lattice over a process grid: local volume, faces, whether hops cross nodes."""

    def __init__(self, lattice, grid, machine):
        check_grid(lattice, grid)
        self.lattice, self.grid = list(lattice), list(grid)
        self.ranks = math.prod(grid)
        self.local = [lattice[m] // grid[m] for m in range(4)]
        self.volume = math.prod(self.local)
        self.split = [m for m in range(4) if grid[m] > 1]
        # Ranks are placed with x fastest: dimension mu's neighbours are stride(mu) ranks away,
        # on another node where that reaches past the node's GPUs.
        node = machine.net["gpus_per_node"]
        stride, self.cross = 1, {}
        for m in range(4):
            self.cross[m] = grid[m] > 1 and (stride * grid[m] > node or self.ranks > node and stride >= node)
            stride *= grid[m]

    def face_sites(self, mu):
        return self.volume // self.local[mu]

    def boundary_sites(self):
        """Sites with a neighbour on another rank."""
        interior = 1
        for m in range(4):
            interior *= self.local[m] - 2 if m in self.split else self.local[m]
        return self.volume - interior


def dslash_parts(machine, s, precision, reconstruct=12):
    """One hopping term onto one parity with its epilogue, kernels only: on a split lattice the
    interior kernel overlapping the packing and exchange of the faces, then the boundary sites.
    Returns (kernel time, exchange time not hidden behind the interior)."""
    vcb, site = s.volume / 2, dslash_site_bytes(precision, reconstruct)
    if not s.split:
        return machine.kernel_us(vcb * site, precision, vcb), 0.0
    edge = s.boundary_sites() / 2
    face = max(s.face_sites(m) / 2 * face_site_bytes(precision) for m in s.split)
    cross = any(s.cross[m] for m in s.split)
    exchange = machine.stream_us(2 * edge * spinor_bytes(precision)) + machine.exchange_us(face, s.ranks, cross)
    interior = machine.kernel_us((vcb - edge) * site, precision, vcb)
    exterior = machine.kernel_us(edge * site, precision, edge)
    return interior + exterior, max(0.0, exchange - interior)


def matpc_parts(machine, s, precision, reconstruct=12):
    """The even-odd operator: two hopping terms (the second with the xpay input). On one rank
    the host runs ahead of the device and the launches hide; on several, the host waits for
    each exchange, and the three launches of each hopping term after it (pack, interior,
    exterior) are exposed."""
    vcb = s.volume / 2
    if not s.split:
        nbytes = (2 * dslash_site_bytes(precision, reconstruct) + spinor_bytes(precision)) * vcb
        return {"kernels": machine.kernel_us(nbytes, precision, vcb), "halo": 0.0, "launches": 0.0}
    kernels, halo = dslash_parts(machine, s, precision, reconstruct)
    return {"kernels": 2 * kernels + machine.stream_us(vcb * spinor_bytes(precision)), "halo": 2 * halo,
            "launches": machine.launches_us(6)}


def matpc_us(machine, s, precision, reconstruct=12):
    return sum(matpc_parts(machine, s, precision, reconstruct).values())


def bicgstab_iteration_us(machine, s, sloppy):
    """Mixed BiCGstab (solvers.cpp): two MatPCs in the sloppy precision; six vector kernels
    (p, s and x updates, two dot products, the fused r update and its sums: 19 passes over a
    sloppy spinor and two over the single-precision partial solution); three global sums, each
    a host synchronisation after which the next launch is exposed (on several ranks every
    launch is, the host waiting for each exchange)."""
    vcb = s.volume / 2
    op = matpc_parts(machine, s, sloppy)
    vectors = machine.stream_us((19 * spinor_bytes(sloppy) + 2 * spinor_bytes("single")) * vcb)
    exposed = 3 if not s.split else 6
    return {"operator kernels": 2 * op["kernels"], "halo (not hidden)": 2 * op["halo"], "vectors": vectors,
            "launches": 2 * op["launches"] + machine.launches_us(exposed),
            "global sums": 3 * machine.global_sum_us(s.ranks)}


def gcr_outer_us(machine, s, sloppy="single", restart=16):
    """One GCR iteration without its preconditioner: a MatPC, the orthogonalization against on
    average half the cycle's directions (one multi-vector kernel) and the update, one fused
    global sum."""
    vcb = s.volume / 2
    op = matpc_parts(machine, s, sloppy)
    passes = restart / 2 + 3
    return {"operator kernels": op["kernels"], "halo (not hidden)": op["halo"],
            "vectors": machine.stream_us(passes * vcb * spinor_bytes(sloppy)),
            "launches": op["launches"] + machine.launches_us(3 if s.split else 1),
            "global sums": machine.global_sum_us(s.ranks)}


def schwarz_us(machine, s, steps=8):
    """One application of the Schwarz preconditioner, blocks on chip (no communication): its
    arithmetic at the calibrated rate, and its copies in and out."""
    flops = steps * (MATPC_FLOPS + MR_FLOPS) * s.volume / 2
    return flops / (machine.d["schwarz_gflops"] * 1e3) + machine.stream_us(4 * s.volume / 2 * spinor_bytes("half"))


def gcr_schwarz_iteration_us(machine, s, steps=8):
    parts = gcr_outer_us(machine, s)
    parts["preconditioner"] = schwarz_us(machine, s, steps)
    return parts


def parse_where(where):
    """'8x8x8x4 per rank' -> [8, 8, 8, 4]; 'gathered' -> None."""
    if "per rank" not in where:
        return None
    return [int(v) for v in where.split()[0].split("x")]


def telescope_grid(lattice, grid, ranks):
    """The process grid of `lattice` on `ranks` ranks that merges blocks of `grid`, as Latke's
    multigrid places a gathered level (mg::telescope_grid): the prime factors of the ratio,
    largest first, each merging the dimension of thinnest local extent (the lower on a tie)."""
    n = math.prod(grid)
    if ranks < 1 or n % ranks:
        raise ModelError(f"agglomeration onto {ranks} ranks: expected a divisor of the {n} ranks of grid {grid}")
    onto, rest, primes, p = list(grid), n // ranks, [], 2
    while rest > 1:
        if rest % p == 0:
            primes.insert(0, p)
            rest //= p
        else:
            p += 1
    for p in primes:
        choices = [m for m in range(4) if onto[m] % p == 0]
        mu = min(choices, key=lambda m: (lattice[m] // onto[m], m))
        onto[mu] //= p
    return onto


def gather_ranks(volume, ranks, gather_sites=GATHER_SITES, onto_sites=GATHER_ONTO_SITES):
    """The ranks a coarse level of `volume` sites lives on when the level above lives on
    `ranks` (Latke's automatic rule, mg::level_grid): spread while it has more than
    gather_sites per rank, else gathered onto the most ranks (a divisor) that leave each at least
    onto_sites, or whole onto every rank."""
    if ranks <= 1 or gather_sites <= 0 or volume / ranks > gather_sites:
        return ranks
    for k in range(ranks // 2, 1, -1):
        if ranks % k == 0 and volume / k >= onto_sites:
            return k
    return 1


def gather_grid(lattice, grid, gather_sites=GATHER_SITES, onto_sites=GATHER_ONTO_SITES):
    """Where a coarse level of extents `lattice` lives when the level above lives on `grid`:
    that grid, or the grid it is gathered onto (gather_ranks, telescope_grid); a rank count
    whose merged grid leaves odd local extents (possible only for a profile rescaled to another
    lattice) is passed over for the next fewer."""
    ranks = math.prod(grid)
    k = gather_ranks(math.prod(lattice), ranks, gather_sites, onto_sites)
    while k < ranks:
        g = telescope_grid(lattice, grid, k)
        if k == 1 or grid_fits(lattice, g):
            return g
        k = max(d for d in range(1, k) if ranks % d == 0)
    return list(grid)


def mg_iteration_us(machine, s, profile, nvec=24, comm_profile=None, gather_sites=GATHER_SITES,
                    onto_sites=GATHER_ONTO_SITES):
    """One MG-GCR iteration on s's grid from profiles of the cycle (the records' mg_levels; per
    level: ms per cycle, exchanges, global sums, launches). The work comes from a one-rank
    profile; the counts of exchanges, launches and global sums per cycle from a profile on
    several ranks (comm_profile; one rank exchanges nothing, and its smoothers sum on the
    device), or without one from the one-rank profile (no exchanges). Levels are placed as Latke places them (gather_ranks, telescope_grid), from the
    fine level down. A level's work without its launches and sums divides over the ranks it is
    spread on, and its exchanges, launches and sums cost what the machine says for that grid; a
    level gathered onto fewer ranks adds the all-gather of its right-hand side within each group
    of ranks that make up one of its parts, and takes the counts per cycle of the last coarse
    level with exchanges of the several-rank profile where that profile had it whole; a level whole on
    every rank costs its one-rank time. Faces: on level 0 the smoother's half spinors of one
    parity in half precision, on coarse levels 2 nvec complex numbers in single per site. A
    copy's ranks are spread over the nodes: where the grid spans several nodes, a gathered
    level's exchanges cross nodes."""
    parts = gcr_outer_us(machine, s)
    parts["levels"] = []
    comm_profile = comm_profile or []
    counts = {lv["level"]: lv for lv in comm_profile}
    spread_counts = [lv for lv in comm_profile if lv["level"] > 0 and lv.get("where", "") != "gathered"]
    grid, telescoped = list(s.grid), False
    for lv in profile:
        lattice1 = parse_where(lv["where"])
        if lattice1 is None:
            raise ModelError("the multigrid profile must be of a one-rank run (its levels 'per rank')")
        ms = lv["ms_per_cycle"] * 1e3
        fixed = machine.launches_us(lv["launches"]) + lv["global_sums"] * machine.global_sum_us(1)
        work = max(ms - fixed, 0.0)
        volume = math.prod(lattice1)
        ranks = math.prod(grid)
        gather = 0.0
        if lv["level"] > 0 and ranks > 1:
            onto = gather_grid(lattice1, grid, gather_sites, onto_sites)
            k = math.prod(onto)
            if k < ranks:
                group = ranks // k
                gather = machine.exchange_us(volume * 2 * nvec * 8 / ranks, group, s.ranks > machine.net["gpus_per_node"]) \
                    * math.ceil(math.log2(group))
                grid, telescoped, ranks = onto, True, k
        if ranks == 1 and s.ranks > 1:
            t, where = ms + gather, "gathered"
        else:
            sub = Split(lattice1, grid, machine) if all(lattice1[m] % (2 * grid[m]) == 0 for m in range(4)) else None
            if sub is None:
                raise ModelError(f"level {lv['level']} ({lattice1}) does not split over grid {grid}")
            if lv["level"] == 0:
                face = max((sub.face_sites(m) / 2 * face_site_bytes("half") for m in sub.split), default=0)
            else:
                face = max((sub.face_sites(m) * 2 * nvec * 8 for m in sub.split), default=0)
            cross = any(sub.cross[m] for m in sub.split) or (telescoped and s.ranks > machine.net["gpus_per_node"])
            c = None
            if s.ranks > 1:
                c = counts.get(lv["level"])
                if c is None or c.get("where", "") == "gathered":  # whole on every rank: no exchanges
                    c = spread_counts[-1] if telescoped and spread_counts else None
            exchanges = c["exchanges"] if c else lv["exchanges"]
            launches = c["launches"] if c else lv["launches"]
            # A level on one rank keeps its smoother's sums on the device: the spread level's
            # global sums are counted where it was spread.
            sums = c["global_sums"] if c else lv["global_sums"]
            t = (work / ranks + machine.launches_us(launches)
                 + exchanges * machine.exchange_us(face, ranks, cross)
                 + sums * machine.global_sum_us(ranks) + gather)
            where = f"on {ranks} ranks" if telescoped else "spread"
        parts["levels"].append({"level": lv["level"], "where": where, "us": t})
    parts["preconditioner"] = sum(lv["us"] for lv in parts["levels"])
    return parts


def rescale_profile(profile, lattice):
    """A one-rank multigrid profile of one lattice moved to another: every level's lattice
    scaled by the ratio of the fine lattices (rounded to even extents); launches, exchanges and
    sums per cycle kept. The fine level's work scales with its volume. An intermediate coarse
    level takes the work of the profile's coarse level of the largest volume not above its own,
    scaled by the ratio of volumes (a coarse level of the same size costs the same, whichever
    level it is; one smaller than any in the profile costs the smallest one's, as a
    launch-bound level does). The coarsest level keeps its work (a larger lattice takes a level
    more, so that the coarsest stays as small; that level's own cost is not added). An
    approximation for extrapolation, not a measurement."""
    fine = parse_where(profile[0]["where"])
    if fine is None:
        raise ModelError("the multigrid profile must be of a one-rank run (its levels 'per rank')")
    if list(fine) == list(lattice):
        return profile
    f = [lattice[m] / fine[m] for m in range(4)]
    coarse = sorted((math.prod(parse_where(lv["where"])), lv["ms_per_cycle"]) for lv in profile[1:-1])
    out = []
    for i, lv in enumerate(profile):
        dims = parse_where(lv["where"])
        scaled = [max(2, 2 * round(dims[m] * f[m] / 2)) for m in range(4)]
        volume = math.prod(scaled)
        if i == len(profile) - 1:
            work = lv["ms_per_cycle"]
        elif i == 0 or not coarse:
            work = lv["ms_per_cycle"] * volume / math.prod(dims)
        else:
            below = [c for c in coarse if c[0] <= volume]
            ref_volume, ref_ms = below[-1] if below else coarse[0]
            work = ref_ms * max(1.0, volume / ref_volume)
        out.append(dict(lv, where="x".join(map(str, scaled)) + " per rank", ms_per_cycle=work))
    return out


def total(parts):
    return sum(v for k, v in parts.items() if k != "levels")


def breakdown(parts, top=3):
    """The largest parts of a prediction with their shares, for 'why': 'level 2 (gathered) 82%,
    ...'."""
    items = {k: v for k, v in parts.items() if k != "levels"}
    if "levels" in parts:
        for lv in parts["levels"]:
            items[f"level {lv['level']} ({lv['where']})"] = lv["us"]
        items.pop("preconditioner", None)
    whole = sum(items.values()) or 1.0
    ranked = sorted(items.items(), key=lambda kv: -kv[1])[:top]
    return ", ".join(f"{k} {100 * v / whole:.0f}%" for k, v in ranked)
