// latke-propagator: point-source Wilson-clover propagators and their meson correlators, per
// configuration and kappa, as a spectroscopy run needs them.
//
//   latke-propagator -latke_kappas k1,k2,... [-latke_csw c] [-latke_gauge quenched|FILE ...]
//                    [-latke_configs N -latke_config_sweeps n] [-latke_source point|wall|z2_wall|z4_wall]
//                    [-latke_source_site x,y,z,t] [-latke_source_seed s] [-latke_mom2_max N]
//                    [-latke_smear wuppertal|gaussian -latke_smear_steps N -latke_smear_alpha a
//                     -latke_smear_links ape|stout|none -latke_smear_links_steps n -latke_smear_links_alpha a]
//                    [-latke_json FILE] [-latke_solver gcr -latke_solver_pc mg ...]
//
// For each configuration (the one -latke_gauge gives, then N-1 more of its quenched chain, n
// sweeps apart: LatkeGaugeCreateEvolved) and each kappa, the 12 spin-colour columns of the
// propagator from a point source (or a wall on the Coulomb-gauge-fixed configuration: LatkeGaugeCreateGaugeFixed and
// LatkeVecSetWallSource, contracted at a point and at a wall sink; or the 12 spin-colour dilutions of Z2/Z4 noise on
// the source's time slice, the one-end trick: LatkeVecSetDilutedNoiseSource), optionally smeared (Wuppertal or Gaussian
// with APE- or stout-smeared spatial links: LatkeSmearer), are solved with the native solver (default: GCR
// preconditioned by Latke's multigrid, set up once per configuration at the first kappa and rebuilt from its null
// vectors at the others: MatLatkeReusePreconditioner), each checked independently with the full double-precision
// operator (|b - M x| / |b| <= -latke_solver_tol, solving on from the solution at most twice where it is not). The
// meson correlators of MatLatkeMesonCorrelators (pion, A4A4, A4P, rho, a0, a1, b1; with smearing at a point and at
// a smeared sink; with -latke_mom2_max N also at every momentum 2 pi n / L with n^2 <= N, averaged over each class of
// equivalent momenta: MatLatkeMesonCorrelatorsMomenta) go to a JSON file (schema
// latke-propagator/1, docs/latke-propagator.md) that latke-spectrum analyses; with -latke_save_propagator FILE.h5 the
// propagators themselves go to an HDF5 file (group /config_<c>/kappa_<k>, datasets s0_c0 ... s3_c2 in global
// lexicographic order, the physics parameters as attributes). Exit status 0 only when every column of every solve met
// the tolerance; the JSON is written in any case, saying which did not.
#include <petscsys.h>

#include <nlohmann/json.hpp>
#if defined(LATKE_HAVE_HDF5_VIEWER)
#include <petscviewerhdf5.h>
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "latke/latke.h"
#include "petsc/option_help.h"
#include "petsc/program.h"
#include "src/core/error.h"
#include "src/core/options.h"
#include "src/core/output_files.h"

