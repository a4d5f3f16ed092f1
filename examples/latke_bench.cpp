// latke-bench: performance of Latke's operators and solvers.
//
//   latke-bench dslash [options]
//   latke-bench multimass [options]
//   latke-bench mg [options]
//   latke-bench schwarz [options]
//   latke-bench machine [options]      (the performance model's machine file)
//   latke-bench smear [options]        (link and quark smearing for smeared sources and sinks)
//   latke-bench contract [options]     (meson and nucleon contractions, momentum projection)
//   latke-bench gaugefix [options]     (Coulomb and Landau gauge fixing)
//
// For each precision and reconstruct asked for, times the Wilson-clover forms on a random
// SU(3) field and prints time per application, GFLOPS, effective GB/s, the device's copy
// bandwidth measured in the same run, and the ratio of the two. Forms:
//   dslash  hopping term onto one parity fused with that parity's A^-1 (QUDA's "Dslash")
//   matpc   the even-odd operator Mhat (QUDA's "MatPC"), -latke_schur symmetric|asymmetric
//   full    the full operator M on both parities
// Flops per output site are QUDA's (1872 dslash, 3792 matpc; full counts 1872 per site), so
// figures compare with published ones. Bytes per output site count every word a kernel
// reads or writes once: 8 links, 8 neighbour spinors, the clover block pair, the output, and
// the xpay input where there is one (half precision adds its norms).
//
// With -latke_op staggered|asqtad the same for the staggered operators (links fattened once,
// then one operator per precision and reconstruct): dslash is D onto one parity, matpc the
// normal operator 4m^2 - D_eo D_oe, full M; flops are QUDA's (D: 1146 asqtad, 570 naive;
// matpc 2 D + 12, full D + 12 per site), bytes 8 fat and 8 long links (naive: 8 links), 16
// (naive: 8) neighbour vectors, the output and the xpay input.
//
// multimass: time to solution of the staggered even-odd normal systems
// (4 m_i^2 - D_pq D_qp) x_i = b at several masses (default 8, geometric from 0.005 to 0.1),
// with both strategies of solvers.h on the same source (a seeded random vector on the even
// sites): multi-shift CG then refinement, and sequential mixed-precision CG from the heaviest
// mass with extrapolated guesses. On the configuration -latke_gauge names (default: a
// thermalized quenched one, cached: the options of latke-solve), asqtad by default with u0
// the mean plaquette^(1/4). Per mass: iterations, refinement iterations, the residual of the
// starting vector and the true residual; per strategy: time, iterations, double and sloppy
// operator applications, GFLOPS and effective GB/s of the operator applications (QUDA's
// flops, 2 D + 12 per site; the matpc byte model above; vector operations not counted) and
// their ratio to the copy bandwidth measured in the same run; then which strategy was faster
// and by how much. Each strategy runs once untimed first (kernel tuning, sloppy links).
#include <petscsys.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "latke/latke.h"
#include "operators/staggered/staggered.h"
#include "operators/staggered/staggered_linear.h"
#include "operators/wilson_clover/wilson_clover.h"
#include "operators/wilson_clover/wilson_clover_linear.h"
#include "petsc/c_api.h"
#include "petsc/gauge_handle.h"
#include "petsc/pc_mg.h"
#include "preconditioners/mg/agglomerate.h"
#include "preconditioners/mg/galerkin.h"
#include "preconditioners/schwarz/schwarz.h"
#include "solvers/solvers.h"
#include "spectroscopy/baryons.h"
#include "spectroscopy/mesons.h"
#include "spectroscopy/quark_smearing.h"
#include "src/core/copy_bandwidth.h"
#include "src/core/error.h"
#include "src/core/halo.h"
#include "src/core/machine_bench.h"
#include "src/core/options.h"
#include "src/core/output_files.h"
#include "src/core/tune.h"
#include "src/core/work_counters.h"
#include "src/fields/blas.h"
#include "src/fields/extended_links.h"
#include "src/fields/gauge_fixing.h"
#include "src/fields/gauge_observables.h"
#include "src/fields/lattice_fft.h"
#include "src/fields/link_smearing.h"
#include "src/fields/random.h"

static const char help[] =
    "latke-bench dslash: Wilson-clover and staggered operator performance;\n"
    "latke-bench multimass: staggered solves at many masses, multi-shift against sequential;\n"
    "latke-bench schwarz: the Schwarz preconditioner's blocks on chip and streamed against one MatPC;\n"
    "latke-bench machine: micro-benchmarks of the machine for latke-scale model;\n"
    "latke-bench smear: APE/stout link smearing and Wuppertal/Gaussian quark smearing;\n"
    "latke-bench contract: meson and nucleon contractions of a propagator, momentum projection;\n"
    "latke-bench gaugefix: Coulomb and Landau gauge fixing sweeps (-help lists every option).\n";

