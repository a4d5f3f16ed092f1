// latke-gauge: quenched gauge configurations and gauge files.
//
//   latke-gauge generate [options]          Cabibbo-Marinari heat bath + over-relaxation
//   latke-gauge convert IN OUT [options]    between NERSC and ILDG, precisions, 3x3 / 3x2
//   latke-gauge fix IN OUT [options]        IN fixed to the Coulomb or Landau gauge, written to OUT
//   latke-gauge measure FILE [options]      observables of a file (verified on reading)
//   latke-gauge info FILE                   what a file's header says (links not read)
//   latke-gauge analyze HISTORY [options]   mean and error of a generate history
//
// generate prints a progress line at each measurement and, at the end, the generator's
// throughput in link updates per second (heat-bath and over-relaxation visits of a link,
// measurements excluded), so a long run without measurements is the generator benchmark.
#include <petscsys.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "latke/latke.h"
#include "src/core/autocorrelation.h"
#include "src/core/error.h"
#include "src/core/options.h"
#include "src/core/output_files.h"
#include "src/fields/gauge_fixing.h"
#include "src/fields/gauge_generator.h"
#include "src/fields/gauge_io.h"

static const char help[] =
    "latke-gauge: quenched gauge configurations and gauge files.\n"
    "  latke-gauge generate [options]\n"
    "    -latke_lattice X,Y,Z,T      global lattice (default 8,8,8,8; with -latke_input: the file's)\n"
    "    -latke_beta b               Wilson gauge coupling (default 6.0)\n"
    "    -latke_sweeps N             sweeps to make (default 100)\n"
    "    -latke_overrelax K          over-relaxation passes per heat-bath pass (default 4)\n"
    "    -latke_seed S               random-number seed (default 1)\n"
    "    -latke_start cold|hot|weak  start (default hot); -latke_weak_spread s (default 0.2)\n"
    "    -latke_input FILE           continue from FILE instead (its sequence number keys the RNG,\n"
    "                                or -latke_first_pass N)\n"
    "    -latke_measure_every N      measure and print every N sweeps (default 10; 0: at the end)\n"
    "    -latke_history FILE         write every measurement as a table (for latke-gauge analyze)\n"
    "    -latke_output FILE          write the final configuration\n"
    "  latke-gauge convert IN OUT [options]\n"
    "  latke-gauge fix IN OUT [options]   IN in the Coulomb or Landau gauge, written as convert writes\n"
    "    -latke_gauge_fix coulomb|landau  (default coulomb); -latke_gauge_fix_tol t (1e-12): until theta < t\n"
    "    -latke_gauge_fix_max_iter n (10000); -latke_gauge_fix_method auto|fourier|overrelax (auto);\n"
    "    -latke_gauge_fix_alpha a (1, Fourier); -latke_gauge_fix_omega w (1.7, overrelaxation); -latke_json FILE\n"
    "  output options (generate, convert, fix):\n"
    "    -latke_format nersc|ildg    default: ildg for .lime/.ildg names, nersc for .nersc, else nersc\n"
    "                                (convert: IN's)\n"
    "    -latke_file_precision double|single  (default double; convert: IN's)\n"
    "    -latke_nersc_datatype 3x3|3x2        (default 3x3; convert: IN's)\n"
    "    -latke_endian big|little             NERSC only (default big; convert: IN's)\n"
    "    -latke_ensemble_id ID, -latke_ensemble_label TEXT, -latke_lfn NAME (ILDG)\n"
    "  input options (measure, convert, fix):\n"
    "    -latke_gauge_accept_nonunitary       read 3x3 links that are not SU(3) (never non-finite ones)\n"
    "    -latke_lattice X,Y,Z,T               if given, must be the file's\n"
    "  latke-gauge measure FILE      observables of FILE (after every check on reading)\n"
    "  latke-gauge info FILE         header fields or LIME records of FILE\n"
    "  latke-gauge analyze HISTORY [-latke_column NAME] [-latke_therm N] [-latke_expect v -latke_expect_error e]\n"
    "  common: -latke_backend cpu|cuda, -latke_grid a,b,c,d; generate, measure, analyze: -latke_json FILE\n"
    "    (a JSON record, schema latke-gauge/1)\n";