namespace {

const char help[] =
    "latke-propagator: Wilson-clover propagators (point, gauge-fixed wall or diluted noise sources), meson and "
    "nucleon correlators.\n";

struct Options {
  std::vector<double> kappas;
  std::vector<double> site{0, 0, 0, 0};
  std::string source = "point";  ///< point, wall, z2_wall or z4_wall
  long seed = 1;                 ///< noise: configuration c uses seed + c
  long configs = 1, sweeps = 100;
  std::string json = "propagator.json";
  std::string save;  ///< -latke_save_propagator: HDF5 file of the propagators
  double tol = 1e-10;
  // Smearing of the source and (for a second set of correlators) the sink.
  std::string smear = "none";  ///< none, wuppertal, gaussian
  long smear_steps = 40;
  double smear_alpha = 0;     ///< 0: the type's default
  std::string links = "ape";  ///< none, ape, stout
  long link_steps = 10;
  double link_alpha = 0;  ///< 0: the type's default
  long mom2_max = 0;      ///< correlators at every integer momentum n with n^2 <= mom2_max, too
  long volume3 = 0;       ///< the spatial volume (a noise wall's correlators are divided by it)
  bool pairs = false;     ///< mesons of every two kappas of a configuration, too
  // Coulomb gauge fixing of each configuration for a wall source.
  double fix_tol = 1e-12, fix_omega = 1.7, fix_alpha = 1.0;
  long fix_max_iter = 10000;
  std::string fix_method = "auto";
  bool wall() const { return source == "wall"; }
  bool noise() const { return source == "z2_wall" || source == "z4_wall"; }
  bool smeared() const { return smear != "none"; }
};

Options read_propagator_options() {
  Options o;
  latke::read_options(PETSC_COMM_WORLD, "", "latke-propagator options", [&](latke::OptionGroup& g) {
    o.kappas = g.reals("-latke_kappas", {}, "Hopping parameters k1,k2,... (each solved on every configuration)");
    o.source = g.choice("-latke_source", o.source, {"point", "wall", "z2_wall", "z4_wall"},
                        "Source: a point; a wall on the time slice of -latke_source_site in the Coulomb gauge; or "
                        "spin-colour diluted Z2/Z4 noise on that slice (the one-end trick; correlators per source "
                        "site)");
    o.fix_tol = g.real("-latke_gauge_fix_tol", o.fix_tol, "Wall source: Coulomb gauge fixing until theta < tol");
    o.fix_max_iter =
        g.integer("-latke_gauge_fix_max_iter", o.fix_max_iter, "Wall source: gauge fixing iterations at most");
    o.fix_method = g.choice("-latke_gauge_fix_method", o.fix_method, {"auto", "fourier", "overrelax"},
                            "Wall source: Fourier-accelerated gauge fixing, overrelaxation, or auto (Fourier unless a "
                            "local extent has a prime factor above 13)");
    o.fix_omega = g.real("-latke_gauge_fix_omega", o.fix_omega, "Wall source: gauge fixing overrelaxation (1 to 2)");
    o.fix_alpha = g.real("-latke_gauge_fix_alpha", o.fix_alpha,
                         "Wall source: first trial step of the Fourier-accelerated line search (0 to 2)");
    o.site = g.reals("-latke_source_site", o.site, "Source site x,y,z,t (a wall: its time slice t)", 4);
    o.seed = g.integer("-latke_source_seed", o.seed, "Noise seed (configuration c uses seed + c)");
    o.pairs = g.flag("-latke_kappa_pairs", false,
                     "Mesons of every two kappas of a configuration too (quark at the earlier kappa): keeps every "
                     "kappa's 12 columns in memory until the configuration is done");
    o.mom2_max = g.integer("-latke_mom2_max", o.mom2_max,
                           "Correlators also at every momentum 2 pi n / L with 0 < n^2 <= N, averaged over each "
                           "class of equivalent n (point sources)");
    o.configs = g.integer("-latke_configs", 1, "Configurations: -latke_gauge's, then more of its quenched chain");
    o.sweeps = g.integer("-latke_config_sweeps", 100, "Sweeps between the configurations of the chain");
    o.json = g.string("-latke_json", o.json, "Write the correlators as JSON (schema latke-propagator/1) to this file");
    o.save =
        g.string("-latke_save_propagator", "",
                 "Write every propagator to this HDF5 file (group /config_<c>/kappa_<k>, datasets s<spin>_c<color>)");
    o.tol = g.real("-latke_solver_tol", o.tol, "Relative tolerance of every column (true residual, full operator)");
    o.smear = g.choice("-latke_smear", o.smear, {"none", "wuppertal", "gaussian"},
                       "Smear the source, and contract a second time at a smeared sink");
    o.smear_steps = g.integer("-latke_smear_steps", o.smear_steps, "Quark smearing steps N");
    o.smear_alpha = g.real("-latke_smear_alpha", o.smear_alpha,
                           "Wuppertal alpha (default 3), or the Gaussian's width omega in lattice units (default 4)");
    o.links = g.choice("-latke_smear_links", o.links, {"none", "ape", "stout"},
                       "Smearing of the spatial links the quark smearing uses");
    o.link_steps = g.integer("-latke_smear_links_steps", o.link_steps, "Link smearing steps");
    o.link_alpha =
        g.real("-latke_smear_links_alpha", o.link_alpha, "APE alpha (default 0.5), or stout rho (default 0.1)");
  });
  if (o.smear_alpha == 0) o.smear_alpha = o.smear == "gaussian" ? 4.0 : 3.0;
  if (o.link_alpha == 0) o.link_alpha = o.links == "stout" ? 0.1 : 0.5;
  if (o.smeared()) {
    latke::require(o.smear_steps >= 1, "-latke_smear_steps ", o.smear_steps, ": expected 1 or more");
    latke::require(o.smear_alpha > 0 && std::isfinite(o.smear_alpha), "-latke_smear_alpha ", o.smear_alpha,
                   ": expected a positive number");
    latke::require(o.link_steps >= 0, "-latke_smear_links_steps ", o.link_steps, ": expected 0 or more");
  }
  for (const char* single : {"-latke_kappa", "-latke_mass"}) {
    PetscBool set = PETSC_FALSE;
    PetscOptionsHasName(nullptr, nullptr, single, &set);
    latke::require(!set, single, ": give the hopping parameters as -latke_kappas k1,k2,...");
  }
  latke::require(!o.kappas.empty(), "-latke_kappas: not given: expected one or more hopping parameters k1,k2,...");
  for (double k : o.kappas)
    latke::require(std::isfinite(k) && k > 0 && k < 0.25, "-latke_kappas: ", k, ": expected 0 < kappa < 0.25");
  latke::require(o.site.size() == 4, "-latke_source_site: ", o.site.size(), " coordinates; expected x,y,z,t");
  for (double c : o.site)
    latke::require(c >= 0 && c == std::floor(c), "-latke_source_site: ", c, ": expected non-negative integers");
  latke::require(o.configs >= 1 && o.sweeps >= 1, "-latke_configs ", o.configs, " -latke_config_sweeps ", o.sweeps,
                 ": expected at least 1 each");
  latke::require(o.tol > 0 && o.tol < 1, "-latke_solver_tol ", o.tol, ": expected 0 < tol < 1");
  latke::require(o.mom2_max >= 0, "-latke_mom2_max ", o.mom2_max, ": expected 0 or more");
  latke::require(o.mom2_max == 0 || o.source == "point", "-latke_mom2_max ", o.mom2_max, " with -latke_source ",
                 o.source,
                 ": momentum projection needs a point source (a wall's columns mix the sites of "
                 "its slice, so the phase cannot be taken relative to the source)");
  latke::require(!(o.wall() && o.smeared()), "-latke_smear ", o.smear,
                 " with -latke_source wall: a wall source is smeared over its whole slice already; "
                 "use a point source to smear");
  return o;
}

constexpr int n_meson_channels = 7;   ///< every LatkeMesonChannel
constexpr int n_baryon_channels = 2;  ///< every LatkeBaryonChannel

/// The integer momenta n != 0 with n^2 <= mom2_max, in classes that the lattice's symmetries map
/// onto each other: the same |n_i| sorted where the three spatial extents are equal, the same
/// (|n_x|, |n_y|, |n_z|) otherwise. Ordered by n^2, then by representative.
struct MomentumClass {
  std::array<int, 3> rep{};  ///< sorted |n_i|, largest first (or |n_i| in order)
  int n2 = 0;
  std::vector<std::array<int, 3>> members;
};

std::vector<MomentumClass> momentum_classes(long mom2_max, const PetscInt global[4]) {
  if (mom2_max == 0) return {};
  long limit = std::numeric_limits<long>::max();  // the smallest n^2 that a too-large |n_i| reaches
  for (int i = 0; i < 3; ++i) limit = std::min(limit, static_cast<long>((global[i] + 1) / 2) * ((global[i] + 1) / 2));
  latke::require(mom2_max < limit, "-latke_mom2_max ", mom2_max, ": expected less than ", limit, " on the ", global[0],
                 "x", global[1], "x", global[2],
                 " spatial lattice (every |n_i| below L_i / 2, so that each class is complete)");
  const bool cubic = global[0] == global[1] && global[1] == global[2];
  std::vector<MomentumClass> classes;
  const int r = static_cast<int>(std::sqrt(static_cast<double>(mom2_max))) + 1;
  for (int x = -r; x <= r; ++x)
    for (int y = -r; y <= r; ++y)
      for (int z = -r; z <= r; ++z) {
        const int n2 = x * x + y * y + z * z;
        if (n2 == 0 || n2 > mom2_max) continue;
        std::array<int, 3> key = {std::abs(x), std::abs(y), std::abs(z)};
        if (cubic) std::sort(key.begin(), key.end(), std::greater<int>());
        auto it = std::find_if(classes.begin(), classes.end(), [&](const MomentumClass& c) { return c.rep == key; });
        if (it == classes.end()) it = classes.insert(classes.end(), MomentumClass{key, n2, {}});
        it->members.push_back({x, y, z});
      }
  std::sort(classes.begin(), classes.end(),
            [](const MomentumClass& a, const MomentumClass& b) { return a.n2 != b.n2 ? a.n2 < b.n2 : a.rep > b.rep; });
  return classes;
}

std::vector<LatkeMesonChannel> meson_channels() {
  std::vector<LatkeMesonChannel> channels;
  for (int k = 0; k < n_meson_channels; ++k) channels.push_back(static_cast<LatkeMesonChannel>(k));
  return channels;
}

/// Momentum 0, then every member of every class, as (n_x, n_y, n_z) triples.
std::vector<PetscInt> momentum_list(const std::vector<MomentumClass>& classes) {
  std::vector<PetscInt> mom = {0, 0, 0};
  for (const MomentumClass& c : classes)
    for (const auto& n : c.members) mom.insert(mom.end(), n.begin(), n.end());
  return mom;
}

std::array<PetscInt, 4> source_site(const Options& o) {
  return {static_cast<PetscInt>(o.site[0]), static_cast<PetscInt>(o.site[1]), static_cast<PetscInt>(o.site[2]),
          static_cast<PetscInt>(o.site[3])};
}

/// all[(row * nm + m) * T + t], m = 0 at rest and then every member of every class, into rest[row *
/// T + t] and moving[class][row * T + t], averaged over each class.
void split_classes(const std::vector<PetscScalar>& all, int rows, PetscInt nm, PetscInt T,
                   const std::vector<MomentumClass>& classes, std::vector<PetscScalar>& rest,
                   std::vector<std::vector<PetscScalar>>& moving) {
  rest.assign(static_cast<std::size_t>(rows) * T, 0.0);
  for (int k = 0; k < rows; ++k)
    for (PetscInt t = 0; t < T; ++t) rest[k * T + t] = all[(k * nm) * T + t];
  moving.assign(classes.size(), std::vector<PetscScalar>(static_cast<std::size_t>(rows) * T, 0.0));
  PetscInt m = 1;
  for (std::size_t c = 0; c < classes.size(); ++c) {
    const PetscReal w = 1.0 / static_cast<PetscReal>(classes[c].members.size());
    for (std::size_t j = 0; j < classes[c].members.size(); ++j, ++m)
      for (int k = 0; k < rows; ++k)
        for (PetscInt t = 0; t < T; ++t) moving[c][k * T + t] += w * all[(k * nm + m) * T + t];
  }
}

/// The correlators of one sink: the mesons (every LatkeMesonChannel), then with a point or wall
/// source the nucleon's two projections, in rows of T: at rest into rest[row * T + t], and per
/// momentum class (point sources only, as the options check), averaged over the class, into
/// moving[class][row * T + t]. With antiquark (another kappa's columns, -latke_kappa_pairs) the
/// mesons of the quark of cols and that antiquark, and no nucleon. A noise wall's are divided by
/// the slice's volume: the mean of its point sources.
PetscErrorCode contract(Mat A, const std::vector<Vec>& cols, const std::vector<Vec>* antiquark, const Options& o,
                        const std::vector<MomentumClass>& classes, PetscInt T, std::vector<PetscScalar>& rest,
                        std::vector<std::vector<PetscScalar>>& moving) {
  PetscFunctionBeginUser;
  const std::vector<LatkeMesonChannel> channels = meson_channels();
  const bool nucleon = !antiquark && !o.noise();
  const int rows = n_meson_channels + (nucleon ? n_baryon_channels : 0);
  const std::vector<PetscInt> mom = momentum_list(classes);
  const PetscInt nm = static_cast<PetscInt>(mom.size() / 3);
  const std::array<PetscInt, 4> site = source_site(o);
  std::vector<PetscScalar> all(static_cast<std::size_t>(rows) * nm * T);  // [row][momentum][t]
  if (antiquark)
    PetscCall(MatLatkeMesonCorrelatorsPair(A, cols.data(), antiquark->data(), site.data(), nm, mom.data(),
                                           n_meson_channels, channels.data(), all.data()));
  else
    PetscCall(MatLatkeMesonCorrelatorsMomenta(A, cols.data(), site.data(), nm, mom.data(), n_meson_channels,
                                              channels.data(), all.data()));
  if (nucleon)
    PetscCall(MatLatkeNucleonCorrelators(A, cols.data(), site.data(), nm, mom.data(),
                                         all.data() + static_cast<std::size_t>(n_meson_channels) * nm * T));
  if (o.noise())
    for (PetscScalar& v : all) v /= static_cast<PetscReal>(o.volume3);
  split_classes(all, rows, nm, T, classes, rest, moving);
  PetscFunctionReturn(0);
}

/// A meson of two kappas: the quark's (an earlier kappa of the configuration) and this measurement's.
struct PairCorrelators {
  double quark_kappa = 0;
  std::vector<PetscScalar> corr;
  std::vector<std::vector<PetscScalar>> corr_p;
};

struct Measurement {
  long config = 0;
  double kappa = 0;
  std::vector<PetscInt> iterations;  ///< per column, all passes
  double solve_s = 0, setup_s = 0, max_residual = 0, plaquette = 0;
  bool converged = true, reused = false;
  std::vector<PetscScalar> corr;     ///< [row * T + t]: the mesons, then (point sources) the nucleon
  std::vector<PetscScalar> corr_ss;  ///< the same at a smeared sink (with smearing)
  std::vector<std::vector<PetscScalar>> corr_p, corr_p_ss;  ///< per momentum class, the same
  double smear_s = 0;                ///< seconds smearing sources and sinks
  std::vector<PetscScalar> corr_ws;  ///< a wall source's mesons and nucleon at a wall sink
  std::vector<PairCorrelators> pairs;  ///< -latke_kappa_pairs: with each earlier kappa's quark
  LatkeGaugeFixInfo fix{};           ///< a wall source's Coulomb gauge fixing of the configuration
  double fix_s = 0;                  ///< its seconds (at the configuration's first kappa)
};

nlohmann::ordered_json correlator_json(const std::vector<PetscScalar>& c, PetscInt T) {
  nlohmann::ordered_json corr = nlohmann::ordered_json::object();
  const int rows = static_cast<int>(c.size() / T);
  for (int k = 0; k < rows; ++k) {
    const char* name = nullptr;
    if (k < n_meson_channels)
      LatkeMesonChannelGetName(static_cast<LatkeMesonChannel>(k), &name);
    else
      LatkeBaryonChannelGetName(static_cast<LatkeBaryonChannel>(k - n_meson_channels), &name);
    std::vector<double> re(T), im(T);
    for (PetscInt t = 0; t < T; ++t) {
      re[t] = PetscRealPart(c[k * T + t]);
      im[t] = PetscImaginaryPart(c[k * T + t]);
    }
    corr[name] = {{"re", re}, {"im", im}};
  }
  return corr;
}

/// The record (schema latke-propagator/1, docs/latke-propagator.md): numbers as exact as a
/// double reads back, non-finite ones null.
std::string json_text(const Options& o, const PetscInt global[4], const PetscInt grid[4], double csw,
                      const std::vector<MomentumClass>& classes, const std::vector<Measurement>& ms) {
  using json = nlohmann::ordered_json;
  int major = 0, minor = 0, patch = 0;
  LatkeGetVersion(&major, &minor, &patch);
  const char* backend = "?";
  LatkeGetBackend(&backend);
  const PetscInt T = global[3];
  json source = {{"type", o.source}, {"site", std::vector<long>(o.site.begin(), o.site.end())}};
  if (o.noise()) source.update({{"seed", o.seed}, {"dilution", "spin-color"}, {"normalization", "per source site"}});
  if (o.wall())
    source["gauge_fixing"] = {{"type", "coulomb"},          {"method", o.fix_method}, {"tol", o.fix_tol},
                              {"max_iter", o.fix_max_iter}, {"omega", o.fix_omega},   {"alpha", o.fix_alpha}};
  if (o.smeared())
    source["smearing"] = {
        {"type", o.smear},
        {"steps", o.smear_steps},
        {o.smear == "gaussian" ? "omega" : "alpha", o.smear_alpha},
        {"links", {{"type", o.links}, {"steps", o.link_steps}, {o.links == "stout" ? "rho" : "alpha", o.link_alpha}}}};
  json f = {{"schema", "latke-propagator/1"},
            {"latke_version", std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch)},
            {"backend", backend},
            {"lattice", std::vector<PetscInt>(global, global + 4)},
            {"grid", std::vector<PetscInt>(grid, grid + 4)},
            {"csw", csw},
            {"tolerance", o.tol},
            {"config_sweeps", o.sweeps},
            {"source", source}};
  if (!classes.empty()) {
    json mom = json::array();
    for (const MomentumClass& c : classes) mom.push_back({{"n", c.rep}, {"n2", c.n2}, {"count", c.members.size()}});
    f["momenta"] = std::move(mom);
  }
  f["measurements"] = json::array();
  for (const Measurement& r : ms) {
    json m = {{"config", r.config},
              {"kappa", r.kappa},
              {"plaquette", r.plaquette},
              {"solve",
               {{"iterations", r.iterations},
                {"seconds", r.solve_s},
                {"setup_seconds", r.setup_s},
                {"setup_reused", r.reused},
                {"max_true_residual", r.max_residual},
                {"converged", r.converged}}},
              {"correlators", correlator_json(r.corr, T)}};
    if (o.smeared()) {
      m["solve"]["smearing_seconds"] = r.smear_s;
      m["correlators_smeared_sink"] = correlator_json(r.corr_ss, T);
    }
    if (o.wall()) {
      m["gauge_fixing"] = {{"method", r.fix.method == LATKE_GAUGE_FIX_FOURIER ? "fourier" : "overrelax"},
                           {"iterations", r.fix.iterations},
                           {"theta", r.fix.theta},
                           {"functional", r.fix.functional},
                           {"converged", r.fix.converged == PETSC_TRUE},
                           {"seconds", r.fix_s}};
      m["correlators_wall_sink"] = correlator_json(r.corr_ws, T);
    }
    if (o.pairs) {
      m["pairs"] = json::array();
      for (const PairCorrelators& pc : r.pairs) {
        json pj = {{"quark_kappa", pc.quark_kappa}, {"correlators", correlator_json(pc.corr, T)}};
        if (!classes.empty()) {
          pj["correlators_momentum"] = json::array();
          for (const auto& c : pc.corr_p) pj["correlators_momentum"].push_back(correlator_json(c, T));
        }
        m["pairs"].push_back(std::move(pj));
      }
    }
    if (!classes.empty()) {
      m["correlators_momentum"] = json::array();
      for (const auto& c : r.corr_p) m["correlators_momentum"].push_back(correlator_json(c, T));
      if (o.smeared()) {
        m["correlators_momentum_smeared_sink"] = json::array();
        for (const auto& c : r.corr_p_ss) m["correlators_momentum_smeared_sink"].push_back(correlator_json(c, T));
      }
    }
    f["measurements"].push_back(std::move(m));
  }
  return f.dump(1) + "\n";
}