namespace latke {
namespace {

struct Result {
  std::string form, precision, reconstruct;
  double us, gflops, gbs;
  int iterations;
  HaloProfile halo{};  ///< per exchange, mean over ranks (exchanges = 0: none profiled)
};

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// The split of an exchanging application's time (HaloProfile), per exchange and averaged
/// over ranks, from n profiled calls of f (a separate pass: profiling synchronizes).
HaloProfile profile_halo(const Lattice& lat, const std::function<void()>& f, int n) {
  synchronize(Backend::cuda);
  set_halo_profiling(true);
  for (int i = 0; i < n; ++i) f();
  synchronize(Backend::cuda);
  HaloProfile h = halo_profile();
  set_halo_profiling(false);
  double v[6] = {h.interior_us, h.packed_us, h.delivered_us, h.exterior_us, h.done_us, h.host_finish_us}, sum[6];
  const double per = h.exchanges > 0 ? 1.0 / h.exchanges : 0.0;
  for (double& x : v) x *= per / lat.size();
  MPI_Allreduce(v, sum, 6, MPI_DOUBLE, MPI_SUM, lat.comm());
  long ex = h.exchanges, ex_min = 0;
  MPI_Allreduce(&ex, &ex_min, 1, MPI_LONG, MPI_MIN, lat.comm());
  HaloProfile r;
  r.exchanges = ex_min;
  r.interior_us = sum[0], r.packed_us = sum[1], r.delivered_us = sum[2], r.exterior_us = sum[3], r.done_us = sum[4];
  r.host_finish_us = sum[5];
  return r;
}

std::size_t spinor_bytes(Precision p) { return 24 * real_bytes(p) + (p == Precision::half ? 4 : 0); }
std::size_t link_bytes(Precision p, Reconstruct r) { return static_cast<int>(r) * real_bytes(p); }
std::size_t clover_bytes(Precision p) { return 72 * real_bytes(p) + (p == Precision::half ? 8 : 0); }
std::size_t vector_bytes(Precision p) { return 6 * real_bytes(p) + (p == Precision::half ? 4 : 0); }  // staggered
/// Bytes per output site of the Wilson-clover hopping term with its clover epilogue: 8 links,
/// 8 neighbour spinors, the clover block pair and the output.
double wilson_dslash_site_bytes(Precision p, Reconstruct r) {
  return 8.0 * (link_bytes(p, r) + spinor_bytes(p)) + clover_bytes(p) + spinor_bytes(p);
}
/// The even-odd operator per output site: two hopping terms and the xpay input.
double wilson_matpc_site_bytes(Precision p, Reconstruct r) {
  return 2 * wilson_dslash_site_bytes(p, r) + spinor_bytes(p);
}
/// Flops per site of one Schwarz block MR step: QUDA's MatPC count and the MR vector work.
constexpr double schwarz_step_site_flops = 3792.0 + 8 * 24;

/// A Wilson-clover even-odd system (symmetric Schur complement, links as 12 reals) in
/// precision p on lat, and its right-hand side: the even sites of the lexicographic src.
struct EvenOddWilson {
  std::shared_ptr<WilsonCloverOperator> op;
  std::shared_ptr<WilsonCloverLinear> A;
  ColorSpinorField b;
};
EvenOddWilson even_odd_wilson(const std::shared_ptr<const Lattice>& lat, const std::vector<Complex<double>>& links,
                              const std::vector<Complex<double>>& src, Precision p, double mass, double csw,
                              Backend be) {
  WilsonCloverParam wp;
  wp.mass = mass;
  wp.csw = csw;
  wp.precision = p;
  wp.reconstruct = Reconstruct::r12;
  wp.backend = be;
  auto op = std::make_shared<WilsonCloverOperator>(lat, links, wp);
  auto A = std::make_shared<WilsonCloverLinear>(op, true, SchurType::symmetric, 0);
  ColorSpinorField b = A->make_field();
  ColorSpinorField whole(lat, SpinorParam{4, 3, p, Subset::full, be});
  whole.from_lexicographic(src);
  b.copy_from(whole.parity(0));
  return EvenOddWilson{std::move(op), std::move(A), std::move(b)};
}
/// w's even-odd system domain-local on blocks of `block` (the Schwarz preconditioner's).
std::shared_ptr<WilsonCloverLinear> domain_local(const EvenOddWilson& w, const std::vector<Complex<double>>& links,
                                                 const Coords& block) {
  WilsonCloverParam lp = w.op->param();
  lp.block = block;
  return std::make_shared<WilsonCloverLinear>(std::make_shared<WilsonCloverOperator>(*w.op, links, lp), true,
                                              SchurType::symmetric, 0);
}

void write_json(const std::string& path, const std::string& op, const Lattice& lat, Backend b, double copy_gbs,
                const std::vector<Result>& rs) {
  using json = nlohmann::ordered_json;
  int v[3];
  PetscInt p[4];
  LatkeGetVersion(&v[0], &v[1], &v[2]);
  PetscGetVersionNumber(&p[0], &p[1], &p[2], &p[3]);
  json f = {{"benchmark", "dslash"},
            {"latke_version", std::to_string(v[0]) + "." + std::to_string(v[1]) + "." + std::to_string(v[2])},
            {"petsc_version", std::to_string(p[0]) + "." + std::to_string(p[1]) + "." + std::to_string(p[2])},
            {"operator", op},
            {"lattice", lat.global()},
            {"grid", lat.grid()},
            {"backend", to_string(b)},
            {"device", b == Backend::cuda ? device_info().name : "cpu"},
            {"copy_bandwidth_gbs", copy_gbs},
            {"results", json::array()}};
  for (const Result& r : rs) {
    json e = {{"form", r.form},
              {"precision", r.precision},
              {"reconstruct", r.reconstruct},
              {"time_us", r.us},
              {"gflops", r.gflops},
              {"gbs", r.gbs},
              {"ratio_to_copy", r.gbs / copy_gbs},
              {"iterations", r.iterations}};
    if (r.halo.exchanges > 0)
      e["halo_us"] = {{"interior", r.halo.interior_us},   {"packed", r.halo.packed_us},
                      {"delivered", r.halo.delivered_us}, {"exterior", r.halo.exterior_us},
                      {"exchange", r.halo.done_us},       {"host_finish", r.halo.host_finish_us}};
    f["results"].push_back(e);
  }
  f["halo_policies"] = json::object();
  for (const auto& [name, policy] : chosen_policies()) f["halo_policies"][name] = policy;
  write_text_atomically(path, f.dump(2) + "\n", "-latke_json");
}

int bench_dslash() {
  const RunOptions run = setup_from_options();
  Coords dims{};
  std::string schur_name, json;
  std::vector<std::string> precision_list, recon_list, form_list;
  bool dagger = false, tune_report_wanted = false, mass_given = false, kappa_given = false;
  long iters_opt = 0, set_count = 0;
  double mass = 0.1, kappa = 0, csw = 1.0, u0 = 1.0;
  std::string op_name;
  read_options(PETSC_COMM_WORLD, "", "latke-bench options", [&](OptionGroup& o) {
    op_name = o.string("-latke_op", "wilson", "Operator: wilson (clover), staggered (naive) or asqtad");
    dims = o.coords("-latke_lattice", Coords{16, 16, 16, 16}, "Global lattice X,Y,Z,T");
    precision_list = o.choice_list("-latke_precision", {"single"}, {"double", "single", "half"}, "Precisions to time");
    recon_list = o.choice_list("-latke_reconstruct", {"12"}, {"18", "12"},
                               "Link reconstructions to time: list of 18, 12 (asqtad: of the long links)");
    form_list = o.choice_list("-latke_form", {"dslash", "matpc", "full"}, {"dslash", "matpc", "full"}, "Forms to time");
    schur_name = o.string("-latke_schur", "symmetric", "Even-odd form of matpc (wilson): symmetric or asymmetric");
    dagger = o.flag("-latke_dagger", false, "Time the daggered forms");
    mass = o.real("-latke_mass", 0.1, "Bare quark mass");
    kappa = o.real("-latke_kappa", 0.0, "Hopping parameter (wilson), instead of -latke_mass");
    csw = o.real("-latke_csw", 1.0, "Clover coefficient (wilson)");
    u0 = o.real("-latke_u0", 1.0, "Tadpole factor of asqtad fattening");
    iters_opt = o.integer("-latke_iterations", 0, "Applications per timing (0: about 1 s of work)");
    json = o.string("-latke_json", "", "Also write the results as JSON to this file");
    tune_report_wanted = o.flag("-latke_tune_report", false, "Print the autotuned launch sizes");
    set_count = o.integer("-latke_set", 0,
                          "Wilson-clover: also time the even-odd operator over a set of this many fields "
                          "(per field too) and BiCGstab over the set (per iteration and field)");
    mass_given = o.given("-latke_mass");
    kappa_given = o.given("-latke_kappa");
  });
  if (!json.empty()) require_writable(PETSC_COMM_WORLD, json, "-latke_json");  // before the work
  auto lat = std::make_shared<Lattice>(PETSC_COMM_WORLD, dims, run.grid);
  std::vector<Precision> precisions;
  for (const auto& s : precision_list) precisions.push_back(parse_precision(s));
  std::vector<Reconstruct> recons;
  for (const auto& s : recon_list) recons.push_back(parse_reconstruct(s));
  const std::vector<std::string>& forms = form_list;
  for (const auto& f : forms)
    require(f == "dslash" || f == "matpc" || f == "full", "-latke_form '", f, "': expected dslash, matpc or full");
  const SchurType schur = parse_schur_type(schur_name);
  require(iters_opt >= 0, "-latke_iterations ", iters_opt, ": expected a positive count");
  require(set_count >= 0 && set_count <= blas::set_max, "-latke_set ", set_count, ": expected 0 to ", blas::set_max);
  require(!(mass_given && kappa_given), "-latke_mass ", mass, " and -latke_kappa ", kappa,
          " are both given: give one of them (kappa = 1/(2m + 8))");
  require(op_name == "wilson" || op_name == "staggered" || op_name == "asqtad", "-latke_op '", op_name,
          "': expected wilson, staggered or asqtad");
  const bool staggered = op_name != "wilson";
  WilsonCloverParam wp;
  wp.mass = kappa_given ? mass_from_kappa(kappa) : mass;
  wp.csw = csw;
  wp.backend = run.backend;
  StaggeredParam sp;
  sp.type = op_name == "asqtad" ? StaggeredType::asqtad : StaggeredType::naive;
  sp.mass = mass;
  sp.u0 = u0;
  sp.backend = run.backend;
  if (staggered) check_staggered_param(*lat, sp);  // before fattening

  const bool root = lat->rank() == 0;
  const DeviceInfo dev = device_info();
  const double copy_gbs = measure_copy_bandwidth(run.backend, run.backend == Backend::cuda ? (1ul << 30) : (1ul << 27));
  if (root) {
    const std::string what = !staggered                         ? "Wilson-clover"
                             : sp.type == StaggeredType::asqtad ? "asqtad staggered"
                                                                : "naive staggered";
    char coupling[64];
    if (staggered)
      std::snprintf(coupling, sizeof coupling, "u0 %g", sp.u0);
    else
      std::snprintf(coupling, sizeof coupling, "c_sw %g", wp.csw);
    std::printf("latke-bench dslash: %s, lattice %s, backend %s%s%s, mass %g, %s, %s\n", what.c_str(),
                lat->describe().c_str(), to_string(run.backend), run.backend == Backend::cuda ? " (" : "",
                run.backend == Backend::cuda ? (dev.name + ")").c_str() : "", staggered ? sp.mass : wp.mass, coupling,
                dagger ? "dagger" : "no dagger");
    if (run.backend == Backend::cuda)
      std::printf("device: %d SMs, %.0f MB L2, %.0f GB memory\n", dev.sm_count, dev.l2_bytes / 1e6,
                  dev.global_bytes / 1e9);
    std::printf("copy bandwidth (read + write) measured in this run: %.1f GB/s\n", copy_gbs);
  }
  const std::vector<Complex<double>> links = random_gauge(*lat, 20241022);
  std::vector<Result> results;
  std::size_t policies_printed = 0;  // halo policies chosen by the autotuner, printed as they come
  // Times f (n applications, or about a second of work agreed over ranks), checks that it
  // produced a finite, nonzero result, and reports it.
  auto measure = [&](const std::string& form, Precision p, Reconstruct r, const std::function<void()>& f, double flops,
                     double bytes, const ColorSpinorField& out, const ColorSpinorField& in) {
    int n = static_cast<int>(iters_opt);
    if (n == 0) {
      const double ms = time_per_call(run.backend, 3, f);
      double worst = 0;
      MPI_Allreduce(&ms, &worst, 1, MPI_DOUBLE, MPI_MAX, lat->comm());
      n = std::max(3, std::min(5000, static_cast<int>(1000.0 / std::max(worst, 1e-3))));
    }
    const double ms_local = time_per_call(run.backend, n, f);
    double ms = 0;
    MPI_Allreduce(&ms_local, &ms, 1, MPI_DOUBLE, MPI_MAX, lat->comm());
    Result res{form, to_string(p), to_string(r), ms * 1e3, flops / (ms * 1e-3) / 1e9, bytes / (ms * 1e-3) / 1e9, n};
    const double check = norm2(out) / norm2(in);
    require(std::isfinite(check) && check > 0, "benchmark ", form, " produced ", check, " for |out|^2/|in|^2");
    if (run.backend == Backend::cuda && lat->size() > 1) res.halo = profile_halo(*lat, f, std::min(n, 200));
    results.push_back(res);
    if (root) {
      std::printf("%-7s %-7s %-5s %10.1f %10.1f %10.1f %7.2fx %7d\n", res.form.c_str(), res.precision.c_str(),
                  res.reconstruct.c_str(), res.us, res.gflops, res.gbs, res.gbs / copy_gbs, n);
      if (res.halo.exchanges > 0)
        std::printf(
            "        halo, per exchange (us, mean over ranks): interior %.1f, faces packed %.1f, ghosts in "
            "%.1f, exterior %.1f, exchange %.1f; host in finish %.1f\n",
            res.halo.interior_us, res.halo.packed_us, res.halo.delivered_us, res.halo.exterior_us, res.halo.done_us,
            res.halo.host_finish_us);
      for (; policies_printed < chosen_policies().size(); ++policies_printed)
        std::printf("        policy %s: %s\n", chosen_policies()[policies_printed].first.c_str(),
                    chosen_policies()[policies_printed].second.c_str());
    }
  };
  auto print_table_header = [&](const std::string& halo) {
    if (!root) return;
    std::printf("halo exchange: %s\n", halo.c_str());
    std::printf("%-7s %-7s %-5s %10s %10s %10s %8s %7s\n", "form", "prec", "recon", "time/us", "GFLOPS", "GB/s",
                "vs copy", "iters");
  };
  const double vcb = static_cast<double>(lat->volume_cb()) * lat->size();
  if (staggered) {
    // Links fattened once; one operator per precision and reconstruct from them.
    const StaggeredLinks sl = sp.type == StaggeredType::asqtad
                                  ? asqtad_links(*lat, links, AsqtadCoefficients::asqtad(sp.u0), run.backend)
                                  : StaggeredLinks{links, {}};
    const std::vector<Complex<double>> src = random_spinor(*lat, 7, 1, 3);
    for (Precision p : precisions)
      for (Reconstruct r : recons) {
        sp.precision = p;
        sp.reconstruct = r;
        StaggeredOperator op(lat, sl, sp);
        if (p == precisions.front() && r == recons.front()) print_table_header(op.halo_description());
        ColorSpinorField in(lat, op.field_param(Subset::full));
        in.from_lexicographic(src);
        ColorSpinorField out = in.like(p);
        ColorSpinorField in_e = in.parity(0), in_o = in.parity(1), out_e = out.parity(0);
        const bool improved = op.improved();
        const double d = op.dslash_flops_per_site();
        const double links_bytes =
            improved ? 8.0 * (link_bytes(p, Reconstruct::r18) + link_bytes(p, r)) : 8.0 * link_bytes(p, r);
        const double kernel_bytes = links_bytes + (improved ? 16 : 8) * vector_bytes(p) + vector_bytes(p);
        for (const auto& form : forms) {
          if (form == "dslash")
            measure(
                form, p, r, [&] { op.dslash(out_e, in_o, dagger ? -1.0 : 1.0); }, d * vcb, kernel_bytes * vcb, out, in);
          else if (form == "matpc")
            measure(
                form, p, r, [&] { op.apply_normal(out_e, in_e); }, (2 * d + 12) * vcb,
                (2 * kernel_bytes + vector_bytes(p)) * vcb, out, in);
          else
            measure(
                form, p, r, [&] { op.apply(out, in, dagger); }, 2 * (d + 12) * vcb,
                2 * (kernel_bytes + vector_bytes(p)) * vcb, out, in);
        }
      }
  } else {
    const std::vector<Complex<double>> src = random_spinor(*lat, 7);
    for (Precision p : precisions)
      for (Reconstruct r : recons) {
        wp.precision = p;
        wp.reconstruct = r;
        WilsonCloverOperator op(lat, links, wp);
        if (p == precisions.front() && r == recons.front()) print_table_header(op.halo_description());
        ColorSpinorField in(lat, SpinorParam{4, 3, p, Subset::full, run.backend});
        in.from_lexicographic(src);
        ColorSpinorField out = in.like(p);
        ColorSpinorField in_e = in.parity(0), in_o = in.parity(1), out_e = out.parity(0);
        const double kernel_bytes = wilson_dslash_site_bytes(p, r);
        for (const auto& form : forms) {
          if (form == "dslash")
            measure(
                form, p, r, [&] { op.dslash(out_e, in_o, Epilogue::clover_inv, 1.0, nullptr, dagger); }, 1872 * vcb,
                kernel_bytes * vcb, out, in);
          else if (form == "matpc")
            measure(
                form, p, r, [&] { op.apply_schur(out_e, in_e, schur, dagger); }, 3792 * vcb,
                wilson_matpc_site_bytes(p, r) * vcb, out, in);
          else
            measure(
                form, p, r, [&] { op.apply(out, in, dagger); }, 2 * 1872 * vcb,
                2 * (kernel_bytes + spinor_bytes(p)) * vcb, out, in);
        }
        if (set_count > 0 && op.applies_sets()) {
          // The even-odd operator over a set, reported per field: links and clover read once per
          // set, every field's neighbours, output and xpay input once per field.
          const SpinorParam sp{4, 3, p, Subset::even, run.backend};
          std::vector<ColorSpinorField> set_in = ColorSpinorField::make_set(lat, sp, static_cast<int>(set_count));
          std::vector<ColorSpinorField> set_out = ColorSpinorField::make_set(lat, sp, static_cast<int>(set_count));
          for (auto& f : set_in) f.copy_from(in_e);
          const double n = static_cast<double>(set_count);
          const double per_field =
              (2 * (8.0 * link_bytes(p, r) + clover_bytes(p)) / n + 2 * 9.0 * spinor_bytes(p) + spinor_bytes(p)) * vcb;
          // Times o's matpc over the set as row `form`, made per field; returns microseconds per field.
          auto time_set = [&](const char* form, WilsonCloverOperator& o, const char* how) {
            const std::size_t at = results.size();
            measure(
                form, p, r, [&] { o.apply_schur_set(set_out, set_in, schur); }, 3792 * vcb * n, per_field * n,
                set_out[0], set_in[0]);
            results[at].us /= n;
            if (root) std::printf("  (matpc over a set of %ld%s: %.1f us per field)\n", set_count, how, results[at].us);
            return results[at].us;
          };
          const double set_us = time_set("set", op, "");
          if (p == Precision::half) {  // the same with the hops and A^-1 in FP16 pair arithmetic
            WilsonCloverParam hp = wp;
            hp.half_pairs = true;
            WilsonCloverOperator pairs(lat, links, hp);
            time_set("set-h2", pairs, " in FP16 pairs");
          }
          // BiCGstab over the set as the setup's fine null vectors run it (solutions in single
          // where the set is in half, no reliable updates): the slope between 10 and 30
          // iterations, per iteration and field, against its two operator applications.
          SpinorParam xp = sp;
          xp.precision = p == Precision::half ? Precision::single : p;
          std::vector<ColorSpinorField> xs = ColorSpinorField::make_set(lat, xp, static_cast<int>(set_count));
          const SetOperator A = [&](std::vector<ColorSpinorField>& o, const std::vector<ColorSpinorField>& i) {
            op.apply_schur_set(o, i, schur);
          };
          auto run_set = [&](int iterations, int& done) {  // milliseconds; done: iterations of system 0
            SolverParam q;
            q.tol = 1e-30;
            q.max_iter = iterations;
            for (auto& f : xs) f.zero();
            synchronize(run.backend);
            MPI_Barrier(lat->comm());
            const double t0 = now_ms();
            done = bicgstab_set(A, xs, set_in, q)[0].iterations;
            synchronize(run.backend);
            MPI_Barrier(lat->comm());
            return now_ms() - t0;
          };
          int it2 = 0, it10 = 0, it30 = 0;
          (void)run_set(2, it2);  // tunes the set's kernels
          const double ms10 = run_set(10, it10), ms30 = run_set(30, it30);
          require(it30 > it10, "benchmark BiCGstab over a set: ", it10, " and ", it30,
                  " iterations for at most 10 and 30 (it stopped early)");
          const double per = (ms30 - ms10) / (it30 - it10) / n * 1e3;
          if (root)
            std::printf(
                "  (BiCGstab over the set: %.1f us per iteration per field; two matpc %.1f us, the rest "
                "%.1f us)\n",
                per, 2 * set_us, per - 2 * set_us);
          // The set's vector kernels as an MR smoother on the set runs them, per field: time and
          // effective bandwidth against the copy bandwidth (bytes: each field read and written).
          std::vector<ColorSpinorField> as = ColorSpinorField::make_set(lat, sp, static_cast<int>(set_count)),
                                        rs = ColorSpinorField::make_set(lat, sp, static_cast<int>(set_count)),
                                        ys = ColorSpinorField::make_set(lat, sp, static_cast<int>(set_count));
          for (int k = 0; k < static_cast<int>(set_count); ++k) {
            as[k].copy_from(set_out[k]);
            rs[k].copy_from(set_in[k]);
            ys[k].copy_from(set_in[k]);
          }
          std::vector<blas::DotNorms> d(set_count);
          std::vector<blas::Cplx> a(set_count, blas::Cplx(1e-3, 1e-4)), one(set_count, blas::Cplx(1));
          const double fb = spinor_bytes(p) * vcb, xb = spinor_bytes(xp.precision) * vcb;
          auto vector_kernel = [&](const char* what, double bytes, const std::function<void()>& f) {
            double ms = time_per_call(run.backend, 3, f);
            ms = time_per_call(run.backend, std::max(3, static_cast<int>(200 / std::max(ms, 1e-3))), f);
            const double us = ms * 1e3 / n, gbs = bytes / (us * 1e-6) * 1e-9;
            if (root)
              std::printf("  (%-34s %8.1f us per field, %7.1f GB/s, %5.2fx copy)\n", what, us, gbs, gbs / copy_gbs);
          };
          vector_kernel("cdot_norms_set (2 reads)", 2 * fb, [&] { blas::cdot_norms_set(as, rs, d.data()); });
          vector_kernel("mr_update_set (3 reads, 2 writes)", 5 * fb,
                        [&] { blas::mr_update_set(a.data(), rs, as, ys); });
          vector_kernel("caxpbypcz_set z += a x", 3 * fb,
                        [&] { blas::caxpbypcz_set(a.data(), rs, nullptr, nullptr, one.data(), as); });
          vector_kernel("copy to single, field by field", fb + xb, [&] {
            for (int k = 0; k < static_cast<int>(set_count); ++k) xs[k].copy_from(rs[k]);
          });
          // The smoother's ends fused with the passes around them (MrSetEnds, caxpby_set_to).
          std::vector<ColorSpinorField> ws = ColorSpinorField::make_set(lat, xp, static_cast<int>(set_count));
          for (int k = 0; k < static_cast<int>(set_count); ++k) ws[k].copy_from(xs[k]);
          vector_kernel("mr_update_set first (2 r, 2 w)", 4 * fb, [&] {
            blas::mr_update_set(a.data(), rs, as, ys, {true, nullptr});
          });
          vector_kernel("mr_update_set last, into solution", 2 * fb + 2 * xb, [&] {
            blas::mr_update_set(a.data(), rs, as, ys, {false, &xs});
          });
          vector_kernel("caxpby_set_to from solution", 2 * xb + fb,
                        [&] { blas::caxpby_set_to(one.data(), xs, a.data(), ws, rs); });
        }
      }
  }
  if (root && tune_report_wanted) std::printf("autotuned launches:\n%s", tune_report().c_str());
  if (root && !json.empty()) write_json(json, op_name, *lat, run.backend, copy_gbs, results);
  return 0;
}

/// One strategy's timed solve.
struct StrategyRun {
  MultiShiftStrategy strategy;
  MultiShiftStats st;
  double gflops = 0, gbs = 0;
};

void write_multimass_json(const std::string& path, const std::string& op, const Lattice& lat, Backend b,
                          double copy_gbs, double u0, Precision sloppy, double tol, int extrapolation,
                          const std::vector<double>& masses, const std::vector<StrategyRun>& runs) {
  using json = nlohmann::ordered_json;
  json f = {{"benchmark", "multimass"},       {"operator", op},
            {"lattice", lat.global()},        {"grid", lat.grid()},
            {"backend", to_string(b)},        {"device", b == Backend::cuda ? device_info().name : "cpu"},
            {"copy_bandwidth_gbs", copy_gbs}, {"u0", u0},
            {"sloppy", to_string(sloppy)},    {"tol", tol},
            {"extrapolation", extrapolation}, {"masses", masses},
            {"strategies", json::array()}};
  for (const StrategyRun& r : runs) {
    json per_mass = json::array();
    for (std::size_t i = 0; i < r.st.shifts.size(); ++i) {
      const ShiftStats& s = r.st.shifts[i];
      per_mass.push_back({{"mass", masses[i]},
                          {"iterations", s.iterations},
                          {"refine_iterations", s.refine_iterations},
                          {"initial_residual", s.initial_residual},
                          {"true_residual", s.true_residual},
                          {"seconds", s.seconds},
                          {"fallback_at", s.fallback_at}});
    }
    f["strategies"].push_back({{"strategy", to_string(r.strategy)},
                               {"seconds", r.st.seconds},
                               {"iterations", r.st.iterations},
                               {"double_applications", r.st.outer_applications},
                               {"sloppy_applications", r.st.sloppy_applications},
                               {"gflops", r.gflops},
                               {"gbs", r.gbs},
                               {"ratio_to_copy", r.gbs / copy_gbs},
                               {"converged", r.st.converged},
                               {"masses", per_mass}});
  }
  if (runs.size() == 2) {
    const bool first = runs[0].st.seconds <= runs[1].st.seconds;
    const StrategyRun &fast = first ? runs[0] : runs[1], &slow = first ? runs[1] : runs[0];
    f["faster"] = to_string(fast.strategy);
    f["speedup"] = slow.st.seconds / fast.st.seconds;
  }
  write_text_atomically(path, f.dump(2) + "\n", "-latke_json");
}

int bench_multimass() {
  require(LatkeInitialize() == 0, "LatkeInitialize failed");
  std::string op_name, sloppy_name, recon_name, json;
  std::vector<std::string> strategy_list;
  std::vector<double> masses;
  double u0 = 0, tol = 1e-10, delta = 0.1;
  long extrapolation = 4, max_it = 50000, repeat = 1, seed = 7;
  read_options(PETSC_COMM_WORLD, "", "latke-bench multimass options", [&](OptionGroup& o) {
    op_name = o.string("-latke_op", "asqtad", "Operator: asqtad or staggered (naive)");
    masses = o.reals("-latke_masses", {},
                     "Masses m1,m2,... from the lightest to the heaviest (default: 8, geometric from 0.005 to 0.1)");
    strategy_list = o.choice_list("-latke_multimass", {"multishift", "sequential"}, {"multishift", "sequential"},
                                  "Strategies to time");
    sloppy_name = o.string("-latke_solver_sloppy", "single", "Precision of the iterations: double, single or half");
    recon_name = o.string("-latke_reconstruct", "18", "Link storage, 18 or 12 reals (asqtad: the long links)");
    u0 = o.real("-latke_u0", 0.0, "Tadpole factor of asqtad fattening (0: the configuration's mean plaquette^(1/4))");
    tol = o.real("-latke_solver_tol", 1e-10, "Relative tolerance on each mass's true residual");
    delta = o.real("-latke_solver_delta", 0.1, "Reliable update when the residual fell by this factor");
    max_it = o.integer("-latke_solver_max_it", 50000, "Iteration limit of each solve");
    extrapolation = o.integer("-latke_multimass_extrapolation", 4,
                              "Sequential: earlier solutions each extrapolated guess uses (0: zero guesses)");
    repeat = o.integer("-latke_repeat", 1, "Timed solves per strategy (the fastest is reported)");
    seed = o.integer("-latke_source_seed", 7, "Seed of the random source");
    json = o.string("-latke_json", "", "Also write the results as JSON to this file");
  });
  if (!json.empty()) require_writable(PETSC_COMM_WORLD, json, "-latke_json");  // before the work
  require(op_name == "asqtad" || op_name == "staggered", "-latke_op '", op_name,
          "': expected asqtad or staggered (multi-mass solves are for the staggered operators)");
  if (masses.empty())
    for (int i = 0; i < 8; ++i) masses.push_back(0.005 * std::pow(20.0, i / 7.0));
  const double operator_mass = 0.1;  // every mass of the list is a shift of the operator's
  const std::vector<double> shifts = staggered_mass_shifts(masses, operator_mass);
  std::vector<MultiShiftStrategy> strategies;
  for (const auto& s : strategy_list) strategies.push_back(parse_multishift_strategy(s));
  const Precision sloppy = parse_precision(sloppy_name);
  const Reconstruct recon = parse_reconstruct(recon_name);
  require(repeat >= 1, "-latke_repeat ", repeat, ": expected at least 1");

  LatkeGauge gauge = nullptr;
  require(LatkeGaugeCreateFromOptions(PETSC_COMM_WORLD, nullptr, &gauge) == 0,
          "the gauge field could not be made (PETSc's message above)");
  const LatkeGaugeData& g = *gauge->data;
  const std::shared_ptr<const Lattice> lat = g.lattice;
  const Backend backend = petsc::run_backend();
  StaggeredParam sp;
  sp.type = op_name == "asqtad" ? StaggeredType::asqtad : StaggeredType::naive;
  sp.mass = operator_mass;
  sp.backend = backend;
  sp.reconstruct = recon;
  const double plaquette = measure_gauge(*lat, g.links, backend).plaquette;
  sp.u0 = u0 > 0 ? u0 : std::pow(plaquette, 0.25);
  check_staggered_param(*lat, sp);
  MultiShiftParam mp;
  mp.tol = {tol};
  mp.max_iter = static_cast<int>(max_it);
  mp.delta = delta;
  mp.extrapolation = static_cast<int>(extrapolation);

  const bool root = lat->rank() == 0;
  const double copy_gbs = measure_copy_bandwidth(backend, backend == Backend::cuda ? (1ul << 30) : (1ul << 27));
  const StaggeredLinks links = sp.type == StaggeredType::asqtad
                                   ? asqtad_links(*lat, g.links, AsqtadCoefficients::asqtad(sp.u0), backend)
                                   : StaggeredLinks{g.links, {}};
  auto dbl = std::make_shared<StaggeredOperator>(lat, links, sp);
  StaggeredParam lp = sp;
  lp.precision = sloppy;
  auto low = sloppy == Precision::double_ ? dbl : std::make_shared<StaggeredOperator>(lat, links, lp);
  StaggeredLinear A(dbl, true, 0), S(low, true, 0);
  LinearOperator* sloppy_op = sloppy == Precision::double_ ? nullptr : &S;
  // CG in half falls back to single when it stops tracking the true residual (solvers.h), as
  // MatLatkeSolveMultiMass does; the single links are built only then.
  StaggeredParam fp = sp;
  fp.precision = Precision::single;
  DeferredOperator fallback(
      [&] { return std::make_shared<StaggeredLinear>(std::make_shared<StaggeredOperator>(lat, links, fp), true, 0); });
  LinearOperator* fallback_op = sloppy == Precision::half ? &fallback : nullptr;
  if (root) {
    const DeviceInfo dev = device_info();
    std::printf("latke-bench multimass: %s staggered normal operator 4m^2 - D_eo D_oe, lattice %s, backend %s%s%s\n",
                to_string(sp.type), lat->describe().c_str(), to_string(backend), backend == Backend::cuda ? " (" : "",
                backend == Backend::cuda ? (dev.name + ")").c_str() : "");
    std::printf("gauge: %s\nu0 %.6f%s\n", g.description.c_str(), sp.u0, u0 > 0 ? "" : " (mean plaquette^(1/4))");
    std::printf("solver: sloppy %s, links %s, tol %g on each true residual, delta %g, extrapolation %d\n",
                to_string(sloppy), to_string(recon), tol, delta, mp.extrapolation);
    std::printf("masses (%zu):", masses.size());
    for (double m : masses) std::printf(" %.4g", m);
    std::printf("\ncopy bandwidth (read + write) measured in this run: %.1f GB/s\n", copy_gbs);
  }
  ColorSpinorField b(lat, A.field_param());
  b.from_lexicographic(random_spinor(*lat, static_cast<std::uint64_t>(seed), 1, 3));
  std::vector<ColorSpinorField> xs;
  std::vector<ColorSpinorField*> x;
  for (std::size_t i = 0; i < masses.size(); ++i) xs.push_back(A.make_field());
  for (auto& f : xs) x.push_back(&f);

  // Operator traffic per application (the matpc byte model of latke-bench dslash).
  const double vcb = static_cast<double>(lat->volume_cb()) * lat->size();
  auto matpc_bytes = [&](Precision p) {
    const double lb = sp.type == StaggeredType::asqtad ? 8.0 * (link_bytes(p, Reconstruct::r18) + link_bytes(p, recon))
                                                       : 8.0 * link_bytes(p, recon);
    const double kernel = lb + (sp.type == StaggeredType::asqtad ? 16 : 8) * vector_bytes(p) + vector_bytes(p);
    return (2 * kernel + vector_bytes(p)) * vcb;
  };
  std::vector<StrategyRun> runs;
  bool all_converged = true;
  for (MultiShiftStrategy s : strategies) {
    MultiShiftParam q = mp;
    q.strategy = s;
    MultiShiftParam warm = q;
    warm.tol = {1e-3};
    solve_shifted(A, sloppy_op, shifts, x, b, warm, fallback_op);
    StrategyRun best{s, {}, 0, 0};
    for (long k = 0; k < repeat; ++k) {
      const MultiShiftStats st = solve_shifted(A, sloppy_op, shifts, x, b, q, fallback_op);
      double worst = st.seconds;  // the slowest rank's time
      MPI_Allreduce(&st.seconds, &worst, 1, MPI_DOUBLE, MPI_MAX, lat->comm());
      if (k == 0 || worst < best.st.seconds) {
        best.st = st;
        best.st.seconds = worst;
      }
    }
    const double bytes = best.st.outer_applications * matpc_bytes(Precision::double_) +
                         best.st.sloppy_applications * matpc_bytes(sloppy);
    best.gflops = best.st.flops / best.st.seconds * 1e-9;
    best.gbs = bytes / best.st.seconds * 1e-9;
    all_converged = all_converged && best.st.converged;
    runs.push_back(best);
    if (root) {
      std::printf("\n%s:\n  %10s %10s %10s %12s %12s %10s %9s\n", to_string(s), "mass", "iterations", "refinement",
                  "start res", "true res", "time/s", "to single");
      for (std::size_t i = 0; i < masses.size(); ++i) {
        const ShiftStats& m = best.st.shifts[i];
        char fell[16] = "-";
        if (m.fallback_at >= 0) std::snprintf(fell, sizeof fell, "%d", m.fallback_at);
        std::printf("  %10.4g %10d %10d %12.3e %12.3e %10.3f %9s%s\n", masses[i], m.iterations, m.refine_iterations,
                    m.initial_residual, m.true_residual, m.seconds, fell, m.converged ? "" : "  NOT converged");
      }
    }
  }
  if (root) {
    std::printf("\n%-11s %10s %10s %12s %12s %10s %10s %8s\n", "strategy", "time/s", "iterations", "double apps",
                "sloppy apps", "GFLOPS", "GB/s", "vs copy");
    for (const StrategyRun& r : runs)
      std::printf("%-11s %10.3f %10d %12ld %12ld %10.1f %10.1f %7.2fx%s\n", to_string(r.strategy), r.st.seconds,
                  r.st.iterations, r.st.outer_applications, r.st.sloppy_applications, r.gflops, r.gbs, r.gbs / copy_gbs,
                  r.st.converged ? "" : "  NOT converged");
    std::printf(
        "(GFLOPS and GB/s of the operator applications: QUDA's flops, the matpc byte model; vector "
        "operations are in the time but not in the counts)\n");
    if (runs.size() == 2) {
      const bool first = runs[0].st.seconds <= runs[1].st.seconds;
      const StrategyRun &fast = first ? runs[0] : runs[1], &slow = first ? runs[1] : runs[0];
      std::printf("faster: %s, %.2fx less time to solution than %s (%.3f s against %.3f s)\n", to_string(fast.strategy),
                  slow.st.seconds / fast.st.seconds, to_string(slow.strategy), fast.st.seconds, slow.st.seconds);
    }
  }
  if (root && !json.empty())
    write_multimass_json(json, op_name, *lat, backend, copy_gbs, sp.u0, sloppy, tol, mp.extrapolation, masses, runs);
  LatkeGaugeDestroy(&gauge);
  LatkeFinalize();
  require(all_converged, "a multi-mass solve did not converge (marked NOT converged above)");
  return 0;
}
}  // namespace
}  // namespace latke