namespace latke {
namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool is_root() {
  int rank = 0;
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  return rank == 0;
}

std::string dims_text(const Coords& c) {
  return std::to_string(c[0]) + "x" + std::to_string(c[1]) + "x" + std::to_string(c[2]) + "x" + std::to_string(c[3]);
}

/// Output options; `from`, when given, supplies the defaults (convert keeps what it can).
GaugeWriteParam write_options(const std::string& path, const GaugeFileInfo* from) {
  GaugeWriteParam w;
  const bool from_nersc = from && from->format == GaugeFileFormat::nersc;
  std::string format, prec, datatype, endian;
  read_options(PETSC_COMM_WORLD, "", "latke-gauge output options", [&](OptionGroup& o) {
    format = o.string("-latke_format", "", "nersc or ildg (default: from the name .lime/.ildg/.nersc, else the input's or nersc)");
    prec = o.string("-latke_file_precision", from ? to_string(from->precision) : to_string(Precision::double_),
                    "File precision: double or single");
    datatype = o.string("-latke_nersc_datatype", "", "NERSC: 3x3 or 3x2 (default 3x3, or the input's)");
    endian = o.string("-latke_endian", "", "NERSC: big or little (default big, or the input's)");
    w.ensemble_id = o.string("-latke_ensemble_id",
                             from_nersc && !from->value("ENSEMBLE_ID").empty() ? from->value("ENSEMBLE_ID") : "latke",
                             "Ensemble id written to the header");
    w.ensemble_label = o.string("-latke_ensemble_label", from_nersc ? from->value("ENSEMBLE_LABEL") : "",
                                "Ensemble label written to the header");
    w.lfn = o.string("-latke_lfn", "", "ILDG logical file name");
  });
  if (format.empty()) {
    if (ends_with(path, ".lime") || ends_with(path, ".ildg"))
      format = "ildg";
    else if (ends_with(path, ".nersc"))
      format = "nersc";
    else
      format = from ? to_string(from->format) : "nersc";
  }
  w.format = parse_gauge_format(format);
  const bool same_format = from && from->format == w.format;
  w.precision = parse_precision(prec);
  require(w.precision != Precision::half, "-latke_file_precision ", prec,
          ": gauge files hold single or double precision");
  if (datatype.empty()) datatype = same_format && from->two_rows ? "3x2" : "3x3";
  require(datatype == "3x3" || datatype == "3x2", "-latke_nersc_datatype '", datatype, "': expected 3x3 or 3x2");
  w.two_rows = datatype == "3x2";
  if (endian.empty()) endian = same_format && from->little_endian ? "little" : "big";
  require(endian == "big" || endian == "little", "-latke_endian '", endian, "': expected big or little");
  w.little_endian = endian == "little";
  if (from && from->sequence_number >= 0) w.sequence_number = from->sequence_number;
  return w;
}

std::string describe_write(const GaugeWriteParam& w) {
  const std::string bits = w.precision == Precision::single ? "32" : "64";
  if (w.format == GaugeFileFormat::ildg) return "ILDG, IEEE" + bits + " big endian";
  return std::string("NERSC ") + (w.two_rows ? "4D_SU3_GAUGE (3x2)" : "4D_SU3_GAUGE_3x3") + ", IEEE" + bits +
         (w.little_endian ? "LITTLE" : "BIG");
}

/// Options of the commands that read a gauge file (measure, convert): -latke_lattice, when
/// given, must be the file's (which brings its own); -latke_gauge_accept_nonunitary.
GaugeReadParam input_options(const std::string& path, const GaugeFileInfo& info) {
  GaugeReadParam rp;
  Coords asked{};
  read_options(PETSC_COMM_WORLD, "", "latke-gauge input options", [&](OptionGroup& o) {
    asked = o.coords("-latke_lattice", asked, "Lattice X,Y,Z,T: the file brings its own; if given, it must agree");
    rp.accept_nonunitary = o.flag("-latke_gauge_accept_nonunitary", false,
                                  "Read 3x3 links that are not SU(3) (smeared, fat) instead of refusing them");
  });
  if (asked[0] > 0) {
    require(asked == info.dims, "-latke_lattice ", coords_text(asked), " disagrees with ", path, ", which holds a ",
            dims_text(info.dims), " lattice");
  }
  return rp;
}

using json = nlohmann::ordered_json;

/// The head of every latke-gauge JSON record (schema latke-gauge/1, docs/latke-gauge.md).
json version_head(const char* command) {
  int major = 0, minor = 0, patch = 0;
  LatkeGetVersion(&major, &minor, &patch);
  return {{"schema", "latke-gauge/1"},
          {"command", command},
          {"latke_version", std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch)}};
}