/// The 12 columns at one kappa on gauge into cols (made here, full vectors); *made: the new matrix; prev: the
/// matrix of the configuration's previous kappa, whose multigrid A takes over (or null). With smearing, *sm smears the
/// sources (made here with the first matrix of a configuration, from its smeared links).
PetscErrorCode solve_columns(LatkeGauge gauge, const Options& o, double kappa, double csw, Mat prev, Mat* made,
                             LatkeGauge smeared_links, LatkeSmearer* sm, std::vector<Vec>& cols, Measurement& m) {
  const bool noise = o.noise();
  const LatkeNoise kind = o.source == "z4_wall" ? LATKE_NOISE_Z4 : LATKE_NOISE_Z2;
  Mat A, M;
  Vec b, r;
  PetscFunctionBeginUser;
  LatkeWilsonCloverParams p;
  PetscCall(LatkeWilsonCloverParamsDefault(&p));
  p.kappa = kappa;
  p.csw = csw;
  PetscCall(MatCreateLatkeWilsonClover(gauge, LATKE_OPERATOR_EVEN_ODD, &p, nullptr, &A));
  *made = A;
  for (Vec& v : cols) PetscCall(MatLatkeCreateFullVecs(A, &v, nullptr));
  PetscLogDouble t0, t1;
  if (o.smeared() && !*sm) {  // counted with the smearing: the links' upload
    PetscCall(PetscTime(&t0));
    PetscCall(MatLatkeSmearerCreate(A, smeared_links,
                                    o.smear == "gaussian" ? LATKE_QUARK_SMEAR_GAUSSIAN : LATKE_QUARK_SMEAR_WUPPERTAL,
                                    o.smear_steps, o.smear_alpha, sm));
    PetscCall(PetscTime(&t1));
    m.smear_s += t1 - t0;
  }
  PetscCall(PetscTime(&t0));
  if (prev) {
    PetscBool reused = PETSC_FALSE;
    PetscCall(MatLatkeReusePreconditioner(A, prev, nullptr, &reused));
    m.reused = reused == PETSC_TRUE;
  }
  PetscCall(PetscTime(&t1));
  m.setup_s = t1 - t0;
  PetscCall(MatLatkeCreateReference(A, LATKE_OPERATOR_FULL, &M));
  PetscCall(MatLatkeCreateFullVecs(A, nullptr, &b));
  PetscCall(VecDuplicate(b, &r));
  LatkeSolverParams sp;
  PetscCall(LatkeSolverParamsDefault(&sp));
  sp.tol = o.tol;
  sp.initial_guess_nonzero = PETSC_FALSE;  // the columns start from zero: no guess to copy in
  const PetscInt site[4] = {static_cast<PetscInt>(o.site[0]), static_cast<PetscInt>(o.site[1]),
                            static_cast<PetscInt>(o.site[2]), static_cast<PetscInt>(o.site[3])};
  m.kappa = kappa;
  // Column j's full source into b: a point or a noise dilution, smeared with smearing. A
  // smeared source is kept for the residual check (made again, it would be smeared again and go
  // through the staging twice more); a point or noise source is cheaper to make again than to keep.
  std::vector<Vec> smeared(12, nullptr);
  auto set_source = [&](int j) -> PetscErrorCode {
    PetscFunctionBeginUser;
    if (smeared[j]) {
      PetscCall(VecCopy(smeared[j], b));
      PetscFunctionReturn(0);
    }
    if (noise)
      PetscCall(LatkeVecSetDilutedNoiseSource(A, b, kind, o.seed + m.config, site[3], j / 3, j % 3));
    else if (o.wall())
      PetscCall(LatkeVecSetWallSource(A, b, site[3], j / 3, j % 3));
    else
      PetscCall(LatkeVecSetPointSource(A, b, site, j / 3, j % 3));
    if (*sm) {
      PetscLogDouble s0, s1;
      PetscCall(PetscTime(&s0));
      PetscCall(LatkeSmearerApply(*sm, b, site[3]));  // the source's slice
      PetscCall(PetscTime(&s1));
      m.smear_s += s1 - s0;
      PetscCall(VecDuplicate(b, &smeared[j]));
      PetscCall(VecCopy(b, smeared[j]));
    }
    PetscFunctionReturn(0);
  };
  // The 12 even-odd systems solved together (MatLatkeSolveMany: sets of -latke_solver_set_size).
  std::vector<Vec> bhat(12), xhat(12);
  for (int j = 0; j < 12; ++j) {
    PetscCall(MatCreateVecs(A, &xhat[j], &bhat[j]));
    PetscCall(set_source(j));
    PetscCall(MatLatkePrepareSource(A, b, bhat[j]));
  }
  std::vector<LatkeSolverStats> st(12);
  PetscCall(PetscTime(&t0));
  PetscCall(MatLatkeSolveMany(A, 12, bhat.data(), xhat.data(), &sp, nullptr, st.data()));
  PetscCall(PetscTime(&t1));
  m.solve_s += t1 - t0;
  m.setup_s += st[0].pc_setup_seconds;  // a multigrid built in the call
  m.solve_s -= st[0].pc_setup_seconds;
  for (int j = 0; j < 12; ++j) {
    PetscCall(set_source(j));
    latke::petsc::SolveChecked c;
    c.converged = st[j].converged == PETSC_TRUE;
    c.iterations = st[j].iterations;
    const auto residual = [&](double* res) { return latke::petsc::full_residual(A, M, xhat[j], b, cols[j], r, res); };
    PetscCall(residual(&c.residual));
    LatkeSolverParams pass = sp;
    pass.initial_guess_nonzero = PETSC_TRUE;  // a further pass goes on from the solution
    const auto solve = [&](double step, bool* converged, long* iterations) -> PetscErrorCode {
      LatkeSolverStats more;
      pass.tol = step;
      PetscCall(MatLatkeSolve(A, bhat[j], xhat[j], &pass, nullptr, &more));
      m.solve_s += more.seconds;
      *converged = more.converged == PETSC_TRUE;
      *iterations = more.iterations;
      return 0;
    };
    PetscCall(latke::petsc::solve_on("latke-propagator: column " + std::to_string(j), "-latke_solver_tol", o.tol,
                                     sp.tol, solve, residual, c));
    m.iterations.push_back(static_cast<PetscInt>(c.iterations));
    m.max_residual = std::max(m.max_residual, c.residual);
    m.converged = m.converged && c.residual <= o.tol;
  }
  for (int j = 0; j < 12; ++j) {
    PetscCall(VecDestroy(&bhat[j]));
    PetscCall(VecDestroy(&xhat[j]));
    PetscCall(VecDestroy(&smeared[j]));
  }
  PetscCall(VecDestroy(&b));
  PetscCall(VecDestroy(&r));
  PetscCall(MatDestroy(&M));
  PetscFunctionReturn(0);
}

