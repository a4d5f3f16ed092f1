// Link smearing (link_smearing.h): one kernel per step over the local sites, reading the links
// and their ghosts from one extended field and writing the other, whose ghosts are then
// refreshed.
#include "src/fields/link_smearing.h"

#include <utility>

#include "src/core/error.h"
#include "src/core/launch.h"
#include "src/core/log.h"
#include "src/fields/gauge_measure.h"
#include "src/fields/staples.h"
#include "src/fields/su3_smear.h"

namespace latke {

namespace gauge {
namespace {

struct SmearStepKernel {
  ExtLinks in, out;
  LocalGeometry geom;
  LinkSmearingType type;
  double alpha;
  int n_smeared;  ///< directions 0 .. n_smeared - 1 are smeared (3 or 4), the others copied
  LATKE_HOST_DEVICE void operator()(int x_cb, int parity) const {
    int c[4];
    geom.coords(x_cb, parity, c);
    const long e = in.index_of_local(c);
    for (int mu = 0; mu < 4; ++mu) {
      M3 u;
      in.load(e, mu, u);
      if (mu < n_smeared) {
        const M3 s = adjoint(staples(in, e, mu, n_smeared));  // S: U S^dag is the plaquettes' sum
        if (type == LinkSmearingType::ape) {
          const double w = alpha / (2 * (n_smeared - 1));
          M3 x;
          LATKE_UNROLL for (int i = 0; i < 3; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j) x.e[i][j] =
              (1 - alpha) * u.e[i][j] + w * s.e[i][j];
          u = project_su3(x);
        } else {
          const M3 w = mul_adj(s, u);  // S U^dag; rho applied below
          // Q = (i/2)(W^dag - W) - (i/6) tr(W^dag - W), W = rho S U^dag: Hermitian, traceless
          M3 q;
          Complex<double> tr;
          LATKE_UNROLL for (int i = 0; i < 3; ++i) tr += conj(w.e[i][i]) - w.e[i][i];
          LATKE_UNROLL for (int i = 0; i < 3; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j) {
            Complex<double> d = conj(w.e[j][i]) - w.e[i][j];
            if (i == j) d -= (1.0 / 3) * tr;
            q.e[i][j] = Complex<double>(-0.5 * alpha * d.im, 0.5 * alpha * d.re);  // (i/2) rho d
          }
          u = exp_i_hermitian(q) * u;
        }
      }
      out.save(e, mu, u);
    }
  }
};

}  // namespace

void smear(ExtendedLinks& links, ExtendedLinks& scratch, const LinkSmearing& p) {
  check(p);
  if (p.type == LinkSmearingType::none) return;
  require(&links.lattice() == &scratch.lattice() && links.backend() == scratch.backend(),
          "link smearing: the scratch field is not of the links' lattice and backend");
  ExtendedLinks* in = &links;
  ExtendedLinks* out = &scratch;
  for (int s = 0; s < p.steps; ++s) {
    launch(links.backend(),
           SmearStepKernel{in->view(), out->view(), in->geometry(), p.type, p.alpha, p.spatial ? 3 : 4},
           {links.lattice().volume_cb(), 0, 2});
    out->refresh();
    std::swap(in, out);
  }
  if (in != &links) {  // an odd number of steps: the result, ghosts included, back into links
    const ExtSites from = in->sites();
    copy_bytes(links.sites().data, from.data, static_cast<std::size_t>(from.ext_volume) * 36 * sizeof(Complex<double>),
               compute_stream());
  }
}

}  // namespace gauge

const char* to_string(LinkSmearingType t) {
  switch (t) {
    case LinkSmearingType::none:
      return "none";
    case LinkSmearingType::ape:
      return "ape";
    case LinkSmearingType::stout:
      return "stout";
  }
  return "?";
}

void check(const LinkSmearing& p) {
  require(p.steps >= 0, "link smearing: ", p.steps, " steps, expected 0 or more");
  if (p.type == LinkSmearingType::ape)
    require(p.alpha >= 0 && p.alpha <= 1, "APE link smearing: alpha ", p.alpha, ", expected 0 to 1");
  if (p.type == LinkSmearingType::stout)
    require(p.alpha >= 0 && p.alpha <= 1, "stout link smearing: rho ", p.alpha,
            ", expected 0 to 1 (0.1 to 0.2 is usual; larger steps lose smoothness)");
}

std::vector<Complex<double>> smear_links(const Lattice& lat, const std::vector<Complex<double>>& links,
                                         const LinkSmearing& p, Backend b) {
  check(p);
  if (p.type == LinkSmearingType::none || p.steps == 0) return links;
  const LogScope log(LogEvent::smear);
  gauge::ExtendedLinks a(lat, b), c(lat, b);
  a.upload(links);
  gauge::smear(a, c, p);
  // No silent wrong links: a singular or non-finite sum to project (or input) shows here.
  const double dev = gauge::measure(a).unitarity;
  require(dev < 1e-10, to_string(p.type), " link smearing: a smeared link deviates ", dev,
          " from SU(3) (the largest |U U^dag - 1| entry or |det U - 1|; expected below 1e-10): the input links "
          "or the sums of ",
          p.type == LinkSmearingType::ape ? "(1 - alpha) U and alpha / n staples" : "rho times the staples",
          " are not fit for it; check the configuration, or use other smearing parameters");
  return a.download();
}

}  // namespace latke
