// The quenched generator (gauge_generator.h): the update kernel for one direction and parity,
// and the passes built from it.
#include "src/fields/gauge_generator.h"

#include <mpi.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "src/core/error.h"
#include "src/core/launch.h"
#include "src/core/log.h"
#include "src/fields/extended_links.h"
#include "src/fields/gauge_measure.h"
#include "src/fields/random.h"
#include "src/fields/staples.h"
#include "src/fields/su3_update.h"

namespace latke {

namespace gauge {
namespace {

/// Heat-bath or over-relaxation update of U_mu on the sites of one parity.
struct LinkUpdateKernel {
  ExtLinks ext;
  LocalGeometry geom;
  int offset[4], global[4];
  int mu;
  bool heatbath;
  double beta;
  std::uint32_t key[2];
  std::uint32_t pass;
  /// Which sites: 0 all, 1 those on the faces of the dimensions split over ranks (bits of
  /// split: the faces the neighbours need), 2 the others (which read no ghost of a split
  /// dimension: the exchange overlaps them).
  int region = 0;
  int split = 0;

  LATKE_HOST_DEVICE void operator()(int x_cb, int parity) const {
    int c[4];
    geom.coords(x_cb, parity, c);
    if (region != 0) {
      bool face = false;
      for (int d = 0; d < 4; ++d) face = face || (((split >> d) & 1) && (c[d] == 0 || c[d] == geom.L[d] - 1));
      if (face != (region == 1)) return;
    }
    const long e = ext.index_of_local(c);
    const M3 a = staples(ext, e, mu);  // U_mu(x) a: the six plaquettes through the link
    M3 u;
    ext.load(e, mu, u);
    if (heatbath) {
      std::uint64_t site = 0;
      for (int d = 3; d >= 0; --d) site = site * global[d] + (c[d] + offset[d]);
      const CounterRng rng{
          {key[0], key[1]},
          {static_cast<std::uint32_t>(site),
           (static_cast<std::uint32_t>(site >> 32) & 0x0fffffffu) | (static_cast<std::uint32_t>(mu) << 28), pass}};
      heatbath_link(u, a, beta, rng);
    } else {
      overrelax_link(u, a);
    }
    ext.save(e, mu, u);
  }
};

}  // namespace
}  // namespace gauge

const char* to_string(GaugeStart s) {
  switch (s) {
    case GaugeStart::cold:
      return "cold";
    case GaugeStart::hot:
      return "hot";
    default:
      return "weak";
  }
}

GaugeStart parse_gauge_start(const std::string& name) {
  if (name == "cold") return GaugeStart::cold;
  if (name == "hot") return GaugeStart::hot;
  if (name == "weak") return GaugeStart::weak;
  fail("unknown start '", name, "': expected cold, hot or weak");
}

namespace {
/// LATKE_GAUGE_OVERLAP=0 exchanges the faces after the whole update (for comparisons).
bool overlap_exchange() {
  static const bool on = [] {
    const char* v = std::getenv("LATKE_GAUGE_OVERLAP");
    return !(v && std::string(v) == "0");
  }();
  return on;
}
}  // namespace

struct QuenchedGenerator::Impl {
  std::shared_ptr<const Lattice> lat;
  Backend backend;
  HeatbathParam param;
  gauge::ExtendedLinks links;
  long passes = 0;
  double updates = 0;

  Impl(std::shared_ptr<const Lattice> l, Backend b, const HeatbathParam& p)
      : lat(std::move(l)), backend(b), param(p), links(*lat, b) {}