/// -latke_save_propagator: one HDF5 file for the run, written under a temporary name (rank 0's)
/// and renamed over the target only once every propagator is in it and the file is closed.
class PropagatorFile {
 public:
  PropagatorFile() = default;
  PropagatorFile(const PropagatorFile&) = delete;
  PropagatorFile& operator=(const PropagatorFile&) = delete;
  /// A file not closed (a failed write, a failed solve): its temporary removed, the target kept.
  ~PropagatorFile() {
    if (tmp_.empty() || done_) return;
    PetscViewerDestroy(&v_);
    int rank = 0;
    MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
    if (rank == 0 && std::remove(tmp_.c_str()) == 0)
      std::fprintf(stderr,
                   "latke-propagator: -latke_save_propagator %s: not completed; removed %s, %s is kept as it was\n",
                   path_.c_str(), tmp_.c_str(), path_.c_str());
    if (cleanup_) cleanup_->release();
  }
  PetscErrorCode open(const std::string& path, const Options& o, const PetscInt global[4], double csw) {
    PetscFunctionBeginUser;
#if defined(LATKE_HAVE_HDF5_VIEWER)
    path_ = path;
    PetscMPIInt rank = 0;
    PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
    char tmp[4096] = {0};
    if (rank == 0) std::snprintf(tmp, sizeof tmp, "%s", latke::temporary_name(path).c_str());
    PetscCallMPI(MPI_Bcast(tmp, sizeof tmp, MPI_CHAR, 0, PETSC_COMM_WORLD));
    tmp_ = tmp;
    if (rank == 0) cleanup_ = std::make_unique<latke::InterruptCleanup>(tmp_, path_);
    PetscCall(PetscViewerHDF5Open(PETSC_COMM_WORLD, tmp_.c_str(), FILE_MODE_WRITE, &v_));
    char lattice[64];
    std::snprintf(lattice, sizeof lattice, "%d,%d,%d,%d", (int)global[0], (int)global[1], (int)global[2],
                  (int)global[3]);
    char site[64];
    std::snprintf(site, sizeof site, "%d,%d,%d,%d", (int)o.site[0], (int)o.site[1], (int)o.site[2], (int)o.site[3]);
    PetscCall(PetscViewerHDF5WriteAttribute(v_, "/", "schema", PETSC_STRING, "latke-propagator/1"));
    PetscCall(PetscViewerHDF5WriteAttribute(v_, "/", "lattice", PETSC_STRING, lattice));
    PetscCall(PetscViewerHDF5WriteAttribute(v_, "/", "source", PETSC_STRING, o.source.c_str()));
    PetscCall(PetscViewerHDF5WriteAttribute(v_, "/", "source_site", PETSC_STRING, site));
    std::ostringstream smearing;  // the propagator is the smeared source's, at a point sink
    if (o.smeared())
      smearing << o.smear << " " << o.smear_steps << " steps, " << (o.smear == "gaussian" ? "omega " : "alpha ")
               << o.smear_alpha << "; links " << o.links << " " << o.link_steps << " steps, "
               << (o.links == "stout" ? "rho " : "alpha ") << o.link_alpha << "; point sink";
    else
      smearing << "none";
    PetscCall(PetscViewerHDF5WriteAttribute(v_, "/", "source_smearing", PETSC_STRING, smearing.str().c_str()));
    PetscCall(PetscViewerHDF5WriteAttribute(v_, "/", "csw", PETSC_REAL, &csw));
    PetscCall(PetscViewerHDF5WriteAttribute(v_, "/", "order", PETSC_STRING,
                                            "global lexicographic (x fastest); per site spin, then color"));
#else
    (void)path, (void)o, (void)global, (void)csw;
#endif
    PetscFunctionReturn(0);
  }
  /// The 12 columns of configuration c at kappa number k, in group /config_<c>/kappa_<k>.
  PetscErrorCode write(Mat A, const std::vector<Vec>& cols, long c, int k, const Measurement& m) {
    PetscFunctionBeginUser;
#if defined(LATKE_HAVE_HDF5_VIEWER)
    char group[64];
    std::snprintf(group, sizeof group, "/config_%ld/kappa_%d", c, k);
    PetscCall(PetscViewerHDF5PushGroup(v_, group));
    PetscCall(LatkePropagatorView(A, cols.data(), v_));
    PetscCall(PetscViewerHDF5PopGroup(v_));
    const PetscInt config = static_cast<PetscInt>(c);
    const PetscReal residual = m.max_residual;
    PetscCall(PetscViewerHDF5WriteAttribute(v_, group, "kappa", PETSC_REAL, &m.kappa));
    PetscCall(PetscViewerHDF5WriteAttribute(v_, group, "config", PETSC_INT, &config));
    PetscCall(PetscViewerHDF5WriteAttribute(v_, group, "max_true_residual", PETSC_REAL, &residual));
#else
    (void)A, (void)cols, (void)c, (void)k, (void)m;
#endif
    PetscFunctionReturn(0);
  }
  /// Closes the file and renames it over the target (collective).
  PetscErrorCode close() {
    PetscFunctionBeginUser;
#if defined(LATKE_HAVE_HDF5_VIEWER)
    PetscCall(PetscViewerDestroy(&v_));
    PetscMPIInt rank = 0;
    PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
    int ok = 1;
    if (rank == 0) ok = std::rename(tmp_.c_str(), path_.c_str()) == 0;
    PetscCallMPI(MPI_Bcast(&ok, 1, MPI_INT, 0, PETSC_COMM_WORLD));
    PetscCheck(ok, PETSC_COMM_WORLD, PETSC_ERR_FILE_WRITE, "-latke_save_propagator %s: renaming %s over it failed",
               path_.c_str(), tmp_.c_str());
    done_ = true;
    if (cleanup_) cleanup_->release();
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "latke-propagator: propagators written to %s\n", path_.c_str()));
#endif
    PetscFunctionReturn(0);
  }

 private:
  std::string path_, tmp_;
  bool done_ = false;  ///< renamed over the target
  PetscViewer v_ = nullptr;
  std::unique_ptr<latke::InterruptCleanup> cleanup_;
};