namespace latke {
namespace {

/// latke-bench mg: the multigrid kernels of each level on a random gauge field, after a
/// setup with the -pc_latke_mg_* options of the preconditioner (a few setup iterations,
/// e.g. -pc_latke_mg_setup_iterations 10, are enough to time kernels): restriction and
/// prolongation (bytes: the basis as read, the fine and the coarse field), and the coarse
/// operator, full and even-odd (bytes: the blocks read and the vectors), and over a set of
/// -latke_set fields (bytes: the blocks once and every field's vectors).
int bench_mg() {
  const RunOptions run = setup_from_options();
  Coords dims{};
  double mass = -0.05, csw = 1.0;
  long iters = 0, set_count = 32;
  double seconds = 0.5;
  read_options(PETSC_COMM_WORLD, "", "latke-bench mg options", [&](OptionGroup& o) {
    dims = o.coords("-latke_lattice", Coords{16, 16, 16, 32}, "Global lattice X,Y,Z,T");
    mass = o.real("-latke_mass", mass, "Bare quark mass");
    csw = o.real("-latke_csw", csw, "Clover coefficient");
    iters = o.integer("-latke_iterations", 0, "Calls per timing (0: about -latke_seconds of work, at least 3)");
    seconds = o.real("-latke_seconds", seconds, "Work per timing when -latke_iterations is 0");
    set_count = o.integer("-latke_set", set_count,
                          "Fields of the coarse operator over a set (apply_set; 0: not timed, at most 32)");
  });
  require(set_count >= 0 && set_count <= blas::set_max, "-latke_set ", set_count, ": expected 0 to ", blas::set_max);
  require(seconds > 0, "-latke_seconds ", seconds, ": expected a positive time");
  auto lat = std::make_shared<Lattice>(PETSC_COMM_WORLD, dims, run.grid);
  WilsonCloverParam wp;
  wp.mass = mass;
  wp.csw = csw;
  wp.precision = Precision::single;
  wp.backend = run.backend;
  const std::vector<Complex<double>> links = random_gauge(*lat, 7, 0.3);
  auto op = std::make_shared<WilsonCloverOperator>(lat, links, wp);
  mg::MultigridOptions o = mg::multigrid_options(PETSC_COMM_WORLD, nullptr, *lat);
  // The fine operator in the smoother's and the setup's precisions where they are not single
  // (half by default), as the PETSc preconditioner makes them.
  auto in = [&](Precision p, bool even_odd) -> std::shared_ptr<WilsonCloverLinear> {
    if (p == Precision::single) return nullptr;
    WilsonCloverParam q = wp;
    q.precision = p;
    return std::make_shared<WilsonCloverLinear>(std::make_shared<WilsonCloverOperator>(lat, links, q), even_odd,
                                                SchurType::symmetric, 0);
  };
  auto mgrid = std::make_shared<mg::Multigrid>(
      std::make_shared<WilsonCloverLinear>(op, false, SchurType::symmetric, 0), o.param, nullptr,
      std::make_shared<WilsonCloverLinear>(op, true, SchurType::symmetric, 0),
      in(o.param.level[0].smoother_precision, true), in(o.param.level[0].setup_precision, o.param.setup_even_odd));
  mgrid->setup();
  const double copy_gbs = measure_copy_bandwidth(run.backend, run.backend == Backend::cuda ? (1ul << 30) : (1ul << 27));
  const bool root = lat->rank() == 0;
  if (root) {
    std::printf("latke-bench mg: Wilson-clover, lattice %s, backend %s, %d levels, setup %.2f s\n",
                lat->describe().c_str(), to_string(run.backend), mgrid->levels(), mgrid->setup_seconds());
    std::printf("copy bandwidth (read + write) measured in this run: %.1f GB/s\n", copy_gbs);
    std::printf("%-5s %-22s %10s %10s %10s %8s\n", "level", "kernel", "time/us", "GFLOPS", "GB/s", "vs copy");
  }
  auto report = [&](int l, const char* what, double ms_local, double flops, double bytes) {
    double f = flops, by = bytes, ms = ms_local;
    MPI_Allreduce(MPI_IN_PLACE, &ms, 1, MPI_DOUBLE, MPI_MAX, lat->comm());  // the slowest rank's time
    MPI_Allreduce(MPI_IN_PLACE, &f, 1, MPI_DOUBLE, MPI_SUM, lat->comm());
    MPI_Allreduce(MPI_IN_PLACE, &by, 1, MPI_DOUBLE, MPI_SUM, lat->comm());
    const int copies = std::max(1, mgrid->info(l).copies);  // a gathered level: the same work on every rank
    f /= copies;
    by /= copies;
    const double gbs = by / (ms * 1e-3) * 1e-9;
    if (root)
      std::printf("%-5d %-22s %10.1f %10.1f %10.1f %7.2fx\n", l, what, ms * 1e3, f / (ms * 1e-3) * 1e-9, gbs,
                  gbs / copy_gbs);
  };
  // Repetitions from a first timing, agreed over the ranks (the slowest rank's): a kernel with
  // a halo exchange is collective, and ranks that repeated it different numbers of times would
  // wait for each other forever.
  auto calls = [&](double ms_guess) {
    double worst = ms_guess;
    MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, lat->comm());
    return iters > 0 ? static_cast<int>(iters) : std::max(3, static_cast<int>(1000 * seconds / std::max(worst, 1e-3)));
  };
  for (int l = 0; l + 1 < mgrid->levels(); ++l) {
    const mg::Transfer& T = mgrid->transfer(l);
    ColorSpinorField fine(T.fine_lattice(), T.fine_param(Precision::single));
    ColorSpinorField coarse(T.coarse_lattice(), T.coarse_param(Precision::single));
    fill_gaussian(fine, 3);
    fill_gaussian(coarse, 4);
    const double vol = static_cast<double>(T.fine_lattice()->volume());
    const int comps = fine.site_reals() / 2;
    const double basis = vol * comps * T.nvec() * 2 * real_bytes(o.param.level[l].transfer_precision);
    const double fbytes = vol * fine.site_reals() * 4,
                 cbytes = T.coarse_lattice()->volume() * coarse.site_reals() * 4.0;
    const double flops = 8.0 * vol * comps * T.nvec();
    double ms = time_per_call(run.backend, 3, [&] { T.restrict_to(coarse, fine); });
    ms = time_per_call(run.backend, calls(ms), [&] { T.restrict_to(coarse, fine); });
    report(l, "restrict", ms, flops, basis + fbytes + cbytes);
    ms = time_per_call(run.backend, 3, [&] { T.prolongate(fine, coarse); });
    ms = time_per_call(run.backend, calls(ms), [&] { T.prolongate(fine, coarse); });
    // P onto the Wilson fine level reads the basis vectors site by site rather than the packed
    // basis: in single, or their half copy (reals and a norm per site) with a half basis.
    const bool half = o.param.level[l].transfer_precision == Precision::half;
    const double pbasis = comps != 12 ? basis
                          : half      ? vol * T.nvec() * (comps * 2 * 2.0 + 4)
                                      : vol * comps * T.nvec() * 2 * 4.0;
    report(l, "prolongate", ms, flops, pbasis + fbytes + cbytes);
    if (l == 0) {  // the even-odd solve's cycle: R from and P onto one parity (half the fine sites)
      SpinorParam pp = T.fine_param(Precision::single);
      pp.subset = Subset::even;
      ColorSpinorField half_fine(T.fine_lattice(), pp);
      half_fine.copy_from(fine.parity(0));
      ms = time_per_call(run.backend, 3, [&] { T.restrict_to(coarse, half_fine); });
      ms = time_per_call(run.backend, calls(ms), [&] { T.restrict_to(coarse, half_fine); });
      report(l, "restrict (one parity)", ms, flops / 2, (basis + fbytes) / 2 + cbytes);
      ms = time_per_call(run.backend, 3, [&] { T.prolongate(half_fine, coarse); });
      ms = time_per_call(run.backend, calls(ms), [&] { T.prolongate(half_fine, coarse); });
      report(l, "prolong (one parity)", ms, flops / 2, (pbasis + fbytes) / 2 + cbytes);
    }
    // Over a set of set_count fields, as a set cycle transfers them (the fine level from and onto
    // one parity): per call, and per field against the one-field rows above; bytes: the basis
    // once and every field's fine and coarse vectors.
    if (set_count > 1) {
      SpinorParam fp = T.fine_param(Precision::single);
      if (l == 0) fp.subset = Subset::even;
      std::vector<ColorSpinorField> fs = ColorSpinorField::make_set(T.fine_lattice(), fp, set_count),
                                    cs = ColorSpinorField::make_set(T.coarse_lattice(), coarse.param(), set_count);
      for (int k = 0; k < set_count; ++k) {
        fill_gaussian(fs[k], 20 + k);
        fill_gaussian(cs[k], 60 + k);
      }
      const double part = l == 0 ? 0.5 : 1.0, n = static_cast<double>(set_count);
      char what[64];
      ms = time_per_call(run.backend, 3, [&] { T.restrict_set(cs, fs); });
      ms = time_per_call(run.backend, calls(ms), [&] { T.restrict_set(cs, fs); });
      std::snprintf(what, sizeof what, "restrict set x %d", set_count);
      report(l, what, ms, n * flops * part, (basis + n * fbytes) * part + n * cbytes);
      if (root) std::printf("%-5d %-22s %10.1f us per field\n", l, "", ms * 1e3 / n);
      ms = time_per_call(run.backend, 3, [&] { T.prolongate_set(fs, cs); });
      ms = time_per_call(run.backend, calls(ms), [&] { T.prolongate_set(fs, cs); });
      std::snprintf(what, sizeof what, "prolong set x %d", set_count);
      report(l, what, ms, n * flops * part, (pbasis + n * fbytes) * part + n * cbytes);
      if (root) std::printf("%-5d %-22s %10.1f us per field\n", l, "", ms * 1e3 / n);
    }
    // The setup's pieces for the next level: the block orthonormalization (of a copy of the
    // basis, already orthonormal: the same work; bytes: two passes, each reading the single
    // basis twice and writing it once), the whole Galerkin product, and per column
    // its steps (the unit prolongation, the split operator, R of its five outputs).
    mg::Transfer T2(T.fine_lattice(), T.fine_param(Precision::single), T.block(), T.nvec(), l + 1,
                    o.param.level[l].transfer_precision);
    for (int k = 0; k < T.nvec(); ++k) T2.vectors()[k].copy_from(T.vectors()[k]);
    ms = time_per_call(run.backend, 3, [&] { T2.orthonormalize(); });
    report(l, "orthonormalize", ms, 0, 2 * 3 * vol * comps * T.nvec() * 2 * 4.0);
    std::shared_ptr<LinearOperator> M;
    if (l == 0)
      M = std::make_shared<WilsonCloverLinear>(op, false, SchurType::symmetric, 0);
    else
      M = std::make_shared<mg::CoarseLinear>(
          std::shared_ptr<mg::CoarseOperator>(std::shared_ptr<mg::CoarseOperator>(), &mgrid->coarse_operator(l)), false,
          0, Precision::single);
    const Precision cp = o.param.level[l].coarse_precision;
    const bool ceo = mgrid->coarse_operator(l + 1).even_odd();
    ms = time_per_call(run.backend, 1, [&] { mg::galerkin(*M, T, cp, ceo); });
    report(l, "galerkin (whole)", ms, 0, 0);
    ColorSpinorField u = M->make_field(), g = M->make_field();
    std::vector<ColorSpinorField> face = ColorSpinorField::make_set(T.fine_lattice(), u.param(), 4);
    ColorSpinorField last(T.coarse_lattice(), coarse.param()), first(T.coarse_lattice(), coarse.param());
    ColorSpinorField* const faces[4] = {&face[0], &face[1], &face[2], &face[3]};
    ms = time_per_call(run.backend, calls(1), [&] { T.prolongate_unit(u, 0, -1); });
    report(l, "galerkin: unit P", ms, 0, 0);
    ms = time_per_call(run.backend, calls(1), [&] { M->apply_split(g, faces, u, T.block()); });
    report(l, "galerkin: split op", ms, 0, 0);
    // R of the five outputs in one pass (what a column takes), and for comparison R of the
    // site term alone and of one direction's faces.
    std::vector<ColorSpinorField> blocks = ColorSpinorField::make_set(T.coarse_lattice(), coarse.param(), 9);
    ms = time_per_call(run.backend, calls(1), [&] { T.restrict_split(blocks, g, face); });
    report(l, "galerkin: R split", ms, 0, 0);
    if (l == 0) {  // a batch of columns, as the Galerkin product of a Wilson fine level takes them
      const int nb = 8;
      std::vector<ColorSpinorField> sites = ColorSpinorField::make_set(T.fine_lattice(), u.param(), nb),
                                    faces8 = ColorSpinorField::make_set(T.fine_lattice(), u.param(), 4 * nb),
                                    blocks8 = ColorSpinorField::make_set(T.coarse_lattice(), coarse.param(), 9 * nb);
      for (int c = 0; c < nb; ++c) {
        sites[c].copy_from(g);
        for (int mu = 0; mu < 4; ++mu) faces8[4 * c + mu].copy_from(face[mu]);
      }
      ms = time_per_call(run.backend, calls(1), [&] { T.restrict_split_set(blocks8, sites, faces8); });
      report(l, "galerkin: R split x 8", ms, 0, 0);
      if (root) std::printf("%-5d %-22s %10.1f us per column\n", l, "", ms * 1e3 / nb);
    }
    ms = time_per_call(run.backend, calls(1), [&] { T.restrict_faces(last, first, g, 0); });
    report(l, "galerkin: R faces", ms, 0, 0);
    ms = time_per_call(run.backend, calls(1), [&] { T.restrict_to(last, g); });
    report(l, "galerkin: R", ms, 0, 0);
  }
  // The coarse correction below each level (what a cycle runs between its restriction and its
  // prolongation), kernel by kernel and as one CUDA graph where the cycle launches one: queued
  // back to back (the host ahead of the GPU, as on one GPU, where the fine level's kernels run
  // long enough for the host to queue the coarse levels' early), and from an idle GPU (each call
  // waited for, as after a halo exchange, which drains the queue, on several GPUs).
  {
    auto full = std::make_shared<WilsonCloverLinear>(op, false, SchurType::symmetric, 0);
    ColorSpinorField f = full->make_field(), x = full->make_field();
    fill_gaussian(f, 5);
    mgrid->apply(x, f);  // the levels' fields hold a cycle's values
    for (int l = 0; l + 1 < mgrid->levels(); ++l)
      for (bool graph : {false, true}) {
        mgrid->set_graphs(graph);
        const long graphs_before = mgrid->work(l)[5];
        for (int k = 0; k < 3; ++k) mgrid->correct_below_level(l);  // tunes; records the graph
        if (graph && mgrid->work(l)[5] == graphs_before) continue;  // not one here
        synchronize(run.backend);
        const long launches = work_counters().launches;
        mgrid->correct_below_level(l);
        const long kernels = work_counters().launches - launches;
        double queued = time_per_call(run.backend, 3, [&] { mgrid->correct_below_level(l); });
        const int n = calls(queued);
        queued = time_per_call(run.backend, n, [&] { mgrid->correct_below_level(l); });
        double idle = 0;
        for (int k = 0; k < n; ++k) {
          synchronize(run.backend);
          const auto t0 = std::chrono::steady_clock::now();
          mgrid->correct_below_level(l);
          synchronize(run.backend);
          idle += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        }
        idle /= n;
        MPI_Allreduce(MPI_IN_PLACE, &queued, 1, MPI_DOUBLE, MPI_MAX, lat->comm());
        MPI_Allreduce(MPI_IN_PLACE, &idle, 1, MPI_DOUBLE, MPI_MAX, lat->comm());
        if (root)
          std::printf("%-5d %-22s %10.1f us queued back to back, %.1f us from an idle GPU; %ld kernels\n", l,
                      graph ? "correction below: graph" : "correction below", queued * 1e3, idle * 1e3, kernels);
      }
    mgrid->set_graphs(o.param.graphs);
  }
  for (int l = 1; l < mgrid->levels(); ++l) {
    mg::CoarseOperator& D = mgrid->coarse_operator(l);
    if (mg::Agglomeration* agg = mgrid->agglomeration(l)) {  // the level's right-hand side gathered in groups
      const SpinorParam cp = D.field_param(Precision::single, Subset::full);
      ColorSpinorField part(agg->part(), cp), whole(agg->onto(), cp);
      fill_gaussian(part, 4);
      double ms = time_per_call(run.backend, 3, [&] { agg->gather(whole, part); });
      ms = time_per_call(run.backend, calls(ms), [&] { agg->gather(whole, part); });
      // bytes: what every rank receives, summed over the ranks (report() counts a level's
      // work once, dividing by its copies: multiplied back here)
      const double copies = std::max(1, mgrid->info(l).copies);
      report(l, agg->ranks() == 1 ? "gather (all ranks)" : "gather (groups)", ms, 0,
             static_cast<double>(agg->gather_bytes(part)) * copies);
      ms = time_per_call(run.backend, calls(ms), [&] { agg->scatter(part, whole); });
      report(l, "scatter (own sites)", ms, 0, 2.0 * part.bytes() * copies);
    }
    ColorSpinorField x(D.lattice(), D.field_param(Precision::single, Subset::full)), y = x.like(Precision::single);
    fill_gaussian(x, 5);
    const double sites = D.lattice()->volume(), n = D.n();
    const double block = n * n * 2 * real_bytes(D.precision()) + (D.precision() == Precision::half ? 4 : 0);
    double ms = time_per_call(run.backend, 3, [&] { D.apply(y, x); });
    ms = time_per_call(run.backend, calls(ms), [&] { D.apply(y, x); });
    report(l, "coarse operator", ms, D.flops(false), sites * (9 * block + 2 * n * 8));
    if (D.even_odd()) {
      // A non-owning handle: the hierarchy owns the operator.
      mg::CoarseLinear schur(std::shared_ptr<mg::CoarseOperator>(std::shared_ptr<mg::CoarseOperator>(), &D), true, 0,
                             Precision::single);
      ColorSpinorField a = schur.make_field(), b = schur.make_field();
      fill_gaussian(a, 6);
      ms = time_per_call(run.backend, 3, [&] { schur.apply(b, a); });
      ms = time_per_call(run.backend, calls(ms), [&] { schur.apply(b, a); });
      report(l, "coarse even-odd", ms, D.flops(true), sites * (8 * block + 2 * n * 8));
      if (D.precision() != Precision::half) {  // what a smoother in half applies: the blocks in half
        mg::CoarseLinear low(D.in_half(), true, 0, Precision::single);
        ms = time_per_call(run.backend, 3, [&] { low.apply(b, a); });
        ms = time_per_call(run.backend, calls(ms), [&] { low.apply(b, a); });
        report(l, "coarse even-odd, half", ms, D.flops(true), sites * (8 * (n * n * 2 * 2.0 + 4) + 2 * n * 8));
      }
      // What a cycle on this level does per field around its even-odd smoother: bhat from the
      // full right-hand side, and the full solution back (bytes: the vectors read and written).
      ColorSpinorField bf(D.lattice(), D.field_param(Precision::single, Subset::full)), xf = bf.like(Precision::single);
      fill_gaussian(bf, 7);
      ms = time_per_call(run.backend, 3, [&] { schur.prepare(b, bf); });
      ms = time_per_call(run.backend, calls(ms), [&] { schur.prepare(b, bf); });
      report(l, "even-odd prepare", ms, 0, sites * 2 * n * 8 * 1.5);
      ms = time_per_call(run.backend, 3, [&] { schur.reconstruct(xf, a, bf); });
      ms = time_per_call(run.backend, calls(ms), [&] { schur.reconstruct(xf, a, bf); });
      report(l, "even-odd reconstruct", ms, 0, sites * 2 * n * 8 * 1.5);
    }
    // The operator over a set of set_count fields (the setup's null vectors solved together):
    // per field, against the one-field time above; bytes: the blocks once, every field's vectors.
    if (set_count > 0) {
      const SpinorParam sp = D.field_param(Precision::single, D.even_odd() ? Subset::even : Subset::full);
      std::vector<ColorSpinorField> in = ColorSpinorField::make_set(D.lattice(), sp, set_count),
                                    out = ColorSpinorField::make_set(D.lattice(), sp, set_count);
      for (int k = 0; k < set_count; ++k) fill_gaussian(in[k], 10 + k);
      // Each arithmetic the operator takes (CoarseOperator::set_math): FP32, then tensor cores.
      const mg::SetMath chosen = D.set_math();
      for (mg::SetMath m : {mg::SetMath::fp32, mg::SetMath::tf32x3}) {
        D.set_math(m);
        if (D.set_math() != m) continue;
        ms = time_per_call(run.backend, 3, [&] { D.apply_set(out, in); });
        ms = time_per_call(run.backend, calls(ms), [&] { D.apply_set(out, in); });
        const bool eo = D.even_odd();
        char what[64];
        std::snprintf(what, sizeof what, "%s x %d, %s", eo ? "even-odd set" : "operator set", set_count,
                      mg::to_string(m));
        report(l, what, ms, set_count * D.flops(eo), sites * ((eo ? 8 : 9) * block + set_count * 2 * n * 8));
        if (root) std::printf("%-5d %-22s %10.1f us per field\n", l, "", ms * 1e3 / set_count);
      }
      D.set_math(chosen);
      if (D.even_odd() && D.precision() != Precision::half) {  // a smoother in half: its blocks in half
        std::shared_ptr<mg::CoarseOperator> low = D.in_half();
        ms = time_per_call(run.backend, 3, [&] { low->apply_set(out, in); });
        ms = time_per_call(run.backend, calls(ms), [&] { low->apply_set(out, in); });
        char what[64];
        std::snprintf(what, sizeof what, "even-odd set x %d, half", set_count);
        report(l, what, ms, set_count * D.flops(true), sites * (8 * (n * n * 2 * 2.0 + 4) + set_count * 2 * n * 8));
        if (root) std::printf("%-5d %-22s %10.1f us per field\n", l, "", ms * 1e3 / set_count);
      }
    }
  }
  return 0;
}

}  // namespace
/// latke-bench schwarz: one application of the Schwarz preconditioner per block shape and
/// precision, with the blocks solved on chip and streamed, against one MatPC of the same
/// precision in the same run.
int bench_schwarz() {
  const RunOptions run = setup_from_options();
  Coords dims{};
  std::string block_list, type_name;
  std::vector<std::string> precision_list;
  long steps = 8, iters_opt = 0, cycles = 1;
  double mass = 0.1, csw = 1.0;
  read_options(PETSC_COMM_WORLD, "", "latke-bench schwarz options", [&](OptionGroup& o) {
    dims = o.coords("-latke_lattice", Coords{16, 16, 16, 16}, "Global lattice X,Y,Z,T");
    precision_list =
        o.choice_list("-latke_precision", {"half", "single"}, {"double", "single", "half"}, "Precisions to time");
    block_list = o.string("-latke_schwarz_blocks", "4,4,4,4:8,4,4,4:8,8,8,8",
                          "Block shapes to time, separated by colons: X,Y,Z,T:X,Y,Z,T...");
    steps = o.integer("-latke_schwarz_iterations", steps, "MR steps per block per application");
    type_name = o.choice("-latke_schwarz_type", "additive", {"additive", "multiplicative"}, "Schwarz type");
    cycles = o.integer("-latke_schwarz_cycles", cycles, "Schwarz cycles per application");
    mass = o.real("-latke_mass", mass, "Bare quark mass");
    csw = o.real("-latke_csw", csw, "Clover coefficient");
    iters_opt = o.integer("-latke_iterations", 0, "Applications per timing (0: about 1 s of work)");
  });
  require(steps >= 1, "-latke_schwarz_iterations ", steps, ": expected at least 1");
  require(cycles >= 1, "-latke_schwarz_cycles ", cycles, ": expected at least 1");
  auto lat = std::make_shared<Lattice>(PETSC_COMM_WORLD, dims, run.grid);
  std::vector<Coords> blocks;
  {
    std::stringstream ss(block_list);
    std::string item;
    while (std::getline(ss, item, ':')) {
      blocks.push_back(parse_coords(item, "-latke_schwarz_blocks"));
      check_schwarz_block(*lat, blocks.back());
    }
  }
  const SchwarzType type = parse_schwarz_type(type_name);
  const bool root = lat->rank() == 0;
  const double copy_gbs = measure_copy_bandwidth(run.backend, run.backend == Backend::cuda ? (1ul << 30) : (1ul << 27));
  if (root) {
    std::printf(
        "latke-bench schwarz: Wilson-clover, lattice %s, backend %s%s%s, %s Schwarz, %ld cycle(s) of %ld MR steps\n",
        lat->describe().c_str(), to_string(run.backend), run.backend == Backend::cuda ? " (" : "",
        run.backend == Backend::cuda ? (device_info().name + ")").c_str() : "", to_string(type), cycles, steps);
    if (type == SchwarzType::multiplicative)
      std::printf(
          "on chip, chip h2: the residual between colours updated across block boundaries; chip op, h2 op: "
          "recomputed with the MatPC\n");
    std::printf("copy bandwidth (read + write) measured in this run: %.1f GB/s\n", copy_gbs);
    std::printf("%-9s %-7s %-9s %10s %9s %10s %10s %8s\n", "block", "prec", "solves", "time/us", "x matpc", "GFLOPS",
                "GB/s", "vs copy");
  }
  const std::vector<Complex<double>> links = random_gauge(*lat, 20241022), src = random_spinor(*lat, 7);
  const double vcb = static_cast<double>(lat->volume_cb()) * lat->size();
  auto timed = [&](const std::function<void()>& f) {  // ms per call, the slowest rank's
    int n = static_cast<int>(iters_opt);
    if (n == 0) {
      double worst = time_per_call(run.backend, 3, f);
      MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, lat->comm());
      n = std::max(3, std::min(2000, static_cast<int>(1000.0 / std::max(worst, 1e-3))));
    }
    double ms = time_per_call(run.backend, n, f);
    MPI_Allreduce(MPI_IN_PLACE, &ms, 1, MPI_DOUBLE, MPI_MAX, lat->comm());
    return ms;
  };
  for (Precision p : [&] {
         std::vector<Precision> v;
         for (const auto& s : precision_list) v.push_back(parse_precision(s));
         return v;
       }()) {
    EvenOddWilson w = even_odd_wilson(lat, links, src, p, mass, csw, run.backend);
    const std::shared_ptr<WilsonCloverLinear>& A = w.A;
    const ColorSpinorField& b = w.b;
    ColorSpinorField x = A->make_field();
    const double matpc_ms = timed([&] { A->apply(x, b); });
    const Reconstruct r = Reconstruct::r12;
    // On chip: the links and both parities' clover (inverse) read once, the right-hand side
    // read and the solution written once; streamed: per step the local MatPC's words and the
    // block MR's vector passes (sums: r, Ar; update: x, r, Ar read, x, r written).
    const double chip_bytes = (8.0 * link_bytes(p, r) + 2 * clover_bytes(p) + 2 * spinor_bytes(p)) * vcb;
    const double matpc_bytes = wilson_matpc_site_bytes(p, r) * vcb;
    const double streamed_bytes = steps * (matpc_bytes + 7.0 * spinor_bytes(p) * vcb);
    const double flops = cycles * steps * schwarz_step_site_flops * vcb;
    if (root)
      std::printf("%-9s %-7s %-9s %10.1f %9.2f %10.1f %10.1f %7.2fx\n", "(global)", to_string(p), "matpc",
                  matpc_ms * 1e3, 1.0, 3792.0 * vcb / (matpc_ms * 1e-3) * 1e-9, matpc_bytes / (matpc_ms * 1e-3) * 1e-9,
                  matpc_bytes / (matpc_ms * 1e-3) * 1e-9 / copy_gbs);
    for (const Coords& blk : blocks) {
      const std::shared_ptr<WilsonCloverLinear> local = domain_local(w, links, blk);
      // on chip; on chip in FP16 pairs (half only); streamed; multiplicative: 3, 4 as 0, 1 with the
      // residual recomputed by the MatPC between colours
      for (int mode : {0, 1, 2, 3, 4}) {
        const bool on_chip = mode != 2, op_residual = mode >= 3;
        if ((mode == 1 || mode == 4) && p != Precision::half) continue;
        if (op_residual && type != SchwarzType::multiplicative) continue;
        SchwarzParam sp;
        sp.block = blk;
        sp.iterations = static_cast<int>(steps);
        sp.precision = p;
        sp.type = type;
        sp.cycles = static_cast<int>(cycles);
        sp.on_chip = on_chip;
        sp.boundary_update = !op_residual;
        const char* label = mode == 0   ? "on chip"
                            : mode == 1 ? "chip h2"
                            : mode == 2 ? "streamed"
                            : mode == 3 ? "chip op"
                                        : "h2 op";
        char name[32];
        std::snprintf(name, sizeof name, "%d,%d,%d,%d", blk[0], blk[1], blk[2], blk[3]);
        if ((mode == 1 || mode == 4) && !local->solves_block_pairs()) {
          if (mode == 4) continue;
          if (root)
            std::printf("%-9s %-7s %-9s (a pair's spinors and links do not fit in a team's shared memory)\n", name,
                        to_string(p), "chip h2");
          continue;
        }
        if (on_chip && !local->solves_blocks()) {
          if (root && mode == 0)
            std::printf("%-9s %-7s %-9s (its spinors do not fit in a team's shared memory)\n", name, to_string(p),
                        "on chip");
          continue;
        }
        sp.half_pairs = mode == 1 || mode == 4 ? SchwarzParam::HalfPairs::on : SchwarzParam::HalfPairs::off;
        SchwarzPreconditioner k(local, schwarz_needs_full_operator(sp) ? A : nullptr, sp);
        const double ms = timed([&] { k.apply(x, b); });
        const double bytes = cycles * (on_chip ? chip_bytes : streamed_bytes);
        const double gbs = bytes / (ms * 1e-3) * 1e-9;
        if (root)
          std::printf("%-9s %-7s %-9s %10.1f %9.2f %10.1f %10.1f %7.2fx\n", name, to_string(p), label, ms * 1e3,
                      ms / matpc_ms, flops / (ms * 1e-3) * 1e-9, gbs, gbs / copy_gbs);
        const double check = norm2(x) / norm2(b);
        require(std::isfinite(check) && check > 0, "benchmark schwarz produced ", check, " for |out|^2/|in|^2");
      }
    }
  }
  return 0;
}