/// version_head with the lattice, process grid and backend of a command that has them.
json record_head(const char* command, const Coords& dims, const Coords& grid, Backend backend) {
  json j = version_head(command);
  j.update({{"backend", to_string(backend)},
            {"lattice", std::vector<int>(dims.begin(), dims.end())},
            {"grid", std::vector<int>(grid.begin(), grid.end())}});
  return j;
}

json observables_json(const GaugeObservables& o) {
  return {{"plaquette", o.plaquette},
          {"plaquette_spatial", o.plaquette_spatial},
          {"plaquette_temporal", o.plaquette_temporal},
          {"polyakov", {o.polyakov.re, o.polyakov.im}},
          {"link_trace", o.link_trace},
          {"unitarity", o.unitarity}};
}

/// text written atomically to path by the first rank (`what`: the option naming the file); a
/// failure is every rank's.
void write_from_root(const std::string& path, const std::string& text, const char* what) {
  std::string why;
  try {
    if (is_root()) write_text_atomically(path, text, what);
  } catch (const std::exception& e) {
    why = e.what();
  }
  collective_require(PETSC_COMM_WORLD, why.empty(), why);
  if (is_root()) std::printf("wrote %s\n", path.c_str());
}

/// -latke_json: the record (non-finite numbers as null), when a path is given.
void write_json(const std::string& path, const json& j) {
  if (!path.empty()) write_from_root(path, j.dump(1) + "\n", "-latke_json");
}

void print_observables(const GaugeObservables& o) {
  std::printf("plaquette           %.15f\n", o.plaquette);
  std::printf("  spatial           %.15f\n", o.plaquette_spatial);
  std::printf("  temporal          %.15f\n", o.plaquette_temporal);
  std::printf("polyakov loop       %+.15f %+.15fi  (|P| %.15f)\n", o.polyakov.re, o.polyakov.im,
              std::sqrt(norm2(o.polyakov)));
  std::printf("link trace          %.15f\n", o.link_trace);
  std::printf("unitarity deviation %.3e\n", o.unitarity);
}

