// Gauge configurations of the C API (latke.h): LatkeGauge handles from arrays, random
// fields and the options database.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "latke/latke.h"
#include "petsc/c_api.h"
#include "petsc/gauge_handle.h"
#include "src/core/error.h"
#include "src/core/options.h"
#include "src/core/output_files.h"
#include "src/fields/gauge_field.h"
#include "src/fields/gauge_fixing.h"
#include "src/fields/gauge_generator.h"
#include "src/fields/gauge_io.h"
#include "src/fields/gauge_observables.h"
#include "src/fields/link_smearing.h"
#include "src/fields/random.h"

namespace latke::petsc {
namespace {

/// The links of a NERSC or ILDG file on grid (its header checked, the file bringing the lattice),
/// with "gauge file PATH (FORMAT)" appended to desc.
void read_file(LatkeGaugeData& d, MPI_Comm comm, const std::string& path, GaugeFileInfo info, const Coords& grid,
               const GaugeReadParam& rp, std::ostringstream& desc) {
  d.lattice = std::make_shared<const Lattice>(comm, info.dims, grid);
  d.links = read_gauge(*d.lattice, path, &info, run_backend(), rp);
  desc << "gauge file " << path << " (" << (info.format == GaugeFileFormat::ildg ? "ILDG" : "NERSC") << ")";
}

/// Completes d's description with its plaquette, which must be finite.
void describe(LatkeGaugeData& d, std::ostringstream& desc) {
  const GaugeObservables obs = measure_gauge(*d.lattice, d.links, run_backend());
  require(std::isfinite(obs.plaquette), "the gauge configuration (", desc.str(), ") has plaquette ", obs.plaquette,
          ": its links are not finite numbers");
  desc << ", plaquette " << obs.plaquette;
  d.description = desc.str();
}

Coords to_coords(const PetscInt v[4], const char* what) {
  Coords c{};
  for (int mu = 0; mu < 4; ++mu) {
    require(v[mu] > 0, what, " extent ", v[mu], " in dimension ", mu, ": expected a positive number");
    c[mu] = static_cast<int>(v[mu]);
  }
  return c;
}

std::shared_ptr<const Lattice> make_lattice(MPI_Comm comm, const PetscInt global[4], const PetscInt grid[4]) {
  require(global != nullptr, "the lattice extents are missing (NULL)");
  const Coords g = to_coords(global, "lattice");
  const Coords p = grid ? to_coords(grid, "process grid") : default_grid();
  return std::make_shared<const Lattice>(comm, g, p);
}

/// Generated links must be SU(3): a spread too large for double arithmetic (1e300) gives
/// zero or NaN links, which must not pass as a configuration. Collective.
void require_su3(const Lattice& lat, const std::vector<Complex<double>>& links, const std::string& what) {
  double dev = su3_deviation(links), worst = 0;
  MPI_Allreduce(&dev, &worst, 1, MPI_DOUBLE, MPI_MAX, lat.comm());
  require(worst <= 1e-10, what, " gave links that deviate from SU(3) by ", worst,
          " (expected at most 1e-10): the spread is too large for double arithmetic");
}

/// The per-user cache of generated configurations, one directory per Latke version (another
/// version's generator may draw other links).
std::string default_gauge_cache() {
  std::ostringstream v;
  v << "gauge/" << LATKE_VERSION_MAJOR << "." << LATKE_VERSION_MINOR << "." << LATKE_VERSION_PATCH;
  return user_cache_dir(v.str());
}

}  // namespace
}  // namespace latke::petsc

using namespace latke;
using namespace latke::petsc;

