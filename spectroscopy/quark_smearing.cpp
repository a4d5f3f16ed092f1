// Quark smearing (quark_smearing.h): the field in double on an extended field with ghosts in
// the split spatial dimensions (the kernel takes periodic images of the others itself), one
// kernel per step over the local sites in lexicographic order (consecutive threads read
// consecutive words of every neighbour), then back into the field's own layout.
#include "spectroscopy/quark_smearing.h"

#include <utility>

#include "src/core/error.h"
#include "src/core/indexing.h"
#include "src/core/launch.h"
#include "src/core/log.h"
#include "src/fields/extended_links.h"
#include "src/fields/precision.h"

namespace latke {

namespace {

using gauge::ExtLinks;
using gauge::ExtSites;

constexpr int n_comp = 12;  // spin-major: component 3 s + c

/// Between a full Wilson field's blocks and the extended field's local sites of the range.
template <typename Store>
struct CopyKernel {
  SpinorAccessor<Store, 3, 4> f[2];  ///< by site parity
  ExtSites ext;
  LocalGeometry geom;
  int first;  ///< the range's first lexicographic site (a time slice's, or 0)
  bool to_ext;
  LATKE_HOST_DEVICE void operator()(int i, int) const {
    int c[4];
    const int parity = geom.lex_coords(first + i, c), x_cb = (first + i) >> 1;
    const long e = ext.index_of_local(c);
    if (to_ext) {
      const auto s = f[parity].load(x_cb);
      for (int k = 0; k < n_comp; ++k) ext.at(k, e) = Complex<double>(s.d[k / 3][k % 3]);
    } else {
      typename SpinorAccessor<Store, 3, 4>::Spinor s;
      for (int k = 0; k < n_comp; ++k) {
        const Complex<double> z = ext.at(k, e);
        s.d[k / 3][k % 3].re = z.re;
        s.d[k / 3][k % 3].im = z.im;
      }
      f[parity].save(s, x_cb);
    }
  }
};

/// out = a in + b H in on the range's sites, consecutive threads on consecutive x. Neighbours
/// across a split dimension are the ghosts; across an unsplit one, the periodic image.
struct SmearStepKernel {
  ExtLinks links;
  ExtSites in, out;
  LocalGeometry geom;
  int first;
  int split[3];
  double a, b;
  LATKE_HOST_DEVICE void operator()(int i, int) const {
    int c[4];
    geom.lex_coords(first + i, c);
    const long e = in.index_of_local(c);
    Complex<double> h[n_comp];
    for (int d = 0; d < 3; ++d) {
      const long s = in.stride[d];
      const long fwd = split[d] || c[d] < geom.L[d] - 1 ? e + s : e - (geom.L[d] - 1) * s;
      const long bwd = split[d] || c[d] > 0 ? e - s : e + (geom.L[d] - 1) * s;
      ColorMatrix<double, 3> u, v;
      links.load(e, d, u);
      links.load(e - s, d, v);  // the links' ghosts are complete
      for (int sp = 0; sp < 4; ++sp)
        for (int r = 0; r < 3; ++r) {
          Complex<double> acc = h[3 * sp + r];
          for (int k = 0; k < 3; ++k) {
            acc += u.e[r][k] * in.at(3 * sp + k, fwd);
            acc += conj_mul(v.e[k][r], in.at(3 * sp + k, bwd));
          }
          h[3 * sp + r] = acc;
        }
    }
    for (int k = 0; k < n_comp; ++k) out.at(k, e) = a * in.at(k, e) + b * h[k];
  }
};

}  // namespace

const char* to_string(QuarkSmearingType t) {
  switch (t) {
    case QuarkSmearingType::none:
      return "none";
    case QuarkSmearingType::wuppertal:
      return "wuppertal";
    case QuarkSmearingType::gaussian:
      return "gaussian";
  }
  return "?";
}

QuarkSmearer::QuarkSmearer(const Lattice& lat, Backend backend, const std::vector<Complex<double>>& links,
                           const QuarkSmearing& p)
    : lat_(lat), backend_(backend), p_(p) {
  require(p.steps >= 0, "quark smearing: ", p.steps, " steps, expected 0 or more");
  if (p.type != QuarkSmearingType::none && p.steps > 0)
    require(p.alpha > 0, to_string(p.type), " smearing: ", p.type == QuarkSmearingType::gaussian ? "omega " : "alpha ",
            p.alpha, ", expected a positive number");
  if (p.type == QuarkSmearingType::none || p.steps == 0) return;
  for (int mu = 0; mu < 3; ++mu)
    require(lat.local()[mu] >= 2, "quark smearing: local extent ", lat.local()[mu], " in direction ", mu,
            ", expected at least 2");
  links_ = std::make_unique<gauge::ExtendedLinks>(lat, backend);
  links_->upload(links);
  unsigned split = 0;  // ghosts only where a spatial dimension is split; the kernel wraps the others
  for (int d = 0; d < 3; ++d)
    if (lat.partitioned(d)) split |= 1u << d;
  a_ = std::make_unique<gauge::ExtendedSites>(lat, backend, n_comp, split);
  b_ = std::make_unique<gauge::ExtendedSites>(lat, backend, n_comp, split);
}

QuarkSmearer::~QuarkSmearer() = default;

void QuarkSmearer::apply(ColorSpinorField& psi, int t) {
  if (!links_) return;
  const LogScope log(LogEvent::smear);
  require(psi.nspin() == 4 && psi.ncolor() == 3 && psi.n_parity() == 2, "quark smearing: a field of ", psi.nspin(),
          " spins, ", psi.ncolor(), " colours and ", psi.n_parity(), " parities; expected a full Wilson field");
  require(psi.lattice().local() == lat_.local() && psi.lattice().offset() == lat_.offset(),
          "quark smearing: the field's lattice is not the smearer's");
  require(psi.backend() == backend_, "quark smearing: the field is on another backend than the smearer");
  require(t >= -1 && t < lat_.global()[3], "quark smearing: time slice ", t, ", expected 0 to ", lat_.global()[3] - 1,
          " (or -1: every slice)");
  double a, b;
  if (p_.type == QuarkSmearingType::wuppertal) {
    a = 1 / (1 + 6 * p_.alpha);
    b = p_.alpha / (1 + 6 * p_.alpha);
  } else {
    b = p_.alpha * p_.alpha / (4.0 * p_.steps);
    a = 1 - 6 * b;
  }
  // The sites smeared here: one local time slice, or all. The ghost exchanges are collective,
  // so a rank without the slice still takes part in them (with nothing to launch).
  const LocalGeometry geom = LocalGeometry::of(lat_);
  const int v3 = geom.L[0] * geom.L[1] * geom.L[2];
  int n = v3 * geom.L[3], first = 0;
  if (t >= 0) {
    const int lt = t - lat_.offset()[3];
    n = lt >= 0 && lt < geom.L[3] ? v3 : 0;
    first = n ? lt * v3 : 0;
  }
  SmearStepKernel step{};
  step.links = links_->view();
  step.geom = geom;
  step.first = first;
  for (int d = 0; d < 3; ++d) step.split[d] = lat_.partitioned(d) ? 1 : 0;
  step.a = a;
  step.b = b;
  dispatch_precision(psi.precision(), [&](auto s) {
    using S = decltype(s);
    CopyKernel<S> k{};
    for (int blk = 0; blk < 2; ++blk) k.f[psi.block_parity(blk)] = psi.accessor<S, 3, 4>(blk);
    k.ext = a_->sites();
    k.geom = geom;
    k.first = first;
    k.to_ext = true;
    if (n) launch(backend_, k, {n, 0, 1});
    gauge::ExtendedSites* in = a_.get();
    gauge::ExtendedSites* out = b_.get();
    for (int i = 0; i < p_.steps; ++i) {
      in->refresh_components(0, n_comp);  // exchanges only where a spatial dimension is split
      step.in = in->sites();
      step.out = out->sites();
      if (n) launch(backend_, step, {n, 0, 1});
      std::swap(in, out);
    }
    k.ext = in->sites();
    k.to_ext = false;
    if (n) launch(backend_, k, {n, 0, 1});
  });
}

}  // namespace latke