int cmd_generate() {
  const RunOptions run = setup_from_options();
  HeatbathParam hp;
  long overrelax = 4, seed = 1, sweeps = 100, every = 10, first_opt = -1;
  std::string input, output, history, start_name, json_path;
  Coords asked{};
  read_options(PETSC_COMM_WORLD, "", "latke-gauge generate options", [&](OptionGroup& o) {
    hp.beta = o.real("-latke_beta", 6.0, "Wilson gauge coupling beta");
    overrelax = o.integer("-latke_overrelax", 4, "Over-relaxation passes per heat-bath pass");
    seed = o.integer("-latke_seed", 1, "Random-number seed");
    hp.weak_spread = o.real("-latke_weak_spread", 0.2, "Spread of a weak start");
    sweeps = o.integer("-latke_sweeps", 100, "Sweeps to make");
    every = o.integer("-latke_measure_every", 10, "Measure and print every N sweeps (0: at the end)");
    input = o.string("-latke_input", "", "Continue from this gauge file");
    output = o.string("-latke_output", "", "Write the final configuration to this file");
    history = o.string("-latke_history", "", "Write every measurement as a table (for latke-gauge analyze)");
    json_path = o.string("-latke_json", "", "Write the run and every measurement as JSON (schema latke-gauge/1)");
    start_name = o.string("-latke_start", "hot", "Start: cold, hot or weak");
    asked = o.coords("-latke_lattice", asked, "Global lattice X,Y,Z,T (default 8,8,8,8; with -latke_input the file's)");
    first_opt = o.integer("-latke_first_pass", -1, "With -latke_input: heat-bath pass number keying the RNG (default: the file's)");
  });
  require(std::isfinite(hp.beta) && hp.beta >= 0, "-latke_beta ", hp.beta,
          ": expected a coupling of 0 or more (a finite number)");
  require(std::isfinite(hp.weak_spread) && hp.weak_spread >= 0, "-latke_weak_spread ", hp.weak_spread,
          ": expected a finite number of 0 or more (the spread of the weak start's 1 + s x noise)");
  require(overrelax >= 0 && overrelax <= 1000, "-latke_overrelax ", overrelax, ": expected 0 to 1000");
  hp.overrelax = static_cast<int>(overrelax);
  require(seed >= 0, "-latke_seed ", seed, ": expected 0 or more");
  hp.seed = static_cast<std::uint64_t>(seed);
  require(sweeps >= 0, "-latke_sweeps ", sweeps, ": expected 0 or more");
  require(every >= 0, "-latke_measure_every ", every, ": expected 0 or more");
  const GaugeStart start = parse_gauge_start(start_name);
  GaugeWriteParam wp;
  if (!output.empty()) wp = write_options(output, nullptr);
  // Before the sweeps: an output that cannot be written is found now, not after the work.
  if (!output.empty()) require_writable(PETSC_COMM_WORLD, output, "-latke_output");
  if (!history.empty()) require_writable(PETSC_COMM_WORLD, history, "-latke_history");
  if (!json_path.empty()) require_writable(PETSC_COMM_WORLD, json_path, "-latke_json");

  GaugeFileInfo info;
  Coords dims{};
  if (!input.empty()) {
    info = read_gauge_info(PETSC_COMM_WORLD, input);
    dims = info.dims;
    if (asked[0] > 0)
      require(asked == dims, "-latke_lattice ", coords_text(asked), " disagrees with ", input, ", which holds a ",
              dims_text(dims), " lattice");
  } else {
    dims = asked[0] > 0 ? asked : Coords{8, 8, 8, 8};
  }
  auto lat = std::make_shared<Lattice>(PETSC_COMM_WORLD, dims, run.grid);
  QuenchedGenerator gen(lat, run.backend, hp);
  std::string origin;
  if (!input.empty()) {
    const std::vector<Complex<double>> links = read_gauge(*lat, input, &info, run.backend);
    const long first = first_opt >= 0 ? first_opt : (info.sequence_number >= 0 ? info.sequence_number : 0);
    require(first >= 0, "-latke_first_pass ", first, ": expected 0 or more");
    gen.set_links(links, first);
    origin = "from " + input + " (heat-bath pass " + std::to_string(first) + ")";
  } else {
    gen.start(start);
    origin = std::string(to_string(start)) + " start";
    const double dev = gen.measure().unitarity;
    require(dev <= 1e-10, "the ", origin, " with -latke_weak_spread ", hp.weak_spread,
            " gave links that deviate from SU(3) by ", dev,
            " (expected at most 1e-10): the spread is too large for double arithmetic");
  }
  const bool root = is_root();
  if (root)
    std::printf(
        "latke-gauge generate: lattice %s, backend %s, beta %g, %d over-relaxation passes per sweep, seed %lu, "
        "%s, %ld sweeps\n",
        lat->describe().c_str(), to_string(run.backend), hp.beta, hp.overrelax, static_cast<unsigned long>(hp.seed),
        origin.c_str(), sweeps);

  std::ostringstream table;
  table << "# latke-gauge generate: lattice " << dims_text(dims) << ", beta " << hp.beta << ", overrelax "
        << hp.overrelax << ", seed " << hp.seed << ", " << origin << ", backend " << to_string(run.backend) << "\n"
        << "# sweep plaquette plaquette_spatial plaquette_temporal polyakov_re polyakov_im link_trace unitarity\n";
  table.precision(15);
  json measurements = json::array();
  auto record = [&](long s, double rate) {
    const GaugeObservables o = gen.measure();
    json m = {{"sweep", s}};
    m.update(observables_json(o));
    if (rate > 0) m["link_updates_per_second"] = rate;
    measurements.push_back(m);
    table << s << " " << o.plaquette << " " << o.plaquette_spatial << " " << o.plaquette_temporal << " "
          << o.polyakov.re << " " << o.polyakov.im << " " << o.link_trace << " " << o.unitarity << "\n";
    if (root) {
      std::printf("sweep %6ld  plaq %.10f  (s %.10f t %.10f)  poly %+.6f%+.6fi  unit %.1e", s, o.plaquette,
                  o.plaquette_spatial, o.plaquette_temporal, o.polyakov.re, o.polyakov.im, o.unitarity);
      if (rate > 0) std::printf("  %.3e link updates/s", rate);
      std::printf("\n");
      std::fflush(stdout);
    }
  };
  if (every > 0) record(0, 0);
  double generating = 0, updates_before = gen.link_updates();
  double mark = now_s(), window_updates = gen.link_updates(), window_time = 0;
  for (long s = 1; s <= sweeps; ++s) {
    gen.sweep(1);
    if ((every > 0 && s % every == 0) || s == sweeps) {
      synchronize(run.backend);
      const double dt = now_s() - mark;
      generating += dt;
      window_time += dt;
      record(s, (gen.link_updates() - window_updates) / window_time);
      window_updates = gen.link_updates();
      window_time = 0;
      mark = now_s();
    }
  }
  const double updates = gen.link_updates() - updates_before;
  if (root && sweeps > 0)
    std::printf(
        "generator: %ld sweeps (%d link updates each, per link 1 heat bath + %d over-relaxation) in %.3f s: "
        "%.3e link updates/s, %.3e sweeps/s\n",
        sweeps, static_cast<int>(updates / sweeps), hp.overrelax, generating, updates / generating,
        sweeps / generating);
  if (!output.empty()) {
    if (wp.ensemble_label.empty()) {
      std::ostringstream label;
      label << "quenched Wilson beta=" << hp.beta << " overrelax=" << hp.overrelax << " seed=" << hp.seed;
      wp.ensemble_label = label.str();
    }
    wp.sequence_number = gen.heatbath_passes();
    const GaugeObservables last = gen.measure();
    require(std::isfinite(last.plaquette), "not writing ", output, ": the generated configuration's plaquette is ",
            last.plaquette, ", not a finite number (its links are not finite: beta ", hp.beta, ", ", origin, ")");
    write_gauge(*lat, gen.links(), output, wp, run.backend);
    if (root)
      std::printf("wrote %s (%s, heat-bath pass %ld)\n", output.c_str(), describe_write(wp).c_str(),
                  gen.heatbath_passes());
  }
  if (!json_path.empty()) {
    json j = record_head("generate", dims, lat->grid(), run.backend);
    j.update({{"beta", hp.beta},
              {"overrelax", hp.overrelax},
              {"seed", hp.seed},
              {"start", origin},
              {"sweeps", sweeps},
              {"heatbath_passes", gen.heatbath_passes()},
              {"seconds", generating},
              {"link_updates_per_second", generating > 0 ? updates / generating : 0.0},
              {"output", output},
              {"measurements", measurements}});
    write_json(json_path, j);
  }
  if (!history.empty()) write_from_root(history, table.str(), "-latke_history");
  return 0;
}