  void pass(bool heatbath) {
    gauge::LinkUpdateKernel k{};
    k.ext = links.view();
    k.geom = links.geometry();
    for (int d = 0; d < 4; ++d) {
      k.offset[d] = lat->offset()[d];
      k.global[d] = lat->global()[d];
    }
    k.heatbath = heatbath;
    k.beta = param.beta;
    k.key[0] = static_cast<std::uint32_t>(param.seed);
    k.key[1] = static_cast<std::uint32_t>(param.seed >> 32);
    k.pass = static_cast<std::uint32_t>(passes);
    for (int d = 0; d < 4; ++d) k.split |= lat->partitioned(d) << d;
    // On several ranks the sites on the split faces go first, and the others' update
    // overlaps the exchange of those faces (every site's update within a sub-sweep is
    // independent of the others', so the order changes no bit).
    const bool overlap = k.split != 0 && overlap_exchange();
    for (int mu = 0; mu < 4; ++mu) {
      k.mu = mu;
      for (int parity = 0; parity < 2; ++parity) {
        // Not tunable: the kernel updates in place, so it must run exactly once.
        k.region = overlap ? 1 : 0;
        launch(backend, k, {lat->volume_cb(), parity, 1}, compute_stream(), false);
        if (!overlap) {
          links.refresh(mu, mu + 1, parity);  // the links this sub-sweep updated
          continue;
        }
        links.refresh(mu, mu + 1, parity, [&] {
          k.region = 2;
          launch(backend, k, {lat->volume_cb(), parity, 1}, compute_stream(), false);
        });
      }
    }
    if (heatbath) ++passes;
    updates += 4.0 * static_cast<double>(lat->volume()) * lat->size();
  }
};

QuenchedGenerator::QuenchedGenerator(std::shared_ptr<const Lattice> lattice, Backend b, const HeatbathParam& param)
    : impl_(std::make_unique<Impl>(std::move(lattice), b, param)) {
  require(param.beta >= 0 && std::isfinite(param.beta), "beta ", param.beta, ": expected a coupling of 0 or more");
  require(param.overrelax >= 0, "over-relaxation passes per sweep ", param.overrelax, ": expected 0 or more");
  start(GaugeStart::cold);
}

QuenchedGenerator::~QuenchedGenerator() = default;

void QuenchedGenerator::start(GaugeStart s) {
  const Lattice& lat = *impl_->lat;
  std::vector<Complex<double>> host;
  // The starts have their own keys, apart from the heat bath's.
  const std::uint64_t seed = impl_->param.seed ^ 0x68756e6b5f737461ull;
  if (s == GaugeStart::cold) {
    host.assign(static_cast<std::size_t>(lat.volume()) * 36, Complex<double>());
    for (long i = 0; i < lat.volume() * 4; ++i)
      for (int d = 0; d < 3; ++d) host[i * 9 + 4 * d] = Complex<double>(1.0);
  } else {
    host = random_gauge(lat, seed, s == GaugeStart::hot ? -1.0 : impl_->param.weak_spread);
  }
  set_links(host, 0);
}

void QuenchedGenerator::set_links(const std::vector<Complex<double>>& links, long passes_done) {
  require(passes_done >= 0, "heat-bath passes done ", passes_done, ": expected 0 or more");
  impl_->links.upload(links);
  impl_->passes = passes_done;
}

std::vector<Complex<double>> QuenchedGenerator::links() const { return impl_->links.download(); }

void QuenchedGenerator::sweep(int n) {
  const LogScope log(LogEvent::gauge_update);
  for (int i = 0; i < n; ++i) {
    heatbath_pass();
    for (int k = 0; k < impl_->param.overrelax; ++k) overrelax_pass();
  }
}

void QuenchedGenerator::heatbath_pass() { impl_->pass(true); }
void QuenchedGenerator::overrelax_pass() { impl_->pass(false); }

GaugeObservables QuenchedGenerator::measure() const { return gauge::measure(impl_->links); }

double QuenchedGenerator::action() const { return wilson_action(*impl_->lat, impl_->param.beta, measure().plaquette); }

long QuenchedGenerator::heatbath_passes() const { return impl_->passes; }
double QuenchedGenerator::link_updates() const { return impl_->updates; }
const HeatbathParam& QuenchedGenerator::param() const { return impl_->param; }
const Lattice& QuenchedGenerator::lattice() const { return *impl_->lat; }
Backend QuenchedGenerator::backend() const { return impl_->backend; }

}  // namespace latke