/// latke-bench machine: the micro-benchmarks of the performance model, written to a machine
/// file (latke-machine/1) for latke-scale model. Run on one node with one rank per GPU.
int bench_machine() {
  const RunOptions run = setup_from_options();
  std::string json;
  Coords kdims{};
  read_options(PETSC_COMM_WORLD, "", "latke-bench machine options", [&](OptionGroup& o) {
    json = o.string("-latke_json", "machine.json", "The machine file to write");
    kdims = o.coords("-latke_kernel_lattice", Coords{32, 32, 32, 32},
                     "Each rank's lattice for the kernels' calibration (MatPC, Schwarz blocks)");
  });
  require_writable(PETSC_COMM_WORLD, json, "-latke_json");
  int size = 1, rank = 0;
  MPI_Comm_size(PETSC_COMM_WORLD, &size);
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  const bool root = rank == 0;
  const Backend b = run.backend;
  const std::size_t big = b == Backend::cuda ? (1ul << 30) : (1ul << 26);
  const double copy_gbs = measure_copy_bandwidth(b, big), read_gbs = read_bandwidth_gbs(b, big);
  const double launch_us = launch_latency_us(b), h2d_gbs = host_device_gbs(b, big / 4);
  // Exchanges over the world's ranks split in t, faces from 64 bytes to 16 MiB.
  std::vector<std::pair<std::size_t, double>> exchanges;
  if (size > 1) {
    const Lattice lat(PETSC_COMM_WORLD, Coords{4, 4, 4, 4 * size}, Coords{1, 1, 1, size});
    for (std::size_t bytes : {std::size_t(64), std::size_t(4096), std::size_t(65536), std::size_t(1) << 20,
                              std::size_t(4) << 20, std::size_t(16) << 20}) {
      const ExchangeTiming e = exchange_timing(lat, b, bytes);
      exchanges.emplace_back(bytes, e.us);
    }
  }
  // Global sums over the first k ranks, k = 1, 2, 4, ..., size.
  std::vector<std::pair<int, double>> sums;
  for (int k = 1; k <= size; k *= 2) {
    MPI_Comm sub;
    MPI_Comm_split(PETSC_COMM_WORLD, rank < k ? 0 : MPI_UNDEFINED, rank, &sub);
    double us = 0;
    if (sub != MPI_COMM_NULL) {
      us = global_sum_us(sub, b);
      MPI_Comm_free(&sub);
    }
    MPI_Bcast(&us, 1, MPI_DOUBLE, 0, PETSC_COMM_WORLD);
    sums.emplace_back(k, us);
    if (k < size && 2 * k > size) k = size / 2;  // end with the whole world
  }
  // Kernels on each rank's own lattice (no communication): MatPC per precision as a fraction
  // of the copy bandwidth (latke-bench dslash's byte model), on the kernel lattice and on it
  // with t halved down to 2 (a kernel's efficiency falls with its volume: the model reads it
  // at each local volume); and the Schwarz blocks' arithmetic rate (4^4, 8 MR steps, half, on
  // chip).
  std::vector<std::pair<std::string, double>> matpc;
  std::vector<std::pair<std::string, std::vector<std::pair<long, double>>>> by_volume;
  double schwarz_gflops = 0;
  for (Precision p : {Precision::half, Precision::single, Precision::double_}) {
    by_volume.emplace_back(to_string(p), std::vector<std::pair<long, double>>{});
    for (int t = kdims[3]; t >= 2; t /= 2) {
      auto lat = std::make_shared<Lattice>(PETSC_COMM_SELF, Coords{kdims[0], kdims[1], kdims[2], t});
      const std::vector<Complex<double>> links = random_gauge(*lat, 20241022), src = random_spinor(*lat, 7);
      const double vcb = lat->volume_cb();
      const EvenOddWilson w = even_odd_wilson(lat, links, src, p, 0.1, 1.0, b);
      const ColorSpinorField& in = w.b;
      ColorSpinorField out = w.A->make_field();
      const double bytes = wilson_matpc_site_bytes(p, Reconstruct::r12) * vcb;
      const double ms = time_per_call(b, b == Backend::cuda ? 200 : 3, [&] { w.A->apply(out, in); });
      const double ratio = bytes / (ms * 1e-3) / 1e9 / copy_gbs;
      by_volume.back().second.emplace_back(static_cast<long>(vcb), ratio);
      if (t != kdims[3]) continue;
      matpc.emplace_back(to_string(p), ratio);
      if (p == Precision::half) {
        SchwarzParam sp = schwarz_smoother_param();  // one additive cycle of 4^4 blocks
        sp.iterations = 8;
        const std::shared_ptr<WilsonCloverLinear> local = domain_local(w, links, sp.block);
        SchwarzPreconditioner k(local, nullptr, sp);
        const double sms = time_per_call(b, b == Backend::cuda ? 20 : 1, [&] { k.apply(out, in); });
        schwarz_gflops = sp.iterations * schwarz_step_site_flops * vcb / (sms * 1e-3) / 1e9;
      }
    }
  }
  if (!root) return 0;
  const DeviceInfo dev = device_info();
  using njson = nlohmann::ordered_json;
  njson f = {{"schema", "latke-machine/1"},
             {"backend", to_string(b)},
             {"device", b == Backend::cuda ? dev.name : "cpu"},
             {"ranks", size},
             {"copy_gbs", copy_gbs},
             {"read_gbs", read_gbs},
             {"launch_us", launch_us},
             {"host_device_gbs", h2d_gbs},
             {"exchange", njson::array()},
             {"global_sum", njson::array()},
             {"kernel_lattice", kdims},
             {"matpc_vs_copy", njson::object()},
             {"matpc_by_volume", njson::object()}};
  for (const auto& [bytes, us] : exchanges) f["exchange"].push_back({{"face_bytes", bytes}, {"us", us}});
  for (const auto& [ranks, us] : sums) f["global_sum"].push_back({{"ranks", ranks}, {"us", us}});
  for (const auto& [precision, ratio] : matpc) f["matpc_vs_copy"][precision] = ratio;
  for (const auto& [precision, points] : by_volume) {
    njson list = njson::array();
    for (const auto& [vcb, ratio] : points) list.push_back({vcb, ratio});
    f["matpc_by_volume"][precision] = list;
  }
  f["schwarz_gflops"] = schwarz_gflops;
  write_text_atomically(json, f.dump(2) + "\n", "-latke_json");
  std::printf("latke-bench machine: %d rank(s), backend %s%s%s; machine file %s\n", size, to_string(b),
              b == Backend::cuda ? " (" : "", b == Backend::cuda ? (dev.name + ")").c_str() : "", json.c_str());
  std::printf("copy %.1f GB/s, read %.1f GB/s, host-device %.1f GB/s, launch %.2f us\n", copy_gbs, read_gbs, h2d_gbs,
              launch_us);
  for (const auto& e : exchanges) std::printf("exchange, faces of %zu bytes: %.1f us\n", e.first, e.second);
  for (const auto& s : sums) std::printf("global sum over %d rank(s): %.1f us\n", s.first, s.second);
  for (const auto& v : by_volume)
    for (const auto& e : v.second)
      std::printf("MatPC %s, %ld sites per parity: %.2f of the copy bandwidth\n", v.first.c_str(), e.first, e.second);
  std::printf("Schwarz blocks 4^4, 8 MR steps, half: %.0f GFLOPS\n", schwarz_gflops);
  return 0;
}