int cmd_convert(const std::vector<std::string>& args) {
  require(args.size() == 2, "convert needs an input and an output file: latke-gauge convert IN OUT [options]");
  const RunOptions run = setup_from_options();
  GaugeFileInfo info = read_gauge_info(PETSC_COMM_WORLD, args[0]);
  const GaugeReadParam rp = input_options(args[0], info);
  auto lat = std::make_shared<Lattice>(PETSC_COMM_WORLD, info.dims, run.grid);
  const std::vector<Complex<double>> links = read_gauge(*lat, args[0], &info, run.backend, rp);
  GaugeWriteParam w = write_options(args[1], &info);
  write_gauge(*lat, links, args[1], w, run.backend);
  if (is_root())
    std::printf("converted %s (%s) to %s (%s)\n", args[0].c_str(), dims_text(info.dims).c_str(), args[1].c_str(),
                describe_write(w).c_str());
  return 0;
}

/// IN fixed to a gauge and written to OUT as convert writes it; nothing is written unless theta
/// fell below the tolerance.
int cmd_fix(const std::vector<std::string>& args) {
  require(args.size() == 2, "fix needs an input and an output file: latke-gauge fix IN OUT [options]");
  const RunOptions run = setup_from_options();
  GaugeFixing p;
  std::string json_path;
  read_options(PETSC_COMM_WORLD, "", "latke-gauge fix options", [&](OptionGroup& o) {
    const std::string type =
        o.choice("-latke_gauge_fix", "coulomb", {"coulomb", "landau"}, "The gauge: Coulomb (per time slice) or Landau");
    p.type = type == "landau" ? GaugeFixingType::landau : GaugeFixingType::coulomb;
    p.tol = o.real("-latke_gauge_fix_tol", p.tol, "Fix until theta = (1/3V) sum tr[Delta Delta^dag] < tol");
    p.max_iter = static_cast<int>(o.integer("-latke_gauge_fix_max_iter", p.max_iter, "Iterations at most"));
    const std::string method =
        o.choice("-latke_gauge_fix_method", "auto", {"auto", "fourier", "overrelax"},
                 "Fourier-accelerated conjugate gradient, overrelaxation, or auto (Fourier unless a "
                 "local extent has a prime factor above 13)");
    p.method = method == "fourier"     ? GaugeFixingMethod::fourier
               : method == "overrelax" ? GaugeFixingMethod::overrelaxation
                                       : GaugeFixingMethod::automatic;
    p.omega = o.real("-latke_gauge_fix_omega", p.omega, "Overrelaxation, 1 <= omega < 2");
    p.alpha = o.real("-latke_gauge_fix_alpha", p.alpha,
                     "First trial step of the Fourier-accelerated line search, 0 < alpha < 2");
    json_path = o.string("-latke_json", "", "Write the fixing's record as JSON (schema latke-gauge/1)");
  });
  check(p);
  if (!json_path.empty()) require_writable(PETSC_COMM_WORLD, json_path, "-latke_json");
  GaugeFileInfo info = read_gauge_info(PETSC_COMM_WORLD, args[0]);
  const GaugeReadParam rp = input_options(args[0], info);
  auto lat = std::make_shared<Lattice>(PETSC_COMM_WORLD, info.dims, run.grid);
  const std::vector<Complex<double>> links = read_gauge(*lat, args[0], &info, run.backend, rp);
  GaugeWriteParam w = write_options(args[1], &info);
  const auto t0 = std::chrono::steady_clock::now();
  GaugeFixingResult r;
  const std::vector<Complex<double>> fixed = fix_gauge(*lat, links, p, run.backend, &r);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (is_root())
    std::printf("%s: %s gauge (%s), theta %.3e after %d iterations (functional %.12f, %.2f s)\n", args[0].c_str(),
                to_string(p.type), to_string(r.method), r.theta, r.iterations, r.functional, seconds);
  require(r.converged, to_string(p.type), " gauge fixing of ", args[0], " did not converge: theta ", r.theta, " after ",
          r.iterations, " iterations, expected below ", p.tol, "; ", args[1],
          " not written (raise -latke_gauge_fix_max_iter, or loosen -latke_gauge_fix_tol)");
  write_gauge(*lat, fixed, args[1], w, run.backend);
  if (is_root()) std::printf("wrote %s (%s)\n", args[1].c_str(), describe_write(w).c_str());
  if (!json_path.empty()) {
    json j = record_head("fix", info.dims, lat->grid(), run.backend);
    j.update({{"input", args[0]},
              {"output", args[1]},
              {"gauge", to_string(p.type)},
              {"tol", p.tol},
              {"method", to_string(r.method)},
              {"omega", p.omega},
              {"alpha", p.alpha},
              {"iterations", r.iterations},
              {"theta", r.theta},
              {"functional", r.functional},
              {"seconds", seconds}});
    write_json(json_path, j);
  }
  return 0;
}