extern "C" {

PetscErrorCode LatkeGaugeCreateFromArray(MPI_Comm comm, const PetscInt global[4], const PetscInt grid[4],
                                         const PetscScalar links[], LatkeGauge* gauge) {
  PetscFunctionBeginUser;
  LatkeCheckNull(gauge);
  PetscCall(guarded(comm, [&] {
    require_initialized();
    auto d = std::make_shared<LatkeGaugeData>();
    d->lattice = make_lattice(comm, global, grid);
    require(links != nullptr, "LatkeGaugeCreateFromArray: the links array is NULL");
    const std::size_t n = static_cast<std::size_t>(d->lattice->volume()) * 36;
    d->links.resize(n);
    for (std::size_t i = 0; i < n; ++i)
      d->links[i] = Complex<double>(PetscRealPart(links[i]), PetscImaginaryPart(links[i]));
    d->description = "links given by the program";
    *gauge = new _p_LatkeGauge{std::move(d)};
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeGaugeCreateRandom(MPI_Comm comm, const PetscInt global[4], const PetscInt grid[4], PetscInt seed,
                                      PetscReal spread, LatkeGauge* gauge) {
  PetscFunctionBeginUser;
  LatkeCheckNull(gauge);
  PetscCall(guarded(comm, [&] {
    require_initialized();
    require(std::isfinite(spread), "LatkeGaugeCreateRandom: spread ", spread,
            ": expected a finite number (< 0: independent random SU(3) links; >= 0: the SU(3) projection of 1 + "
            "spread x noise)");
    require(seed >= 0, "LatkeGaugeCreateRandom: seed ", seed, ": expected 0 or more");
    auto d = std::make_shared<LatkeGaugeData>();
    d->lattice = make_lattice(comm, global, grid);
    d->links = random_gauge(*d->lattice, static_cast<std::uint64_t>(seed), spread);
    std::ostringstream what;
    what << "LatkeGaugeCreateRandom with spread " << spread;
    require_su3(*d->lattice, d->links, what.str());
    std::ostringstream s;
    if (spread < 0)
      s << "random SU(3) links, seed " << seed;
    else if (spread == 0)
      s << "unit gauge";
    else
      s << "SU(3) projection of 1 + " << spread << " x Gaussian noise, seed " << seed;
    d->description = s.str();
    *gauge = new _p_LatkeGauge{std::move(d)};
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeGaugeCreateFromOptions(MPI_Comm comm, const char prefix[], LatkeGauge* gauge) {
  PetscFunctionBeginUser;
  LatkeCheckNull(gauge);
  PetscCall(guarded(comm, [&] {
    require_initialized();
    std::string kind, cache;
    Coords dims{};
    long seed = 1, sweeps = 200;
    double spread = -1, beta = 6.0;
    bool lattice_given = false, accept_nonunitary = false, quiet = false;
    read_options(comm, prefix ? prefix : "", "Latke gauge configuration options", [&](OptionGroup& o) {
      dims = o.coords("-latke_lattice", Coords{8, 8, 8, 8}, "Lattice extents X,Y,Z,T (a gauge file brings its own)");
      kind = o.string(
          "-latke_gauge", "quenched",
          "Gauge field: quenched (thermalized by Latke's generator, cached), random, unit, or a NERSC/ILDG file");
      seed = o.integer("-latke_gauge_seed", 1, "Seed of the generated or random field");
      beta = o.real("-latke_gauge_beta", 6.0, "quenched: Wilson gauge coupling");
      sweeps =
          o.integer("-latke_gauge_sweeps", 200, "quenched: sweeps from a hot start (1 heat bath + 4 over-relaxation)");
      cache = o.string("-latke_gauge_cache", default_gauge_cache(),
                       "quenched: directory caching generated configurations (default: per user, "
                       "$LATKE_CACHE_DIR/gauge, $XDG_CACHE_HOME/latke/gauge or ~/.cache/latke/gauge; empty: none)");
      spread = o.real("-latke_gauge_spread", -1.0,
                      "random: < 0 independent SU(3) links, >= 0 SU(3) projection of 1 + spread x noise");
      accept_nonunitary = o.flag("-latke_gauge_accept_nonunitary", false,
                                 "FILE: read 3x3 links that are not SU(3) (smeared, fat) instead of refusing them");
      quiet = o.flag("-latke_gauge_quiet", false, "quenched: no progress lines while a configuration is generated");
      lattice_given = o.given("-latke_lattice");
    });
    const std::string pre = prefix ? prefix : "";
    require(seed >= 0, "-", pre, "latke_gauge_seed ", seed, ": expected 0 or more");
    require(sweeps >= 0, "-", pre, "latke_gauge_sweeps ", sweeps, ": expected 0 or more");
    require(std::isfinite(beta) && beta >= 0, "-", pre, "latke_gauge_beta ", beta,
            ": expected a coupling of 0 or more (a finite number)");
    require(std::isfinite(spread), "-", pre, "latke_gauge_spread ", spread,
            ": expected a finite number (< 0: independent random SU(3) links; >= 0: the SU(3) projection of 1 + "
            "spread x noise)");
    auto d = std::make_shared<LatkeGaugeData>();
    const Backend backend = run_backend();
    std::ostringstream desc;
    if (kind == "random" || kind == "unit") {
      d->lattice = std::make_shared<const Lattice>(comm, dims, default_grid());
      const double sp = kind == "unit" ? 0.0 : spread;
      d->links = random_gauge(*d->lattice, static_cast<std::uint64_t>(seed), sp);
      std::ostringstream what;
      what << "-" << pre << "latke_gauge " << kind << " with -" << pre << "latke_gauge_spread " << sp;
      require_su3(*d->lattice, d->links, what.str());
      if (kind == "unit")
        desc << "unit gauge";
      else if (sp < 0)
        desc << "random SU(3) links, seed " << seed;
      else
        desc << "SU(3) projection of 1 + " << sp << " x Gaussian noise, seed " << seed;
    } else if (kind == "quenched") {
      d->lattice = std::make_shared<const Lattice>(comm, dims, default_grid());
      HeatbathParam hp;
      hp.beta = beta;
      hp.seed = static_cast<std::uint64_t>(seed);
      bool loaded = false;
      int rank = 0;
      MPI_Comm_rank(comm, &rank);
      std::error_code ec;
      if (rank == 0 && !cache.empty()) std::filesystem::create_directories(cache, ec);
      int failed = ec ? 1 : 0;
      MPI_Bcast(&failed, 1, MPI_INT, 0, comm);  // every rank waits for the directory
      require(!failed, "-latke_gauge_cache ", cache, ": cannot create the directory",
              rank == 0 ? " (" + ec.message() + ")" : std::string(" (see rank 0)"));
      // Generation is the long phase of a first run (minutes on a CPU): once it has taken 2 s, a
      // line about every tenth of the sweeps.
      const auto t0 = std::chrono::steady_clock::now();
      std::ostringstream what;
      what << coords_text(dims) << ", beta " << beta << ", seed " << seed;
      const auto progress = [&, what = what.str()](int done, int total) {
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (s >= 2.0)
          PetscPrintf(comm, "Latke gauge: generating a quenched configuration (%s): %d/%d sweeps, %.1f s\n",
                      what.c_str(), done, total, s);
      };
      d->links = thermalized_configuration(d->lattice, backend, hp, static_cast<int>(sweeps), cache, &loaded,
                                           quiet ? std::function<void(int, int)>() : progress);
      d->heatbath_passes = sweeps;
      desc << "quenched Wilson gauge action, beta " << beta << ", " << sweeps << " sweeps from a hot start, seed "
           << seed
           << (loaded          ? " (from the cache in " + cache + ")"
               : cache.empty() ? std::string(" (generated, not cached)")
                               : " (generated, cached in " + cache + ")");
    } else {
      GaugeFileInfo info = read_gauge_info(comm, kind);
      if (lattice_given) {  // the file brings its lattice: one given as well must be the same
        require(dims == info.dims, "-", pre, "latke_lattice ", coords_text(dims), " disagrees with the gauge file ",
                kind, ", which holds a ", info.dims[0], "x", info.dims[1], "x", info.dims[2], "x", info.dims[3],
                " lattice (the file brings its own: leave -", pre, "latke_lattice out or give the same)");
      }
      GaugeReadParam rp;
      rp.accept_nonunitary = accept_nonunitary;
      read_file(*d, comm, kind, info, default_grid(), rp, desc);
    }
    d->chain_beta = beta;
    d->chain_seed = seed;
    describe(*d, desc);
    *gauge = new _p_LatkeGauge{std::move(d)};
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeGaugeCreateEvolved(LatkeGauge gauge, PetscReal beta, PetscInt seed, PetscInt sweeps,
                                       LatkeGauge* next) {
  PetscFunctionBeginUser;
  PetscCheck(gauge && gauge->data, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "LatkeGaugeCreateEvolved: the gauge is NULL");
  LatkeCheckNull(next);
  const LatkeGaugeData& g = *gauge->data;
  PetscCall(guarded(g.lattice->comm(), [&] {
    require_initialized();
    const bool no_beta = beta == PETSC_DEFAULT && g.chain_beta <= 0,
               no_seed = seed == PETSC_DEFAULT && g.chain_seed < 0;
    require(!no_beta && !no_seed, "LatkeGaugeCreateEvolved: PETSC_DEFAULT for ", no_beta ? "beta" : "the seed",
            ", but the gauge has none of its own (made by neither LatkeGaugeCreateFromOptions nor "
            "LatkeGaugeCreateEvolved): give it");
    if (beta == PETSC_DEFAULT) beta = g.chain_beta;
    if (seed == PETSC_DEFAULT) seed = g.chain_seed;
    require(beta > 0 && std::isfinite(beta), "LatkeGaugeCreateEvolved: beta ", beta,
            ": expected a positive coupling (a finite number)");
    require(seed >= 0, "LatkeGaugeCreateEvolved: seed ", seed, ": expected 0 or more");
    require(sweeps >= 1, "LatkeGaugeCreateEvolved: ", sweeps, " sweeps: expected 1 or more");
    HeatbathParam hp;
    hp.beta = beta;
    hp.seed = static_cast<std::uint64_t>(seed);
    QuenchedGenerator gen(g.lattice, run_backend(), hp);
    gen.set_links(g.links, g.heatbath_passes);
    gen.sweep(static_cast<int>(sweeps));
    auto d = std::make_shared<LatkeGaugeData>();
    d->lattice = g.lattice;
    d->links = gen.links();
    d->heatbath_passes = gen.heatbath_passes();
    d->chain_beta = beta;
    d->chain_seed = seed;
    std::ostringstream desc;
    desc << "quenched chain continued by " << sweeps << " sweep(s) (beta " << beta << ", seed " << seed << "; "
         << d->heatbath_passes << " heat-bath passes in all), plaquette " << gen.measure().plaquette;
    d->description = desc.str();
    *next = new _p_LatkeGauge{std::move(d)};
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeGaugeCreateSmeared(LatkeGauge gauge, LatkeLinkSmear type, PetscInt steps, PetscReal alpha,
                                       PetscBool spatial, LatkeGauge* smeared) {
  PetscFunctionBeginUser;
  PetscCheck(gauge && gauge->data, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "LatkeGaugeCreateSmeared: the gauge is NULL");
  LatkeCheckNull(smeared);
  const LatkeGaugeData& g = *gauge->data;
  PetscCall(guarded(g.lattice->comm(), [&] {
    require(type >= LATKE_LINK_SMEAR_NONE && type <= LATKE_LINK_SMEAR_STOUT, "LatkeGaugeCreateSmeared: type ",
            static_cast<int>(type), ", expected LATKE_LINK_SMEAR_NONE, _APE or _STOUT");
    LinkSmearing p;
    p.type = static_cast<LinkSmearingType>(type);
    p.steps = static_cast<int>(steps);
    p.alpha = alpha;
    p.spatial = spatial == PETSC_TRUE;
    auto d = std::make_shared<LatkeGaugeData>();
    d->lattice = g.lattice;
    d->links = smear_links(*g.lattice, g.links, p, run_backend());
    std::ostringstream desc;
    desc << g.description << ", smeared: " << steps << " " << to_string(p.type) << " step(s), "
         << (p.type == LinkSmearingType::stout ? "rho " : "alpha ") << alpha << (p.spatial ? ", spatial links" : "");
    d->description = desc.str();
    *smeared = new _p_LatkeGauge{std::move(d)};
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeGaugeCreateGaugeFixed(LatkeGauge gauge, LatkeGaugeFix type, LatkeGaugeFixMethod method,
                                          PetscReal tol, PetscInt max_iter, PetscReal omega, PetscReal alpha,
                                          LatkeGauge* fixed, LatkeGaugeFixInfo* info) {
  PetscFunctionBeginUser;
  PetscCheck(gauge && gauge->data, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL,
             "LatkeGaugeCreateGaugeFixed: the gauge is NULL");
  LatkeCheckNull(fixed);
  *fixed = nullptr;
  const LatkeGaugeData& g = *gauge->data;
  PetscCall(guarded(g.lattice->comm(), [&] {
    require(type == LATKE_GAUGE_FIX_COULOMB || type == LATKE_GAUGE_FIX_LANDAU, "LatkeGaugeCreateGaugeFixed: type ",
            static_cast<int>(type), ", expected LATKE_GAUGE_FIX_COULOMB or LATKE_GAUGE_FIX_LANDAU");
    require(method >= LATKE_GAUGE_FIX_AUTO && method <= LATKE_GAUGE_FIX_OVERRELAX,
            "LatkeGaugeCreateGaugeFixed: method ", static_cast<int>(method),
            ", expected LATKE_GAUGE_FIX_AUTO, LATKE_GAUGE_FIX_FOURIER or LATKE_GAUGE_FIX_OVERRELAX");
    GaugeFixing p;
    p.type = type == LATKE_GAUGE_FIX_COULOMB ? GaugeFixingType::coulomb : GaugeFixingType::landau;
    p.method = method == LATKE_GAUGE_FIX_FOURIER     ? GaugeFixingMethod::fourier
               : method == LATKE_GAUGE_FIX_OVERRELAX ? GaugeFixingMethod::overrelaxation
                                                     : GaugeFixingMethod::automatic;
    p.tol = tol;
    p.max_iter = static_cast<int>(max_iter);
    if (omega != PETSC_DEFAULT) p.omega = omega;
    if (alpha != PETSC_DEFAULT) p.alpha = alpha;
    GaugeFixingResult r;
    auto d = std::make_shared<LatkeGaugeData>();
    d->lattice = g.lattice;
    d->links = fix_gauge(*g.lattice, g.links, p, run_backend(), &r);
    require(r.converged || info, "LatkeGaugeCreateGaugeFixed: ", to_string(p.type),
            " gauge fixing did not converge: ", "theta ", r.theta, " after ", r.iterations,
            " iterations, expected below ", tol,
            "; allow more iterations, or pass an info to accept the links as they are");
    std::ostringstream desc;
    desc << g.description << ", " << to_string(p.type) << " gauge (" << to_string(r.method) << ", theta " << r.theta
         << " after " << r.iterations << " iterations)";
    d->description = desc.str();
    if (info) {
      info->iterations = r.iterations;
      info->theta = r.theta;
      info->functional = r.functional;
      info->converged = r.converged ? PETSC_TRUE : PETSC_FALSE;
      info->method = r.method == GaugeFixingMethod::fourier ? LATKE_GAUGE_FIX_FOURIER : LATKE_GAUGE_FIX_OVERRELAX;
    }
    *fixed = new _p_LatkeGauge{std::move(d)};
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeGaugeLoad(MPI_Comm comm, const char path[], const PetscInt grid[4], LatkeGauge* gauge) {
  PetscFunctionBeginUser;
  LatkeCheckNull(path);
  LatkeCheckNull(gauge);
  *gauge = nullptr;
  PetscCall(guarded(comm, [&] {
    require_initialized();
    auto d = std::make_shared<LatkeGaugeData>();
    std::ostringstream desc;
    read_file(*d, comm, path, read_gauge_info(comm, path), grid ? to_coords(grid, "grid") : default_grid(),
              GaugeReadParam{}, desc);
    describe(*d, desc);
    *gauge = new _p_LatkeGauge{std::move(d)};
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeGaugeSave(LatkeGauge gauge, const char path[], const char format[]) {
  PetscFunctionBeginUser;
  PetscCheck(gauge && gauge->data, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "LatkeGaugeSave: the gauge is NULL");
  LatkeCheckNull(path);
  const LatkeGaugeData& g = *gauge->data;
  PetscCall(guarded(g.lattice->comm(), [&] {
    require_initialized();
    GaugeWriteParam wp;
    wp.format = parse_gauge_format(format ? format : "nersc");
    write_gauge(*g.lattice, g.links, path, wp, run_backend());
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeGaugeGetLinks(LatkeGauge gauge, PetscScalar links[]) {
  PetscFunctionBeginUser;
  PetscCheck(gauge && gauge->data, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "LatkeGaugeGetLinks: the gauge is NULL");
  LatkeCheckNull(links);
  const std::vector<Complex<double>>& l = gauge->data->links;
  for (std::size_t i = 0; i < l.size(); ++i) links[i] = PetscScalar(l[i].re, l[i].im);
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeGaugeGetPlaquette(LatkeGauge gauge, PetscReal* plaquette) {
  PetscFunctionBeginUser;
  PetscCheck(gauge && gauge->data, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "LatkeGaugeGetPlaquette: the gauge is NULL");
  LatkeCheckNull(plaquette);
  const LatkeGaugeData& g = *gauge->data;
  PetscCall(guarded(g.lattice->comm(), [&] {
    require_initialized();
    *plaquette = measure_gauge(*g.lattice, g.links, run_backend()).plaquette;
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeGaugeGetLattice(LatkeGauge gauge, PetscInt global[4], PetscInt local[4], PetscInt grid[4]) {
  PetscFunctionBeginUser;
  PetscCheck(gauge && gauge->data, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "LatkeGaugeGetLattice: the gauge is NULL");
  const Lattice& lat = *gauge->data->lattice;
  for (int mu = 0; mu < 4; ++mu) {
    if (global) global[mu] = lat.global()[mu];
    if (local) local[mu] = lat.local()[mu];
    if (grid) grid[mu] = lat.grid()[mu];
  }
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeGaugeView(LatkeGauge gauge, PetscViewer viewer) {
  PetscBool ascii = PETSC_FALSE;
  PetscFunctionBeginUser;
  PetscCheck(gauge && gauge->data, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "LatkeGaugeView: the gauge is NULL");
  if (!viewer) PetscCall(PetscViewerASCIIGetStdout(gauge->data->lattice->comm(), &viewer));
  PetscCall(PetscObjectTypeCompare(reinterpret_cast<PetscObject>(viewer), PETSCVIEWERASCII, &ascii));
  if (!ascii) PetscFunctionReturn(0);
  PetscCall(PetscViewerASCIIPrintf(viewer, "Latke gauge configuration: %s on %s\n", gauge->data->description.c_str(),
                                   gauge->data->lattice->describe().c_str()));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeGaugeDestroy(LatkeGauge* gauge) {
  PetscFunctionBeginUser;
  if (gauge && *gauge) {
    delete *gauge;
    *gauge = nullptr;
  }
  PetscFunctionReturn(0);
}

}  // extern "C"
