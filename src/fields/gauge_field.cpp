// Gauge fields: upload from and download to the host lexicographic layout.
#include "src/fields/gauge_field.h"

#include <mpi.h>

#include <cmath>

#include "src/core/error.h"
#include "src/core/indexing.h"
#include "src/core/launch.h"
#include "src/core/log.h"

namespace latke {

namespace {

template <typename Store, Reconstruct R>
struct LexGaugeKernel {  // host only
  GaugeAccessor<Store, R, double> field;
  Complex<double>* host;
  LocalGeometry geom;
  bool to_field;
  void operator()(int x_cb, int parity) const {
    int c[4];
    const long site = geom.coords(x_cb, parity, c);
    for (int mu = 0; mu < 4; ++mu) {
      ColorMatrix<double, 3> u;
      Complex<double>* h = host + (site * 4 + mu) * 9;
      if (to_field) {
        for (int k = 0; k < 9; ++k) u.e[k / 3][k % 3] = h[k];
        field.save(u, mu, x_cb, parity);
      } else {
        u = field.load(mu, x_cb, parity);
        for (int k = 0; k < 9; ++k) h[k] = u.e[k / 3][k % 3];
      }
    }
  }
};

/// to = from, link by link, in double (the rounding of from_lexicographic's host conversion).
template <typename SF, Reconstruct RF, typename ST, Reconstruct RT>
struct ConvertGaugeKernel {
  GaugeAccessor<SF, RF, double> from;
  GaugeAccessor<ST, RT, double> to;
  LATKE_HOST_DEVICE void operator()(int x_cb, int parity) const {
    for (int mu = 0; mu < 4; ++mu) to.save(from.load(mu, x_cb, parity), mu, x_cb, parity);
  }
};

struct MaxEntry {
  double m = 0;
  LATKE_HOST_DEVICE MaxEntry& operator+=(const MaxEntry& o) {
    m = o.m > m ? o.m : m;
    return *this;
  }
};

/// The largest |re|, |im| of a site's links over their first `rows` rows (a half field's scale).
template <typename SF, Reconstruct RF>
struct MaxEntryKernel {
  GaugeAccessor<SF, RF, double> from;
  int rows;
  LATKE_HOST_DEVICE MaxEntry operator()(int x_cb, int parity) const {
    MaxEntry r;
    for (int mu = 0; mu < 4; ++mu) {
      const auto u = from.load(mu, x_cb, parity);
      for (int i = 0; i < rows; ++i)
        for (int j = 0; j < 3; ++j) r += MaxEntry{fmax(fabs(u.e[i][j].re), fabs(u.e[i][j].im))};
    }
    return r;
  }
};

template <typename F>
void dispatch_gauge(Precision p, Reconstruct r, F&& f) {
  dispatch_precision(p, [&](auto s) {
    if (r == Reconstruct::r12) f(s, std::integral_constant<Reconstruct, Reconstruct::r12>{});
    else f(s, std::integral_constant<Reconstruct, Reconstruct::r18>{});
  });
}

}  // namespace

Su3Deviation su3_link_deviation(const Complex<double>* u) {
  Su3Deviation d;
  bool finite = true;
  for (int k = 0; k < 9; ++k) finite = finite && std::isfinite(u[k].re) && std::isfinite(u[k].im);
  if (!finite) {
    d.unitarity = d.det = HUGE_VAL;
    return d;
  }
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      Complex<double> s;
      for (int k = 0; k < 3; ++k) s += u[3 * i + k] * conj(u[3 * j + k]);
      s -= Complex<double>(i == j ? 1.0 : 0.0);
      d.unitarity = std::fmax(d.unitarity, std::sqrt(norm2(s)));
    }
  const Complex<double> det =
      u[0] * (u[4] * u[8] - u[5] * u[7]) - u[1] * (u[3] * u[8] - u[5] * u[6]) + u[2] * (u[3] * u[7] - u[4] * u[6]);
  d.det = std::sqrt(norm2(det - Complex<double>(1.0)));
  // Finite entries can still overflow (|u| ~ 1e200): such a link is as far from SU(3) as can be.
  if (!(d.unitarity <= HUGE_VAL)) d.unitarity = HUGE_VAL;
  if (!(d.det <= HUGE_VAL)) d.det = HUGE_VAL;
  return d;
}

double su3_deviation(const std::vector<Complex<double>>& h) {
  double worst = 0;
  const long n = static_cast<long>(h.size() / 9);
  // Threads: a 32^3x64 configuration has 8.4 million links, checked at every upload.
#pragma omp parallel for schedule(static) reduction(max : worst)
  for (long m9 = 0; m9 < n; ++m9) worst = std::fmax(worst, su3_link_deviation(&h[9 * m9]).worst());
  return worst;
}

GaugeField::GaugeField(std::shared_ptr<const Lattice> lattice, const GaugeParam& param)
    : lattice_(std::move(lattice)), param_(param) {
  bytes_ = 8ul * static_cast<int>(param.reconstruct) * lattice_->volume_cb() * real_bytes(param.precision);
  data_ = std::make_shared<Buffer>(memory_for(param.backend), bytes_);
  zero_bytes(data_->data(), bytes_, memory_for(param.backend), compute_stream());
}