int cmd_measure(const std::vector<std::string>& args) {
  require(args.size() == 1, "measure needs one file: latke-gauge measure FILE [options]");
  const RunOptions run = setup_from_options();
  std::string json_path;
  read_options(PETSC_COMM_WORLD, "", "latke-gauge measure options", [&](OptionGroup& o) {
    json_path = o.string("-latke_json", "", "Write the observables as JSON (schema latke-gauge/1)");
  });
  if (!json_path.empty()) require_writable(PETSC_COMM_WORLD, json_path, "-latke_json");
  GaugeFileInfo info = read_gauge_info(PETSC_COMM_WORLD, args[0]);
  const GaugeReadParam rp = input_options(args[0], info);
  auto lat = std::make_shared<Lattice>(PETSC_COMM_WORLD, info.dims, run.grid);
  const std::vector<Complex<double>> links = read_gauge(*lat, args[0], &info, run.backend, rp);
  const GaugeObservables o = measure_gauge(*lat, links, run.backend);
  if (is_root()) {
    std::printf("%s: %s lattice, %s, read and verified on %s\n", args[0].c_str(), dims_text(info.dims).c_str(),
                info.format == GaugeFileFormat::ildg ? "ILDG" : "NERSC", lat->describe().c_str());
    print_observables(o);
  }
  if (!json_path.empty()) {
    json j = record_head("measure", info.dims, lat->grid(), run.backend);
    j.update({{"file", args[0]}, {"format", info.format == GaugeFileFormat::ildg ? "ILDG" : "NERSC"}});
    j["observables"] = observables_json(o);
    write_json(json_path, j);
  }
  return 0;
}