/// What the spectroscopy benchmarks share: their lattice and backend, the copy bandwidth measured
/// in the same run, and the header naming them (printed by rank 0).
struct BenchContext {
  std::shared_ptr<Lattice> lat;
  Backend b;
  bool root;
  double copy_gbs, sites;

  /// One row of the table: `what`, the time (ms per call, the slowest rank's) times `unit` (1e3:
  /// µs), GFLOPS ("-" without flops), effective GB/s and the ratio to the copy bandwidth from the
  /// per-site counts; the time alone without bytes.
  void report(const char* what, double ms, double unit, double flops_per_site, double bytes_per_site) const {
    MPI_Allreduce(MPI_IN_PLACE, &ms, 1, MPI_DOUBLE, MPI_MAX, lat->comm());
    if (!root) return;
    if (bytes_per_site <= 0) {
      std::printf("%-34s %10.3f\n", what, ms * unit);
      return;
    }
    const double gbs = bytes_per_site * sites / (ms * 1e-3) / 1e9;
    if (flops_per_site > 0)
      std::printf("%-34s %10.3f %10.1f %10.1f %8.2f\n", what, ms * unit, flops_per_site * sites / (ms * 1e-3) / 1e9,
                  gbs, gbs / copy_gbs);
    else
      std::printf("%-34s %10.3f %10s %10.1f %8.2f\n", what, ms * unit, "-", gbs, gbs / copy_gbs);
  }
};