void GaugeField::from_lexicographic(const std::vector<Complex<double>>& host, bool su3_checked) {
  const LogScope log(LogEvent::link_upload, 0, true);
  const std::size_t want = static_cast<std::size_t>(lattice_->volume()) * 36;
  require(host.size() == want, "gauge field: host array has ", host.size(), " complex numbers, expected ",
          want, " (local volume x 4 directions x 3 x 3)");
  if (param_.reconstruct == Reconstruct::r12 && !su3_checked) {
    double dev = su3_deviation(host), worst = 0;
    MPI_Allreduce(&dev, &worst, 1, MPI_DOUBLE, MPI_MAX, lattice_->comm());
    require(worst <= 1e-6, "reconstruct 12 needs SU(3) links, but the links deviate from SU(3) by ",
            worst, " (expected at most 1e-6); reunitarize them or use reconstruct 18");
  }
  if (param_.precision == Precision::half) {  // the largest stored entry (rows 0 and 1 with 12 reals)
    const int rows = static_cast<int>(param_.reconstruct) / 6;
    const long n = static_cast<long>(host.size());
    double m = 0, gm = 0;
#pragma omp parallel for schedule(static) reduction(max : m)
    for (long i = 0; i < n; ++i)
      if (i % 9 < 3 * rows) m = std::fmax(m, std::fmax(std::fabs(host[i].re), std::fabs(host[i].im)));
    MPI_Allreduce(&m, &gm, 1, MPI_DOUBLE, MPI_MAX, lattice_->comm());
    scale_ = gm > 0 ? static_cast<float>(gm) : 1.0f;
  }
  GaugeParam hp = param_;
  hp.backend = Backend::cpu;
  GaugeField stage = param_.backend == Backend::cpu ? *this : GaugeField(lattice_, hp);
  stage.scale_ = scale_;
  convert(stage, const_cast<Complex<double>*>(host.data()), true);
  if (param_.backend != Backend::cpu) {
    copy_bytes(data_->data(), stage.data_->data(), bytes_, compute_stream());
    synchronize(compute_stream());
  }
}

bool GaugeField::converts(const GaugeParam& from, const GaugeParam& to) {
  return from.backend == to.backend && real_bytes(from.precision) >= real_bytes(to.precision) &&
         (from.reconstruct == Reconstruct::r18 || to.reconstruct == Reconstruct::r12);
}

void GaugeField::copy_from(const GaugeField& from) {
  const LogScope log(LogEvent::link_upload, 0, true);
  require(from.lattice_->local() == lattice_->local() && from.backend() == backend(),
          "gauge field copy: the source lives on another lattice or backend");
  require(real_bytes(from.precision()) >= real_bytes(precision()), "gauge field copy: links in ",
          to_string(from.precision()), " cannot give links in ", to_string(precision()));
  require(from.reconstruct() == Reconstruct::r18 || reconstruct() == Reconstruct::r12,
          "gauge field copy: links stored as 12 reals cannot give links of 18 (the third rows are not stored)");
  const int vcb = lattice_->volume_cb();
  dispatch_gauge(from.precision(), from.reconstruct(), [&](auto sf, auto rf) {
    using SF = decltype(sf);
    constexpr Reconstruct RF = decltype(rf)::value;
    const GaugeAccessor<SF, RF, double> src = from.accessor<SF, RF, double>();
    if (precision() == Precision::half) {
      const double m = launch_reduce<MaxEntry>(
                           backend(), MaxEntryKernel<SF, RF>{src, static_cast<int>(reconstruct()) / 6}, {vcb, 0, 2})
                           .m;
      double gm = 0;
      MPI_Allreduce(&m, &gm, 1, MPI_DOUBLE, MPI_MAX, lattice_->comm());
      scale_ = gm > 0 ? static_cast<float>(gm) : 1.0f;
    }
    dispatch_gauge(precision(), reconstruct(), [&](auto st, auto rt) {
      using ST = decltype(st);
      constexpr Reconstruct RT = decltype(rt)::value;
      if constexpr (sizeof(SF) >= sizeof(ST) && (RF == Reconstruct::r18 || RT == Reconstruct::r12))  // converts()
        launch(backend(), ConvertGaugeKernel<SF, RF, ST, RT>{src, accessor<ST, RT, double>()}, {vcb, 0, 2});
    });
  });
  synchronize(backend());
}

void GaugeField::to_lexicographic(std::vector<Complex<double>>& host) const {
  host.assign(static_cast<std::size_t>(lattice_->volume()) * 36, Complex<double>());
  GaugeParam hp = param_;
  hp.backend = Backend::cpu;
  GaugeField stage = param_.backend == Backend::cpu ? *this : GaugeField(lattice_, hp);
  stage.scale_ = scale_;
  if (param_.backend != Backend::cpu) {
    synchronize(param_.backend);
    copy_bytes(stage.data_->data(), data_->data(), bytes_, compute_stream());
    synchronize(compute_stream());
  }
  convert(stage, host.data(), false);
}

void GaugeField::convert(const GaugeField& stage, Complex<double>* host, bool to_field) const {
  const LocalGeometry g = LocalGeometry::of(*lattice_);
  dispatch_gauge(param_.precision, param_.reconstruct, [&](auto s, auto r) {
    using S = decltype(s);
    constexpr Reconstruct R = decltype(r)::value;
    launch_cpu(LexGaugeKernel<S, R>{stage.accessor<S, R, double>(), host, g, to_field}, {lattice_->volume_cb(), 0, 2});
  });
}

}  // namespace latke
