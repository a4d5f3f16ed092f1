// The staggered operator: checks, link upload (long links at 12 reals when they are a real
// multiple of SU(3)), ghost links for split dimensions, and the composition of the fused
// kernel into the full, normal and even-odd solve forms (formulas in staggered.h).
#include "operators/staggered/staggered.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>

#include "src/core/error.h"
#include "src/core/log.h"
#include "operators/staggered/staggered_launch.h"

namespace latke {

const char* to_string(StaggeredType t) { return t == StaggeredType::naive ? "naive" : "asqtad"; }

StaggeredType parse_staggered_type(const std::string& name) {
  if (name == "naive") return StaggeredType::naive;
  if (name == "asqtad") return StaggeredType::asqtad;
  fail("unknown staggered operator '", name, "': expected naive or asqtad");
}

AsqtadCoefficients AsqtadCoefficients::asqtad(double u0) {
  require(u0 > 0 && std::isfinite(u0), "tadpole factor u0 = ", u0, ": expected a positive number");
  AsqtadCoefficients c;
  const double u2 = 1.0 / (u0 * u0), u4 = u2 * u2, u6 = u4 * u2;
  c.three_staple *= u2;
  c.five_staple *= u4;
  c.seven_staple *= u6;
  c.lepage *= u4;
  c.naik *= u2;
  return c;
}

namespace {

using namespace staggered;

std::size_t face_bytes_for(Precision p) {
  return dispatch_precision(p, [](auto s) { return face_site_bytes<decltype(s), 6>(); });
}

/// Links along mu on the rank behind's last `depth` slices, received from it: [k][site of
/// the slice, lexicographic over the other three coordinates][3x3], k = 0 for its slice
/// L - depth.
std::vector<Complex<double>> behind_slices(const Lattice& lat, const std::vector<Complex<double>>& links, int mu,
                                           int depth) {
  const Coords L = lat.local();
  const long slice_sites = lat.volume() / L[mu];
  std::vector<Complex<double>> send(depth * slice_sites * 9), recv(send.size());
  std::vector<long> count(depth, 0);
  for (long s = 0; s < lat.volume(); ++s) {
    const Coords c = lat.coords_of(s);
    const int k = c[mu] - (L[mu] - depth);
    if (k < 0) continue;
    std::copy_n(links.begin() + (s * 4 + mu) * 9, 9, send.begin() + (k * slice_sites + count[k]++) * 9);
  }
  const int n = static_cast<int>(send.size() * 2);
  MPI_Sendrecv(send.data(), n, MPI_DOUBLE, lat.neighbour(mu, +1), 600 + mu, recv.data(), n, MPI_DOUBLE,
               lat.neighbour(mu, -1), 600 + mu, lat.comm(), MPI_STATUS_IGNORE);
  return recv;
}

/// Stores received slices (behind_slices) as the kernel reads them: block 2k + parity (k = 0
/// for fat links), face index = the site's index on its slice / 2 (staggered_kernel.h).
template <typename Store, Reconstruct R>
Buffer encode_ghost(const Lattice& lat, const std::vector<Complex<double>>& slices, int mu, int depth, double factor,
                    float scale, Backend backend) {
  const Coords L = lat.local();
  const int face_cb = lat.face_volume_cb(mu);
  const std::size_t bytes = static_cast<std::size_t>(2 * depth) * face_cb * static_cast<int>(R) * sizeof(Store);
  Buffer host(MemoryKind::host, bytes);
  GaugeAccessor<Store, R, double> g;
  g.data = static_cast<Store*>(host.data());
  g.scale = scale;
  g.stride = face_cb;
  int o[3], n = 0;
  for (int nu = 0; nu < 4; ++nu)
    if (nu != mu) o[n++] = nu;
  const long slice_sites = 2L * face_cb;
  for (int k = 0; k < depth; ++k) {
    const int slice = L[mu] - depth + k;  // on the sender
    for (long i = 0; i < slice_sites; ++i) {
      const int a = static_cast<int>(i % L[o[0]]), b = static_cast<int>((i / L[o[0]]) % L[o[1]]),
                c = static_cast<int>(i / (static_cast<long>(L[o[0]]) * L[o[1]]));
      const int parity = (a + b + c + slice) & 1;
      ColorMatrix<double, 3> u;
      for (int e = 0; e < 9; ++e) u.e[e / 3][e % 3] = factor * slices[(k * slice_sites + i) * 9 + e];
      g.save(u, k, static_cast<int>(i >> 1), parity);
    }
  }
  if (backend == Backend::cpu) return host;
  Buffer dev(memory_for(backend), bytes);
  copy_bytes(dev.data(), host.data(), bytes, compute_stream());
  synchronize(compute_stream());
  return dev;
}

template <typename F>
void dispatch_storage(Precision p, Reconstruct r, F&& f) {
  dispatch_precision(p, [&](auto s) {
    if (r == Reconstruct::r12)
      f(s, std::integral_constant<Reconstruct, Reconstruct::r12>{});
    else
      f(s, std::integral_constant<Reconstruct, Reconstruct::r18>{});
  });
}

}  // namespace

void check_staggered_param(const Lattice& lat, const StaggeredParam& p) {
  require(std::isfinite(p.mass) && p.mass >= 0, "staggered mass ", p.mass, ": expected a number >= 0 (M = 2m + D)");
  for (int mu = 0; mu < 4; ++mu)
    require(std::fabs(norm2(p.boundary_phase[mu]) - 1.0) < 1e-12, "boundary phase (", p.boundary_phase[mu].re, ", ",
            p.boundary_phase[mu].im, ") in dimension ", mu, ": expected modulus one");
  if (p.type != StaggeredType::asqtad) return;
  for (int mu = 0; mu < 4; ++mu) {
    require(lat.global()[mu] >= 4, "lattice extent ", lat.global()[mu], " in dimension ", mu,
            ": the asqtad operator's three-hop Naik term needs extents of at least 4");
    require(!lat.partitioned(mu) || lat.local()[mu] >= 3, "local extent ", lat.local()[mu], " in dimension ", mu,
            " (lattice split over ", lat.grid()[mu],
            " ranks there): the asqtad operator's three-hop Naik term needs "
            "local extents of at least 3 (so 4, extents being even) in split dimensions; use fewer ranks in dimension ",
            mu, " or a larger lattice");
  }
  require(p.u0 > 0 && std::isfinite(p.u0), "tadpole factor u0 = ", p.u0, ": expected a positive number");
}

StaggeredOperator::StaggeredOperator(std::shared_ptr<const Lattice> lattice,
                                     const std::vector<Complex<double>>& thin_links, const StaggeredParam& param)
    : lattice_(std::move(lattice)), param_(param) {
  check_staggered_param(*lattice_, param_);
  if (param.type == StaggeredType::naive) {
    init(StaggeredLinks{thin_links, {}});
  } else {
    require(thin_links.size() == static_cast<std::size_t>(lattice_->volume()) * 36,
            "staggered operator: ", thin_links.size(), " complex numbers of links, expected ", lattice_->volume() * 36);
    init(asqtad_links(*lattice_, thin_links, AsqtadCoefficients::asqtad(param.u0), param.backend));
  }
}

StaggeredOperator::StaggeredOperator(std::shared_ptr<const Lattice> lattice, const StaggeredLinks& links,
                                     const StaggeredParam& param)
    : lattice_(std::move(lattice)), param_(param) {
  check_staggered_param(*lattice_, param_);
  init(links);
}

StaggeredOperator::~StaggeredOperator() = default;

void StaggeredOperator::init(const StaggeredLinks& links) {
  const Lattice& lat = *lattice_;
  const std::size_t want = static_cast<std::size_t>(lat.volume()) * 36;
  require(links.fat.size() == want, "staggered operator: the fat links have ", links.fat.size(),
          " complex numbers, expected ", want, " (local volume x 4 directions x 3 x 3)");
  if (improved())
    require(links.lng.size() == want, "asqtad operator: the long links have ", links.lng.size(),
            " complex numbers, expected ", want);
  else
    require(links.lng.empty(), "naive staggered operator: long links given, but the naive operator has none");
  depth_ = improved() ? 3 : 1;
  const Reconstruct fat_recon = improved() ? Reconstruct::r18 : param_.reconstruct;
  fat_ = std::make_unique<GaugeField>(lattice_, GaugeParam{param_.precision, fat_recon, param_.backend});
  fat_->from_lexicographic(links.fat);

  std::vector<Complex<double>> scaled;
  if (improved()) {
    if (param_.reconstruct == Reconstruct::r12) {
      // W = c X with X in SU(3): det W = c^3 everywhere. c from rank 0's first link.
      const Complex<double>* w = links.lng.data();
      const Complex<double> det =
          w[0] * (w[4] * w[8] - w[5] * w[7]) - w[1] * (w[3] * w[8] - w[5] * w[6]) + w[2] * (w[3] * w[7] - w[4] * w[6]);
      double c = std::cbrt(det.re);
      MPI_Bcast(&c, 1, MPI_DOUBLE, 0, lat.comm());
      require(c != 0 && std::isfinite(c), "asqtad long links at reconstruct 12: the first link has determinant (",
              det.re, ", ", det.im, "), not c^3 for a real c != 0; use reconstruct 18");
      scaled.resize(want);
      for (std::size_t i = 0; i < want; ++i) scaled[i] = (1.0 / c) * links.lng[i];
      double dev = su3_deviation(scaled), worst = 0;
      MPI_Allreduce(&dev, &worst, 1, MPI_DOUBLE, MPI_MAX, lat.comm());
      require(worst <= 1e-6,
              "asqtad long links at reconstruct 12 must be c X with X in SU(3) and one real c for the "
              "whole field; with c = ",
              c, " they deviate from SU(3) by ", worst,
              " (expected at most 1e-6): use reconstruct 18 (e.g. for HISQ's U(3) long links)");
      long_scale_ = c;
    } else {
      long_scale_ = 1.0;
    }
    long_ = std::make_unique<GaugeField>(lattice_, GaugeParam{param_.precision, param_.reconstruct, param_.backend});
    long_->from_lexicographic(scaled.empty() ? links.lng : scaled);
  }

  bool split = false;
  for (int mu = 0; mu < 4; ++mu) split |= lat.partitioned(mu);
  if (split) {
    for (int mu = 0; mu < 4; ++mu) {
      if (!lat.partitioned(mu)) continue;
      dispatch_storage(param_.precision, fat_recon, [&](auto s, auto r) {
        ghost_fat_[mu] = encode_ghost<decltype(s), decltype(r)::value>(lat, behind_slices(lat, links.fat, mu, 1), mu, 1,
                                                                       1.0, fat_->scale(), param_.backend);
      });
      if (!improved()) continue;
      dispatch_storage(param_.precision, param_.reconstruct, [&](auto s, auto r) {
        ghost_long_[mu] = encode_ghost<decltype(s), decltype(r)::value>(
            lat, behind_slices(lat, links.lng, mu, 3), mu, 3, 1.0 / long_scale_, long_->scale(), param_.backend);
      });
    }
    halo_ = std::make_unique<HaloExchange>(lat, param_.backend, face_bytes_for(param_.precision), depth_);
  }
  tmp_[0] = std::make_unique<ColorSpinorField>(lattice_, field_param(Subset::even));
  tmp_[1] = std::make_unique<ColorSpinorField>(lattice_, field_param(Subset::odd));
  synchronize(param_.backend);
}

SpinorParam StaggeredOperator::field_param(Subset subset) const {
  return SpinorParam{1, 3, param_.precision, subset, param_.backend};
}

std::size_t StaggeredOperator::bytes() const {
  std::size_t b = fat_->bytes() + (long_ ? long_->bytes() : 0);
  for (int mu = 0; mu < 4; ++mu) b += ghost_fat_[mu].bytes() + ghost_long_[mu].bytes();
  return b;
}

std::string StaggeredOperator::halo_description() const {
  if (!halo_) return "none (nothing split)";
  return halo_->describe() + ", depth " + std::to_string(depth_) + ", " + std::to_string(halo_->bytes_per_exchange()) +
         " bytes sent per application of D";
}

void StaggeredOperator::set_mass(double mass) {
  require(std::isfinite(mass) && mass >= 0, "staggered mass ", mass, ": expected a number >= 0 (M = 2m + D)");
  param_.mass = mass;
}

void StaggeredOperator::require_field(const ColorSpinorField& f, const char* what) const {
  require(f.nspin() == 1 && f.ncolor() == 3, "staggered operator: ", what, " has ", f.nspin(), " spins and ",
          f.ncolor(), " colors, expected 1 and 3");
  require(f.precision() == param_.precision, "staggered operator: ", what, " is in ", to_string(f.precision()),
          " precision, the operator in ", to_string(param_.precision));
  require(f.backend() == param_.backend, "staggered operator: ", what, " is on backend ", to_string(f.backend()),
          ", the operator on ", to_string(param_.backend));
  require(f.lattice().local() == lattice_->local(), "staggered operator: ", what, " lives on another lattice");
}

void StaggeredOperator::dslash(ColorSpinorField& out, const ColorSpinorField& in, double a, const ColorSpinorField* x,
                               double b) {
  require_field(out, "output");
  require_field(in, "input");
  require(out.n_parity() == 1 && in.n_parity() == 1, "staggered dslash takes parity fields");
  require(out.block_parity(0) != in.block_parity(0), "staggered dslash maps one parity to the other, got parity ",
          in.block_parity(0), " to ", out.block_parity(0));
  if (x) {
    require_field(*x, "x");
    require(x->n_parity() == 1 && x->block_parity(0) == out.block_parity(0),
            "staggered dslash: x must be a field of the output's parity");
  }
  const double site_flops = dslash_flops_per_site() + (x ? 12.0 : 0.0);
  const LogScope log(LogEvent::dslash, site_flops * lattice_->volume_cb());
  void* ghost_fat[4];
  void* ghost_long[4];
  for (int mu = 0; mu < 4; ++mu) {
    ghost_fat[mu] = ghost_fat_[mu].data();
    ghost_long[mu] = ghost_long_[mu].data();
  }
  const DslashRequest rq{{&out, &in, x, halo_.get()}, fat_.get(), long_.get(), ghost_fat, ghost_long, &param_,
                         depth_, a, b, long_scale_};
  dispatch_precision(param_.precision, [&](auto s) { launch_dslash<decltype(s)>(rq); });
}

void StaggeredOperator::apply(ColorSpinorField& out, const ColorSpinorField& in, bool dagger) {
  require(out.n_parity() == 2 && in.n_parity() == 2, "staggered apply takes full fields");
  require(out.block_data(0) != in.block_data(0), "staggered apply: the output must not be the input");
  for (int p = 0; p < 2; ++p) {
    ColorSpinorField o = out.parity(p);
    const ColorSpinorField i_p = in.parity(p), i_q = in.parity(1 - p);
    dslash(o, i_q, dagger ? -1.0 : 1.0, &i_p, 2.0 * param_.mass);
  }
}

void StaggeredOperator::apply_normal(ColorSpinorField& out, const ColorSpinorField& in, double shift) {
  require(out.n_parity() == 1 && in.n_parity() == 1 && out.block_parity(0) == in.block_parity(0),
          "apply_normal takes two fields of the same parity");
  ColorSpinorField& t = *tmp_[1 - in.block_parity(0)];
  dslash(t, in, 1.0);
  dslash(out, t, -1.0, &in, 4.0 * param_.mass * param_.mass + shift);
}

void StaggeredOperator::prepare_source(ColorSpinorField& bhat, const ColorSpinorField& b) {
  require(bhat.n_parity() == 1 && b.n_parity() == 2, "prepare_source: expected a parity field and a full source");
  const int p = bhat.block_parity(0);
  const ColorSpinorField b_p = b.parity(p), b_q = b.parity(1 - p);
  dslash(bhat, b_q, -1.0, &b_p, 2.0 * param_.mass);
}

void StaggeredOperator::reconstruct(ColorSpinorField& x, const ColorSpinorField& x_p, const ColorSpinorField& b) {
  require(x.n_parity() == 2 && b.n_parity() == 2 && x_p.n_parity() == 1,
          "reconstruct: expected a full solution, a parity solution and a full source");
  require(param_.mass > 0, "reconstruct: x_q = (b_q - D_qp x_p) / (2m) needs a mass > 0, but m = ", param_.mass);
  const int p = x_p.block_parity(0), q = 1 - p;
  ColorSpinorField xp = x.parity(p), xq = x.parity(q);
  const ColorSpinorField b_q = b.parity(q);
  xp.copy_from(x_p);
  const double inv = 1.0 / (2.0 * param_.mass);
  dslash(xq, x_p, -inv, &b_q, inv);
}

}  // namespace latke