PetscErrorCode run(int& status) {
  Options o;
  PetscFunctionBeginUser;
  PetscCall(LatkeInitialize());
  try {
    o = read_propagator_options();
    latke::require_writable(PETSC_COMM_WORLD, o.json, "-latke_json");
    if (!o.save.empty()) {
#if defined(LATKE_HAVE_HDF5_VIEWER)
      latke::require_writable(PETSC_COMM_WORLD, o.save, "-latke_save_propagator");
#else
      latke::fail("-latke_save_propagator ", o.save, ": this build has no HDF5 viewer (PETSc without HDF5)");
#endif
    }
  } catch (const std::exception& e) {
    SETERRQ(PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "%s", e.what());
  }
  // The tolerance is the program's: MatLatkeSolve takes it from LatkeSolverParams, so that the
  // tighter ones of a refinement pass are not overridden by the options database.
  PetscCall(PetscOptionsClearValue(nullptr, "-latke_solver_tol"));
  PetscReal csw = 1.0;
  PetscCall(PetscOptionsGetReal(nullptr, nullptr, "-latke_csw", &csw, nullptr));
  {
    PetscBool help = PETSC_FALSE;
    PetscCall(PetscOptionsHasHelp(nullptr, &help));
    if (help) latke::petsc::native_solver_options_help(PETSC_COMM_WORLD, nullptr);
  }
  LatkeGauge gauge = nullptr;
  PetscCall(LatkeGaugeCreateFromOptions(PETSC_COMM_WORLD, nullptr, &gauge));
  PetscInt global[4], grid[4];
  PetscCall(LatkeGaugeGetLattice(gauge, global, nullptr, grid));
  o.volume3 = static_cast<long>(global[0]) * global[1] * global[2];
  for (int mu = 0; mu < 4; ++mu)
    PetscCheck(o.site[mu] < global[mu], PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT,
               "-latke_source_site: coordinate %d in dimension %d: expected 0 to %d", (int)o.site[mu], mu,
               (int)global[mu] - 1);
  // Propagators are solved with GCR and the multigrid unless the options say otherwise.
  PetscBool has = PETSC_FALSE;
  PetscCall(PetscOptionsHasName(nullptr, nullptr, "-latke_solver", &has));
  if (!has) PetscCall(PetscOptionsSetValue(nullptr, "-latke_solver", "gcr"));
  PetscCall(PetscOptionsHasName(nullptr, nullptr, "-latke_solver_pc", &has));
  if (!has) PetscCall(PetscOptionsSetValue(nullptr, "-latke_solver_pc", "mg"));
  // Its multigrid is tuned for sets of columns: a cheaper setup (half the fine null vectors'
  // steps, 30 on the coarse levels) and more smoothing on the coarse levels, which a set makes
  // cheap (docs/latke-propagator.md).
  char pc[16] = "";
  PetscCall(PetscOptionsGetString(nullptr, nullptr, "-latke_solver_pc", pc, sizeof pc, nullptr));
  if (std::string(pc) == "mg")
    for (const auto& [name, value] : {std::pair<const char*, const char*>{"-pc_latke_mg_setup_iterations", "50,30"},
                                      {"-pc_latke_mg_coarse_post_smooth", "8"}}) {
      PetscCall(PetscOptionsHasName(nullptr, nullptr, name, &has));
      if (!has) PetscCall(PetscOptionsSetValue(nullptr, name, value));
    }
  PropagatorFile file;
  if (!o.save.empty()) PetscCall(file.open(o.save, o, global, csw));
  const PetscInt T = global[3];
  std::vector<MomentumClass> classes;
  try {
    classes = momentum_classes(o.mom2_max, global);
  } catch (const std::exception& e) {
    SETERRQ(PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "%s", e.what());
  }
  std::vector<Measurement> ms;
  for (long c = 0; c < o.configs; ++c) {
    if (c > 0) {
      LatkeGauge next = nullptr;
      PetscCall(LatkeGaugeCreateEvolved(gauge, PETSC_DEFAULT, PETSC_DEFAULT, o.sweeps, &next));
      PetscCall(LatkeGaugeDestroy(&gauge));
      gauge = next;
    }
    PetscReal plaquette = 0;
    PetscCall(LatkeGaugeGetPlaquette(gauge, &plaquette));
    // A wall source needs the configuration in the Coulomb gauge; everything is solved on it.
    LatkeGauge fixed = nullptr;
    LatkeGaugeFixInfo fix{};
    PetscLogDouble fix_s = 0;
    if (o.wall()) {
      PetscLogDouble s0, s1;
      PetscCall(PetscTime(&s0));
      const LatkeGaugeFixMethod method = o.fix_method == "fourier"     ? LATKE_GAUGE_FIX_FOURIER
                                         : o.fix_method == "overrelax" ? LATKE_GAUGE_FIX_OVERRELAX
                                                                       : LATKE_GAUGE_FIX_AUTO;
      PetscCall(LatkeGaugeCreateGaugeFixed(gauge, LATKE_GAUGE_FIX_COULOMB, method, o.fix_tol, o.fix_max_iter,
                                           o.fix_omega, o.fix_alpha, &fixed, &fix));
      PetscCall(PetscTime(&s1));
      fix_s = s1 - s0;
      PetscCall(PetscPrintf(
          PETSC_COMM_WORLD, "config %ld: Coulomb gauge (%s), theta %.2e after %d iterations (%.2f s)%s\n", c,
          fix.method == LATKE_GAUGE_FIX_FOURIER ? "fourier" : "overrelax", (double)fix.theta, (int)fix.iterations,
          fix_s, fix.converged ? "" : "; NOT CONVERGED: the wall correlators are not of that gauge"));
    }
    LatkeGauge work = fixed ? fixed : gauge;
    LatkeGauge smeared_links = nullptr;
    LatkeSmearer sm = nullptr;
    PetscLogDouble link_s = 0;  // the link smearing, counted with the first kappa's smearing
    if (o.smeared()) {
      PetscLogDouble s0, s1;
      PetscCall(PetscTime(&s0));
      const LatkeLinkSmear type = o.links == "stout" ? LATKE_LINK_SMEAR_STOUT
                                  : o.links == "ape" ? LATKE_LINK_SMEAR_APE
                                                     : LATKE_LINK_SMEAR_NONE;
      PetscCall(LatkeGaugeCreateSmeared(work, type, o.link_steps, o.link_alpha, PETSC_TRUE, &smeared_links));
      PetscCall(PetscTime(&s1));
      link_s = s1 - s0;
    }
    Mat prev = nullptr;
    std::vector<std::vector<Vec>> kept;  // -latke_kappa_pairs: the columns of the kappas done
    for (std::size_t k = 0; k < o.kappas.size(); ++k) {
      const double kappa = o.kappas[k];
      Measurement m;
      m.config = c;
      m.plaquette = plaquette;
      m.smear_s = k == 0 ? link_s : 0;
      m.fix = fix;
      m.fix_s = k == 0 ? fix_s : 0;
      std::vector<Vec> cols(12);
      Mat A = nullptr;
      PetscCall(solve_columns(work, o, kappa, csw, prev, &A, smeared_links, &sm, cols, m));
      PetscCall(contract(A, cols, nullptr, o, classes, T, m.corr, m.corr_p));
      if (o.pairs) {  // with every earlier kappa's quark, at the point sink; then keep these columns
        for (std::size_t i = 0; i < kept.size(); ++i) {
          PairCorrelators pc;
          pc.quark_kappa = o.kappas[i];
          PetscCall(contract(A, kept[i], &cols, o, classes, T, pc.corr, pc.corr_p));
          m.pairs.push_back(std::move(pc));
        }
        std::vector<Vec> copy(12);
        for (int j = 0; j < 12; ++j) {
          PetscCall(VecDuplicate(cols[j], &copy[j]));
          PetscCall(VecCopy(cols[j], copy[j]));
        }
        kept.push_back(std::move(copy));
      }
      if (o.wall()) {
        std::vector<LatkeMesonChannel> mesons;
        for (int j = 0; j < n_meson_channels; ++j) mesons.push_back(static_cast<LatkeMesonChannel>(j));
        m.corr_ws.resize(static_cast<std::size_t>(n_meson_channels + n_baryon_channels) * T);
        PetscCall(MatLatkeMesonCorrelatorsWallSink(A, cols.data(), static_cast<PetscInt>(o.site[3]), n_meson_channels,
                                                   mesons.data(), m.corr_ws.data()));
        PetscCall(
            MatLatkeNucleonCorrelatorsWallSink(A, cols.data(), static_cast<PetscInt>(o.site[3]),
                                               m.corr_ws.data() + static_cast<std::size_t>(n_meson_channels) * T));
        // Correlators of a configuration not in the Coulomb gauge are not what they claim to be.
        if (!fix.converged) m.converged = false;
      }
      if (!o.save.empty()) PetscCall(file.write(A, cols, c, static_cast<int>(k), m));  // at the point sink
      if (sm) {                                                                        // the same at the smeared sink
        PetscLogDouble s0, s1;
        PetscCall(PetscTime(&s0));
        for (Vec v : cols) PetscCall(LatkeSmearerApply(sm, v, -1));
        PetscCall(PetscTime(&s1));
        m.smear_s += s1 - s0;
        PetscCall(contract(A, cols, nullptr, o, classes, T, m.corr_ss, m.corr_p_ss));
      }
      int lo = 1 << 30, hi = 0;
      for (PetscInt i : m.iterations) lo = std::min(lo, (int)i), hi = std::max(hi, (int)i);
      PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                            "config %ld kappa %.6g: 12 columns, %d-%d iterations, solve %.3f s, setup %.3f s%s, "
                            "%smax true residual %.2e%s; C_pi(%d) = %.6e\n",
                            c, kappa, lo, hi, m.solve_s, m.setup_s, m.reused ? " (reused)" : "",
                            sm ? ("smearing " + std::to_string(m.smear_s).substr(0, 5) + " s, ").c_str() : "",
                            m.max_residual, m.converged ? "" : " NOT CONVERGED", (int)(T / 2),
                            (double)PetscRealPart(m.corr[T / 2])));
      if (!m.converged) status = 1;
      ms.push_back(std::move(m));
      for (Vec& v : cols) PetscCall(VecDestroy(&v));
      PetscCall(MatDestroy(&prev));
      prev = A;
    }
    for (auto& set : kept)
      for (Vec& v : set) PetscCall(VecDestroy(&v));
    PetscCall(LatkeSmearerDestroy(&sm));
    PetscCall(LatkeGaugeDestroy(&smeared_links));
    PetscCall(LatkeGaugeDestroy(&fixed));
    PetscCall(MatDestroy(&prev));
  }
  PetscCall(LatkeGaugeDestroy(&gauge));
  if (!o.save.empty()) PetscCall(file.close());
  PetscMPIInt rank = 0;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  try {
    if (rank == 0) latke::write_text_atomically(o.json, json_text(o, global, grid, csw, classes, ms), "-latke_json");
  } catch (const std::exception& e) {
    SETERRQ(PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "%s", e.what());
  }
  PetscCall(
      PetscPrintf(PETSC_COMM_WORLD, "latke-propagator: %zu measurements written to %s%s\n", ms.size(), o.json.c_str(),
                  status ? "; some solves did not meet the tolerance, or some gauge fixing did not converge" : ""));
  PetscFunctionReturn(0);
}

}  // namespace

int main(int argc, char** argv) { return latke::petsc::program_main(argc, argv, help, "latke-propagator", run); }