BenchContext open_bench(const char* name, const RunOptions& run, const Coords& dims) {
  BenchContext c;
  c.lat = std::make_shared<Lattice>(PETSC_COMM_WORLD, dims, run.grid);
  c.b = run.backend;
  c.root = c.lat->rank() == 0;
  c.copy_gbs = measure_copy_bandwidth(c.b, c.b == Backend::cuda ? (1ul << 30) : (1ul << 27));
  c.sites = static_cast<double>(c.lat->volume()) * c.lat->size();
  if (c.root) {
    std::printf("latke-bench %s: lattice %s, backend %s%s%s\n", name, c.lat->describe().c_str(), to_string(c.b),
                c.b == Backend::cuda ? " (" : "", c.b == Backend::cuda ? (device_info().name + ")").c_str() : "");
    std::printf("copy bandwidth (read + write) measured in this run: %.1f GB/s\n", c.copy_gbs);
  }
  return c;
}

/// Link smearing and quark smearing steps on a random field: time per step (a link step from
/// the difference of N + 1 and 1 steps, the links' copies apart), effective GB/s of every word
/// once (a link step reads the four links of a site and writes them; a quark step reads the
/// spinor and three links of a site and writes the spinor, in double), quark GFLOPS (24 colour
/// matrix-vector products, their sums and a x + b h: 1776 flops per site) and the ratio to the
/// copy bandwidth measured in the same run; and a whole source smearing on one time slice.
int bench_smear() {
  const RunOptions run = setup_from_options();
  Coords dims{};
  long link_steps = 10, quark_steps = 40;
  read_options(PETSC_COMM_WORLD, "", "latke-bench smear options", [&](OptionGroup& o) {
    dims = o.coords("-latke_lattice", Coords{32, 32, 32, 64}, "Global lattice X,Y,Z,T");
    link_steps = o.integer("-latke_smear_links_steps", link_steps, "Link smearing steps per timing");
    quark_steps = o.integer("-latke_smear_steps", quark_steps, "Quark smearing steps per timing");
  });
  require(link_steps >= 1 && quark_steps >= 1, "-latke_smear_links_steps ", link_steps, " -latke_smear_steps ",
          quark_steps, ": expected at least 1 each");
  const BenchContext ctx = open_bench("smear", run, dims);
  const auto& lat = ctx.lat;
  const Backend b = ctx.b;
  const bool root = ctx.root;
  if (root) {
    std::printf("%-34s %10s %10s %10s %8s\n", "smearing", "us/step", "GFLOPS", "GB/s", "vs copy");
  }
  const std::vector<Complex<double>> links = random_gauge(*lat, 20241022);
  auto report = [&](const char* what, double ms_per_step, double flops_per_site, double bytes_per_site) {
    ctx.report(what, ms_per_step, 1e3, flops_per_site, bytes_per_site);  // µs per step
  };
  const double link_bytes = 8 * 9 * sizeof(Complex<double>);  // 4 links read, 4 written
  std::vector<Complex<double>> smeared;
  {
    gauge::ExtendedLinks ext(*lat, b), scratch(*lat, b);
    ext.upload(links);  // untimed: tuning
    smeared = ext.download();
    auto wall_ms = [&](const std::function<void()>& f) {
      MPI_Barrier(lat->comm());
      const auto t0 = std::chrono::steady_clock::now();
      f();
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      MPI_Allreduce(MPI_IN_PLACE, &ms, 1, MPI_DOUBLE, MPI_MAX, lat->comm());
      return ms;
    };
    const double up_ms = wall_ms([&] { ext.upload(links); });
    const double down_ms = wall_ms([&] { smeared = ext.download(); });
    for (LinkSmearingType t : {LinkSmearingType::ape, LinkSmearingType::stout}) {
      LinkSmearing p;
      p.type = t;
      p.steps = static_cast<int>(link_steps);
      p.alpha = t == LinkSmearingType::ape ? 0.5 : 0.1;
      ext.upload(links);
      const double ms = time_per_call(b, 1, [&] { gauge::smear(ext, scratch, p); });
      report(t == LinkSmearingType::ape ? "APE step, spatial" : "stout step, spatial",
             ms / static_cast<double>(link_steps), 0, link_bytes);
      if (t == LinkSmearingType::ape) smeared = ext.download();
    }
    if (root)
      std::printf("%-34s %10.3f  (upload %.1f ms, download %.1f ms: %.1f GB of links each way)\n", "link copies",
                  (up_ms + down_ms) * 1e3, up_ms, down_ms,
                  static_cast<double>(links.size()) * sizeof(Complex<double>) / 1e9);
  }
  SpinorParam sp;
  sp.backend = b;
  ColorSpinorField psi(lat, sp);
  psi.from_lexicographic(random_spinor(*lat, 7));
  const double quark_bytes = 2 * 12 * sizeof(Complex<double>) + 3 * 9 * sizeof(Complex<double>);
  for (QuarkSmearingType t : {QuarkSmearingType::wuppertal, QuarkSmearingType::gaussian}) {
    QuarkSmearing q;
    q.type = t;
    q.steps = static_cast<int>(quark_steps);
    q.alpha = t == QuarkSmearingType::wuppertal ? 3.0 : 4.0;
    QuarkSmearer sm(*lat, b, smeared, q);
    sm.apply(psi);  // untimed: tuning
    const double ms = time_per_call(b, b == Backend::cuda ? 5 : 1, [&] { sm.apply(psi); });
    report(t == QuarkSmearingType::wuppertal ? "Wuppertal step (sink)" : "Gaussian step (sink)",
           ms / static_cast<double>(quark_steps), 1776, quark_bytes);
    if (t == QuarkSmearingType::wuppertal) {  // a source: one time slice
      double slice_ms = time_per_call(b, b == Backend::cuda ? 5 : 1, [&] { sm.apply(psi, 0); });
      MPI_Allreduce(MPI_IN_PLACE, &slice_ms, 1, MPI_DOUBLE, MPI_MAX, lat->comm());
      if (root)
        std::printf("%-34s %10.3f  (all %ld steps on time slice 0, with the copies in and out)\n", "Wuppertal source",
                    slice_ms * 1e3, quark_steps);
    }
  }
  return 0;
}