int cmd_info(const std::vector<std::string>& args) {
  require(args.size() == 1, "info needs one file: latke-gauge info FILE");
  const GaugeFileInfo info = read_gauge_info(PETSC_COMM_WORLD, args[0]);
  if (is_root()) std::printf("%s\n%s", args[0].c_str(), info.describe().c_str());
  return 0;
}

int cmd_analyze(const std::vector<std::string>& args) {
  require(args.size() == 1, "analyze needs one history file: latke-gauge analyze HISTORY [options]");
  std::ifstream f(args[0]);
  require(f.good(), "cannot open history file ", args[0]);
  std::string column, json_path;
  long therm = 0;
  double expect = NAN, expect_error = 0;
  bool expect_given = false;
  read_options(PETSC_COMM_WORLD, "", "latke-gauge analyze options", [&](OptionGroup& o) {
    column = o.string("-latke_column", "plaquette", "Column of the history to analyse");
    therm = o.integer("-latke_therm", 0, "Drop measurements before this sweep");
    expect = o.real("-latke_expect", 0.0, "Expected value to compare with");
    expect_error = o.real("-latke_expect_error", 0.0, "Error of the expected value");
    expect_given = o.given("-latke_expect");
    json_path = o.string("-latke_json", "", "Write the analysis as JSON (schema latke-gauge/1)");
  });
  if (!json_path.empty()) require_writable(PETSC_COMM_WORLD, json_path, "-latke_json");
  require(std::isfinite(expect), "-latke_expect ", expect, ": expected a finite number");
  require(std::isfinite(expect_error) && expect_error >= 0, "-latke_expect_error ", expect_error,
          ": expected a finite number of 0 or more");
  std::vector<std::string> names;
  std::vector<double> values;
  long first = -1, last = -1;
  std::string line;
  int col = -1, line_no = 0;
  while (std::getline(f, line)) {
    ++line_no;
    if (line.rfind("# sweep", 0) == 0) {
      std::istringstream h(line.substr(2));
      std::string name;
      names.clear();
      while (h >> name) names.push_back(name);
      col = -1;
      for (std::size_t i = 0; i < names.size(); ++i)
        if (names[i] == column) col = static_cast<int>(i);
      std::string known;
      for (const auto& n : names) known += " " + n;
      require(col > 0, args[0], ": no column '", column, "' (columns:", known, ")");
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    require(col > 0, args[0], ": line ", line_no, " comes before the '# sweep ...' line that names the columns");
    std::istringstream row(line);
    std::vector<double> v;
    double x;
    while (row >> x) v.push_back(x);
    require(v.size() == names.size(), args[0], ": line ", line_no, " has ", v.size(), " numbers, expected ",
            names.size());
    const long sweep = static_cast<long>(v[0]);
    if (sweep < therm) continue;
    if (first < 0) first = sweep;
    last = sweep;
    values.push_back(v[col]);
  }
  require(values.size() >= 2, args[0], ": ", values.size(), " measurements at sweeps >= ", therm, "; need at least 2");
  const SeriesStats s = analyze_series(values);
  if (is_root()) {
    std::printf("%s: %s, %zu measurements at sweeps %ld..%ld\n", args[0].c_str(), column.c_str(), s.n, first, last);
    std::printf("mean                 %.10f\n", s.mean);
    std::printf("naive error          %.3e   (measurements taken as independent)\n", s.naive_error);
    std::printf("tau_int              %.3f +- %.3f measurements (window %d)\n", s.tau_int, s.tau_int_error, s.window);
    std::printf("Gamma-method error   %.3e\n", s.error);
    std::printf("binned errors       ");
    for (const auto& b : s.binned) std::printf(" %d:%.2e", b.first, b.second);
    std::printf("\nresult               %.10f +- %.10f\n", s.mean, s.conservative_error);
    if (expect_given) {
      const double e = expect_error;
      const double sigma = std::sqrt(s.conservative_error * s.conservative_error + e * e);
      std::printf("expected             %.10f +- %.10f: difference %+.3e = %+.2f sigma\n", expect, e, s.mean - expect,
                  (s.mean - expect) / sigma);
    }
  }
  if (!json_path.empty()) {
    json j = version_head("analyze");
    j.update({{"history", args[0]},
              {"column", column},
              {"therm", therm},
              {"measurements", s.n},
              {"first_sweep", first},
              {"last_sweep", last},
              {"mean", s.mean},
              {"naive_error", s.naive_error},
              {"tau_int", s.tau_int},
              {"tau_int_error", s.tau_int_error},
              {"window", s.window},
              {"error", s.error},
              {"error_used", s.conservative_error}});
    json binned = json::array();
    for (const auto& b : s.binned) binned.push_back({{"bin", b.first}, {"error", b.second}});
    j["binned_errors"] = binned;
    if (expect_given) {
      const double sigma = std::sqrt(s.conservative_error * s.conservative_error + expect_error * expect_error);
      j["expected"] = {{"value", expect}, {"error", expect_error}, {"sigmas", (s.mean - expect) / sigma}};
    }
    write_json(json_path, j);
  }
  return 0;
}

}  // namespace
}  // namespace latke