/// The contractions of a propagator (12 random full fields standing for its columns): per meson
/// channel at rest, per extra momentum of the projection, the nucleon (both projections) and the
/// wall sink of all seven meson channels. Time per call, and for the site kernels the effective
/// GB/s (the 12 columns read once, the per-site results written and read back by the
/// projection) and GFLOPS (mesons: 1568 flops per site and term, 4 x 3 x 4 spin-colour products of
/// three terms each; the nucleon: 51264, 36 colour terms of three 4 x 4 spin products and the nine
/// M = Gamma S Gbar, see baryons.h), with
/// the ratio to the copy bandwidth measured in the same run.
int bench_contract() {
  const RunOptions run = setup_from_options();
  Coords dims{};
  long mom2 = 3;
  read_options(PETSC_COMM_WORLD, "", "latke-bench contract options", [&](OptionGroup& o) {
    dims = o.coords("-latke_lattice", Coords{32, 32, 32, 64}, "Global lattice X,Y,Z,T");
    mom2 = o.integer("-latke_mom2_max", mom2, "Momenta n with n^2 <= N for the projection's timing");
  });
  require(mom2 >= 1 && mom2 <= 8, "-latke_mom2_max ", mom2, ": expected 1 to 8");
  const BenchContext ctx = open_bench("contract", run, dims);
  const auto& lat = ctx.lat;
  const Backend b = ctx.b;
  const bool root = ctx.root;
  if (root) {
    std::printf("%-34s %10s %10s %10s %8s\n", "contraction", "ms/call", "GFLOPS", "GB/s", "vs copy");
  }
  SpinorParam sp;
  sp.backend = b;
  std::vector<ColorSpinorField> cols;
  cols.reserve(12);
  for (int j = 0; j < 12; ++j) {
    cols.emplace_back(lat, sp);
    cols.back().from_lexicographic(random_spinor(*lat, 100 + j));
  }
  std::vector<const ColorSpinorField*> ptr;
  for (const auto& c : cols) ptr.push_back(&c);
  auto report = [&](const char* what, double ms, double flops_per_site, double bytes_per_site) {
    ctx.report(what, ms, 1, flops_per_site, bytes_per_site);  // ms per call
  };
  const double columns_bytes = 12 * 12 * sizeof(Complex<double>);
  const std::array<int, 4> source{0, 0, 0, 0};
  const std::vector<MesonChannel> pion{MesonChannel::pion}, all = all_meson_channels();
  std::vector<std::array<int, 3>> momenta{{0, 0, 0}};
  for (int x = -2; x <= 2; ++x)
    for (int y = -2; y <= 2; ++y)
      for (int z = -2; z <= 2; ++z)
        if (x * x + y * y + z * z > 0 && x * x + y * y + z * z <= mom2) momenta.push_back({x, y, z});
  const int reps = b == Backend::cuda ? 5 : 1;
  meson_correlators(ptr, source, pion, {{0, 0, 0}});  // untimed: tuning
  const double one = time_per_call(b, reps, [&] { meson_correlators(ptr, source, pion, {{0, 0, 0}}); });
  report("meson channel (pion), at rest", one, 1568, columns_bytes + 3 * sizeof(Complex<double>));
  const double rho = time_per_call(b, reps, [&] { meson_correlators(ptr, 0, {MesonChannel::rho}); });
  report("meson channel (rho, 3 terms)", rho, 3 * 1568, columns_bytes + 3 * sizeof(Complex<double>));
  const double moving = time_per_call(b, reps, [&] { meson_correlators(ptr, source, pion, momenta); });
  char what[64];
  std::snprintf(what, sizeof what, "projection, per momentum (%zu)", momenta.size() - 1);
  report(what, (moving - one) / static_cast<double>(momenta.size() - 1), 30, sizeof(Complex<double>));
  const double every = time_per_call(b, reps, [&] { meson_correlators(ptr, 0, all); });
  report("all 7 meson channels, at rest", every, 0, 0);
  const std::array<Complex<double>, 4> phases{Complex<double>(1), Complex<double>(1), Complex<double>(1),
                                              Complex<double>(-1)};
  nucleon_correlators(ptr, source, phases, {{0, 0, 0}});  // untimed: tuning
  const double nucleon = time_per_call(b, reps, [&] { nucleon_correlators(ptr, source, phases, {{0, 0, 0}}); });
  report("nucleon, both projections", nucleon, 51264, columns_bytes + 4 * sizeof(Complex<double>));
  const double wall = time_per_call(b, reps, [&] { meson_correlators_wall_sink(ptr, 0, all); });
  report("wall sink, 7 meson channels", wall, 0, 0);
  return 0;
}

/// Gauge fixing on a random gauge field (fixed iterations, not a converged fix), by each method
/// that runs on the grid: time per iteration from the difference of N + 10 and 10 iterations, so
/// that the links' copies and the final transformation drop out; effective GB/s and the ratio to
/// the copy bandwidth. Bytes per site and iteration: overrelaxation reads 2 d links and 2 d + 1
/// transformations and writes one; Fourier acceleration reads as much for Delta, with the last
/// gradient and direction (4 complex numbers each), and writes Delta's 4; each Fourier pass reads
/// and writes them (one pass per radix of each fixed extent, forward and inverse), the filter
/// too, the direction reads 8 and writes 4, the line search's trial reads d links, d + 1
/// transformations and their directions, and the update reads a direction and a transformation
/// and writes it. Then the Fourier method's transforms alone (a forward and an inverse).
int bench_gaugefix() {
  const RunOptions run = setup_from_options();
  Coords dims{};
  long iters = 100;
  read_options(PETSC_COMM_WORLD, "", "latke-bench gaugefix options", [&](OptionGroup& o) {
    dims = o.coords("-latke_lattice", Coords{32, 32, 32, 64}, "Global lattice X,Y,Z,T");
    iters = o.integer("-latke_gauge_fix_iterations", iters, "Iterations per timing");
  });
  require(iters >= 1, "-latke_gauge_fix_iterations ", iters, ": expected 1 or more");
  const BenchContext ctx = open_bench("gaugefix", run, dims);
  const auto& lat = ctx.lat;
  const Backend b = ctx.b;
  const bool root = ctx.root;
  const double copy_gbs = ctx.copy_gbs, sites = ctx.sites;
  if (root) {
    std::printf("%-28s %12s %10s %8s\n", "gauge, method", "us/iteration", "GB/s", "vs copy");
  }
  const std::vector<Complex<double>> links = random_gauge(*lat, 20261204);
  for (GaugeFixingType t : {GaugeFixingType::coulomb, GaugeFixingType::landau})
    for (GaugeFixingMethod m : {GaugeFixingMethod::overrelaxation, GaugeFixingMethod::fourier}) {
      GaugeFixing p;
      p.type = t;
      p.method = m;
      p.tol = 1e-300;  // never reached: a fixed number of iterations
      const std::string label = std::string(to_string(t)) + ", " + to_string(m);
      const int d = t == GaugeFixingType::coulomb ? 3 : 4;
      if (m == GaugeFixingMethod::fourier && !LatticeFFT::supports(*lat, d == 3 ? 0x7u : 0xFu)) {
        if (root) std::printf("%-28s %12s  (a local extent has a prime factor above 13)\n", label.c_str(), "-");
        continue;
      }
      auto run_for = [&](long n) {
        p.max_iter = static_cast<int>(n);
        p.check_every = static_cast<int>(n);
        GaugeFixingResult r;
        fix_gauge(*lat, links, p, b, &r);
      };
      run_for(10);                        // untimed: tuning
      double base = 1e300, more = 1e300;  // the fastest of three of each: the difference is small on small lattices
      for (int k = 0; k < 3; ++k) {
        base = std::min(base, time_per_call(b, 1, [&] { run_for(10); }));
        more = std::min(more, time_per_call(b, 1, [&] { run_for(10 + iters); }));
      }
      double ms = (more - base) / static_cast<double>(iters);
      MPI_Allreduce(MPI_IN_PLACE, &ms, 1, MPI_DOUBLE, MPI_MAX, lat->comm());
      double complexes = (2 * d + 2 * d + 2) * 9;
      if (m == GaugeFixingMethod::fourier) {
        int passes = 0;
        for (int mu = 0; mu < d; ++mu) passes += static_cast<int>(LatticeFFT::radices(lat->local()[mu]).size());
        complexes = (2 * d + 2 * d + 1) * 9 + 4 + 8  // Delta, with the last gradient and direction
                    + 2 * passes * 8 + 8 + 12        // Fourier passes, filter, direction
                    + (2 * d + 1) * 9 + (d + 1) * 4  // the line search's trial
                    + 4 + 18;                        // the update
      }
      const double gbs = complexes * sizeof(Complex<double>) * sites / (ms * 1e-3) / 1e9;
      if (!root) continue;
      if (ms > 0)
        std::printf("%-28s %12.1f %10.1f %8.2f\n", label.c_str(), ms * 1e3, gbs, gbs / copy_gbs);
      else
        std::printf("%-28s %12s  (below the timer's resolution: more -latke_gauge_fix_iterations)\n", label.c_str(),
                    "-");
    }
  // The Fourier method's transforms alone: a forward and an inverse transform of its four complex
  // numbers per site over x, y, z (Coulomb) and over all four directions (Landau); each pass
  // reads and writes them, and a split direction adds its exchange across the ranks.
  for (unsigned dims : {0x7u, 0xFu}) {
    if (!LatticeFFT::supports(*lat, dims)) continue;
    constexpr int ncomp = 4;
    LatticeFFT fft(*lat, b, dims, ncomp);
    const std::size_t bytes = sizeof(Complex<double>) * ncomp * static_cast<std::size_t>(lat->volume());
    Buffer field(memory_for(b), bytes);
    zero_bytes(field.data(), bytes, memory_for(b), compute_stream());
    auto* data = static_cast<Complex<double>*>(field.data());
    auto both = [&] {
      fft.forward(data);
      fft.inverse(data);
    };
    both();  // untimed: tuning
    double ms = time_per_call(b, static_cast<int>(std::max(1L, iters / 10)), both);
    MPI_Allreduce(MPI_IN_PLACE, &ms, 1, MPI_DOUBLE, MPI_MAX, lat->comm());
    int passes = 0;
    for (int mu = 0; mu < 4; ++mu)
      if (dims >> mu & 1u) passes += static_cast<int>(LatticeFFT::radices(lat->local()[mu]).size());
    const double gbs = 2.0 * passes * 2 * ncomp * sizeof(Complex<double>) * sites / (ms * 1e-3) / 1e9;
    if (root)
      std::printf("%-28s %12.1f %10.1f %8.2f\n", dims == 0x7u ? "FFT x,y,z (4 fields)" : "FFT x,y,z,t (4 fields)",
                  ms * 1e3, gbs, gbs / copy_gbs);
  }
  return 0;
}

}  // namespace latke

int main(int argc, char** argv) {
  PetscCall(PetscInitialize(&argc, &argv, nullptr, help));
  int status = 0;
  int rank = 0;
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  try {
    const std::string command = argc > 1 && argv[1][0] != '-' ? argv[1] : "dslash";
    latke::require(command == "dslash" || command == "multimass" || command == "mg" || command == "schwarz" ||
                       command == "machine" || command == "smear" || command == "contract" || command == "gaugefix",
                   "unknown benchmark '", command,
                   "': expected dslash, multimass, mg, schwarz, machine, smear, contract or gaugefix");
    status = command == "dslash"     ? latke::bench_dslash()
             : command == "machine"  ? latke::bench_machine()
             : command == "smear"    ? latke::bench_smear()
             : command == "contract" ? latke::bench_contract()
             : command == "gaugefix" ? latke::bench_gaugefix()
             : command == "mg"       ? latke::bench_mg()
             : command == "schwarz"  ? latke::bench_schwarz()
                                     : latke::bench_multimass();
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "latke-bench: error: %s\n", e.what());
    status = 1;
  }
  try {
    latke::warn_unused_options("latke-bench");
  } catch (const std::exception&) {  // a report, never a reason to fail
  }
  // The kernels and policies tuned here, kept in LATKE_RESOURCE_PATH for later runs (as
  // LatkeFinalize keeps them; every benchmark, not only those that call it).
  try {
    if (rank == 0) latke::save_tune_cache();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "latke-bench: error: %s\n", e.what());
    status = 1;
  }
  PetscCall(PetscFinalize());
  return status;
}