int main(int argc, char** argv) {
  PetscCall(PetscInitialize(&argc, &argv, nullptr, help));
  int status = 0;
  try {
    const std::string command = argc > 1 && argv[1][0] != '-' ? argv[1] : "";
    std::vector<std::string> args;
    for (int i = 2; i < argc && argv[i][0] != '-'; ++i) args.push_back(argv[i]);
    if (command == "generate") {
      latke::require(args.empty(), "generate takes options only, not '", args.empty() ? "" : args[0],
                     "' (the output file is -latke_output FILE)");
      status = latke::cmd_generate();
    } else if (command == "convert") {
      status = latke::cmd_convert(args);
    } else if (command == "fix") {
      status = latke::cmd_fix(args);
    } else if (command == "measure") {
      status = latke::cmd_measure(args);
    } else if (command == "info") {
      status = latke::cmd_info(args);
    } else if (command == "analyze") {
      status = latke::cmd_analyze(args);
    } else {
      latke::fail("unknown command '", command, "': expected generate, convert, fix, measure, info or analyze");
    }
  } catch (const std::exception& e) {
    if (latke::is_root()) std::fprintf(stderr, "latke-gauge: error: %s\n", e.what());
    status = 1;
  }
  try {
    latke::warn_unused_options("latke-gauge");
  } catch (const std::exception&) {  // a report, never a reason to fail
  }
  PetscCall(PetscFinalize());
  return status;
}
