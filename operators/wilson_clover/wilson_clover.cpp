// The Wilson-clover operator: construction and the composition of fused kernels into the
// full, even-odd and dagger forms (formulas in wilson_clover.h).
#include "operators/wilson_clover/wilson_clover.h"

#include "operators/wilson_clover/clover_build.h"
#include "operators/wilson_clover/wilson_clover_launch.h"
#include "src/core/environment.h"
#include "src/core/error.h"
#include "src/core/log.h"

namespace latke {

const char* to_string(SchurType t) { return t == SchurType::symmetric ? "symmetric" : "asymmetric"; }

SchurType parse_schur_type(const std::string& name) {
  if (name == "asymmetric") return SchurType::asymmetric;
  if (name == "symmetric") return SchurType::symmetric;
  fail("unknown even-odd form '", name, "': expected asymmetric or symmetric");
}

double mass_from_kappa(double kappa) {
  require(kappa > 0, "kappa ", kappa, ": expected a positive number (kappa = 1/(2m + 8))");
  return 0.5 / kappa - 4.0;
}

const char* to_string(Normalisation n) { return n == Normalisation::kappa ? "kappa" : "mass"; }

Normalisation parse_normalisation(const std::string& name) {
  if (name == "mass") return Normalisation::mass;
  if (name == "kappa") return Normalisation::kappa;
  fail("unknown normalisation '", name, "': expected mass or kappa");
}

double WilsonCloverOperator::kappa() const { return 1.0 / (2.0 * param_.mass + 8.0); }

double WilsonCloverOperator::hop() const {
  return param_.normalisation == Normalisation::kappa ? kappa() : 0.5;
}

double WilsonCloverOperator::site_scale() const {
  return param_.normalisation == Normalisation::kappa ? 2.0 * kappa() : 1.0;
}

namespace {
CloverParam clover_param(const WilsonCloverParam& p, Precision prec) { return CloverParam{prec, p.backend}; }

std::size_t face_bytes_for(Precision p) {
  return dispatch_precision(p, [](auto s) { return face_site_bytes<decltype(s), 12>(); });
}

}  // namespace

WilsonCloverOperator::WilsonCloverOperator(std::shared_ptr<const Lattice> lattice,
                                           const std::vector<Complex<double>>& host_links,
                                           const WilsonCloverParam& param)
    : WilsonCloverOperator(std::move(lattice), host_links, param, nullptr) {}

WilsonCloverOperator::WilsonCloverOperator(const WilsonCloverOperator& from,
                                           const std::vector<Complex<double>>& host_links,
                                           const WilsonCloverParam& param)
    : WilsonCloverOperator(from.lattice_, host_links, param, &from) {}

WilsonCloverOperator::WilsonCloverOperator(std::shared_ptr<const Lattice> lattice,
                                           const std::vector<Complex<double>>& host_links,
                                           const WilsonCloverParam& param, const WilsonCloverOperator* clover_from)
    : lattice_(std::move(lattice)),
      param_(param),
      gauge_(lattice_, GaugeParam{param.precision, param.reconstruct, param.backend}),
      clover_(lattice_, clover_param(param, param.precision)),
      clover_inv_(lattice_, clover_param(param, param.precision)),
      frame_on_(env_choice("LATKE_SCHWARZ_FRAME", {"1", "0"}) == "1"),
      boundary_by_colour_(env_choice("LATKE_SCHWARZ_BOUNDARY_ORDER", {"colours", "sites"}) == "colours") {
  require(param.normalisation == Normalisation::mass || 2.0 * param.mass + 8.0 > 0, "kappa normalisation needs ",
          "kappa = 1/(2m + 8) > 0, but the mass is ", param.mass);
  if (param.block[0] > 0 || param.block[1] > 0 || param.block[2] > 0 || param.block[3] > 0) {
    for (int mu = 0; mu < 4; ++mu) {
      const int b = param.block[mu], l = lattice_->local()[mu];
      require(b > 0 && l % b == 0, "Schwarz block extent ", b, " in dimension ", mu,
              ": expected a positive divisor of the local extent ", l);
      require(b % 2 == 0, "Schwarz block extent ", b, " in dimension ", mu,
              " is odd: even-odd preconditioning within blocks needs even block extents");
    }
  }
  const LogScope log(LogEvent::operator_build, 0, true);
  const WilsonCloverParam* f = clover_from ? &clover_from->param_ : nullptr;
  if (f && GaugeField::converts(clover_from->gauge_.param(), gauge_.param()))
    gauge_.copy_from(clover_from->gauge_);  // converted on the backend: the same links, no upload
  else
    gauge_.from_lexicographic(host_links, f && f->reconstruct == Reconstruct::r12);  // from's upload checked them
  if (f && f->mass == param.mass && f->csw == param.csw && f->normalisation == param.normalisation &&
      f->backend == param.backend && real_bytes(f->precision) >= real_bytes(param.precision)) {
    clover_.copy_from(clover_from->clover_);  // A is site-local: the same for any block or link storage
    clover_inv_.copy_from(clover_from->clover_inv_);
  } else if (param.precision == Precision::double_) {
    wilson::build_clover(*lattice_, host_links, param.mass, param.csw, site_scale(), clover_, clover_inv_);
  } else {
    CloverField a(lattice_, clover_param(param, Precision::double_));
    CloverField a_inv(lattice_, clover_param(param, Precision::double_));
    wilson::build_clover(*lattice_, host_links, param.mass, param.csw, site_scale(), a, a_inv);
    clover_.copy_from(a);
    clover_inv_.copy_from(a_inv);
  }
  bool split = false;
  for (int mu = 0; mu < 4; ++mu) split |= lattice_->partitioned(mu);
  if (split && !domain_local()) halo_ = std::make_unique<HaloExchange>(*lattice_, param.backend, face_bytes_for(param.precision));
  SpinorParam sp{4, 3, param.precision, Subset::even, param.backend};
  tmp_[0] = std::make_unique<ColorSpinorField>(lattice_, sp);
  sp.subset = Subset::odd;
  tmp_[1] = std::make_unique<ColorSpinorField>(lattice_, sp);
  synchronize(param.backend);
}

WilsonCloverOperator::~WilsonCloverOperator() = default;

std::size_t WilsonCloverOperator::bytes() const {
  std::size_t b = gauge_.bytes() + clover_.bytes() + clover_inv_.bytes();
  if (block_gauge_) b += block_gauge_->bytes() + block_clover_->bytes() + block_clover_inv_->bytes();
  b += pair_table_.bytes() + pair_links_.bytes() + pair_clover_.bytes() + pair_clover_inv_.bytes();
  return b;
}

std::string WilsonCloverOperator::halo_description() const {
  if (domain_local()) return "none (domain-local: communication off)";
  if (!halo_) return "none (nothing split)";
  return halo_->describe() + ", " + std::to_string(halo_->bytes_per_exchange()) + " bytes sent per hopping term";
}

void WilsonCloverOperator::require_field(const ColorSpinorField& f, const char* what) const {
  require(f.nspin() == 4 && f.ncolor() == 3, "Wilson-clover operator: ", what, " has ", f.nspin(), " spins and ",
          f.ncolor(), " colors, expected 4 and 3");
  require(f.precision() == param_.precision, "Wilson-clover operator: ", what, " is in ", to_string(f.precision()),
          " precision, the operator in ", to_string(param_.precision));
  require(f.backend() == param_.backend, "Wilson-clover operator: ", what, " is on backend ", to_string(f.backend()),
          ", the operator on ", to_string(param_.backend));
  require(f.lattice().local() == lattice_->local(), "Wilson-clover operator: ", what, " lives on another lattice");
}

void WilsonCloverOperator::dslash(ColorSpinorField& out, const ColorSpinorField& in, Epilogue e, double a,
                                  const ColorSpinorField* x, bool dagger) {
  dslash_split(out, in, e, a, x, dagger, nullptr, -1);
}

void WilsonCloverOperator::dslash_split(ColorSpinorField& out, const ColorSpinorField& in, Epilogue e, double a,
                                        const ColorSpinorField* x, bool dagger, const int* split_block, int split_dim,
                                        int skip_colour) {
  require_field(out, "output");
  require_field(in, "input");
  require(out.n_parity() == 1 && in.n_parity() == 1, "dslash takes parity fields");
  require(out.block_parity(0) != in.block_parity(0), "dslash maps one parity to the other, got parity ",
          in.block_parity(0), " to ", out.block_parity(0));
  const bool needs_x = e == Epilogue::clover_xpay || e == Epilogue::clover_inv_xpay || e == Epilogue::xpay;
  require(!needs_x || (x && x->n_parity() == 1 && x->block_parity(0) == out.block_parity(0)),
          "dslash: this epilogue needs an x of the output's parity");
  if (x) require_field(*x, "x");
  const CloverField* c = nullptr;
  if (e == Epilogue::clover_inv || e == Epilogue::clover_inv_xpay) c = &clover_inv_;
  if (e == Epilogue::clover_xpay) c = &clover_;
  const double site_flops = 1320.0 + (c ? 504.0 : 0.0) + (needs_x ? 48.0 : 0.0);
  const LogScope log(LogEvent::dslash, site_flops * lattice_->volume_cb());
  HaloExchange* halo = split_block && split_dim < 0 ? nullptr : halo_.get();  // hops inside blocks stay on the rank
  wilson::DslashRequest rq{{&out, &in, x, halo}, &gauge_, c, &param_, e, a, dagger, split_block, split_dim};
  rq.skip_colour = skip_colour;
  rq.colour_order = boundary_by_colour_;
  dispatch_precision(param_.precision, [&](auto s) { wilson::launch_dslash<decltype(s)>(rq); });
}

void WilsonCloverOperator::hop_across_blocks(ColorSpinorField& out, const ColorSpinorField& in, const Coords& block,
                                             double a, bool add, bool clover_inv, int skip_colour) {
  require(add || !clover_inv, "hop_across_blocks: A^-1 only when adding");
  require(!domain_local(), "hop_across_blocks: the operator is the domain-local form");
  for (int mu = 0; mu < 4; ++mu)
    require(block[mu] >= 2 && lattice_->local()[mu] % block[mu] == 0, "hop_across_blocks: block extent ", block[mu],
            " in dimension ", mu, " does not divide the local extent ", lattice_->local()[mu]);
  const int b[4] = {block[0], block[1], block[2], block[3]};
  const Epilogue e = !add ? Epilogue::plain : clover_inv ? Epilogue::clover_inv_xpay : Epilogue::xpay;
  dslash_split(out, in, e, a, add ? &out : nullptr, false, b, wilson::split_across_blocks, skip_colour);
}

void WilsonCloverOperator::sap_boundary(ColorSpinorField& s_p, ColorSpinorField& r_q, const ColorSpinorField& dx,
                                        const Coords& block, int colour) {
  require(dx.n_parity() == 2 && s_p.n_parity() == 1 && r_q.n_parity() == 1 &&
              r_q.block_parity(0) == 1 - s_p.block_parity(0),
          "sap_boundary: takes s_p and r_q of opposite parities and a full correction");
  const int p = s_p.block_parity(0);
  // M_pq = -hop D_hop: R - M dx adds +hop D_hop dx. R_q is zero before (sap_blocks zeroes the
  // colour's blocks, the other colour's were zeroed by their step): r_q is overwritten. The
  // colour's own sites have no hop into dx (their neighbours across a boundary are the other
  // colour's): skipped.
  hop_across_blocks(s_p, dx.parity(1 - p), block, hop(), true, true, colour);
  hop_across_blocks(r_q, dx.parity(p), block, hop(), false, false, colour);
}

void WilsonCloverOperator::apply(ColorSpinorField& out, const ColorSpinorField& in, bool dagger) {
  require(out.n_parity() == 2 && in.n_parity() == 2, "apply takes full fields");
  for (int p = 0; p < 2; ++p) {
    ColorSpinorField o = out.parity(p);
    const ColorSpinorField i_p = in.parity(p), i_q = in.parity(1 - p);
    dslash(o, i_q, Epilogue::clover_xpay, -hop(), &i_p, dagger);
  }
}

void WilsonCloverOperator::apply_split(ColorSpinorField& site, ColorSpinorField* const faces[4],
                                       const ColorSpinorField& in, const Coords& block) {
  require(!domain_local(), "apply_split: the operator is the domain-local form");
  require(site.n_parity() == 2 && in.n_parity() == 2, "apply_split takes full fields");
  for (int mu = 0; mu < 4; ++mu) {
    require(faces[mu] && faces[mu]->n_parity() == 2, "apply_split takes full fields");
    require(block[mu] >= 2 && lattice_->local()[mu] % block[mu] == 0, "apply_split: block extent ", block[mu],
            " in dimension ", mu, ": expected at least 2 and dividing the local extent ", lattice_->local()[mu]);
  }
  const int b[4] = {block[0], block[1], block[2], block[3]};
  for (int p = 0; p < 2; ++p) {
    ColorSpinorField o = site.parity(p);
    const ColorSpinorField i_p = in.parity(p), i_q = in.parity(1 - p);
    dslash_split(o, i_q, Epilogue::clover_xpay, -hop(), &i_p, false, b, -1);
    for (int mu = 0; mu < 4; ++mu) {
      ColorSpinorField f = faces[mu]->parity(p);
      dslash_split(f, i_q, Epilogue::plain, -hop(), nullptr, false, b, mu);
    }
  }
}

void WilsonCloverOperator::apply_schur(ColorSpinorField& out, const ColorSpinorField& in, SchurType type, bool dagger) {
  require(out.n_parity() == 1 && in.n_parity() == 1 && out.block_parity(0) == in.block_parity(0),
          "apply_schur takes two fields of the same parity");
  const int p = in.block_parity(0), q = 1 - p;
  ColorSpinorField& tq = *tmp_[q];
  if (type == SchurType::asymmetric) {
    dslash(tq, in, Epilogue::clover_inv, 1.0, nullptr, dagger);
    dslash(out, tq, Epilogue::clover_xpay, -hop() * hop(), &in, dagger);
  } else if (!dagger) {
    dslash(tq, in, Epilogue::clover_inv, 1.0, nullptr, false);
    dslash(out, tq, Epilogue::clover_inv_xpay, -hop() * hop(), &in, false);
  } else {
    ColorSpinorField& tp = *tmp_[p];
    clover(tp, in, true);
    dslash(tq, tp, Epilogue::clover_inv, 1.0, nullptr, true);
    dslash(out, tq, Epilogue::xpay, -hop() * hop(), &in, true);
  }
}

void WilsonCloverOperator::apply_schur_set(std::vector<ColorSpinorField>& out, const std::vector<ColorSpinorField>& in,
                                           SchurType type) {
  require(!in.empty() && out.size() == in.size(), "Wilson-clover operator (apply_schur_set): sets of ", in.size(),
          " and ", out.size(), " fields; expected equal, non-empty sets");
  const int count = static_cast<int>(in.size());
  if (!applies_sets() || count == 1) {
    for (int k = 0; k < count; ++k) apply_schur(out[k], in[k], type);
    return;
  }
  for (const auto* set : {&in, static_cast<const std::vector<ColorSpinorField>*>(&out)}) {
    require(is_set(*set), "Wilson-clover operator (apply_schur_set): the fields are not a set made by make_set");
    require_field((*set)[0], "a field of the set");
  }
  require(in[0].n_parity() == 1 && out[0].param().subset == in[0].param().subset,
          "apply_schur_set takes two sets of fields of the same parity");
  const int p = in[0].block_parity(0), q = 1 - p;
  const Subset sq = q == 0 ? Subset::even : Subset::odd;
  if (set_tmp_.size() != in.size() || set_tmp_[0].param().subset != sq) {
    set_tmp_.clear();  // before the new set is made: it may be large
    SpinorParam sp = in[0].param();
    sp.subset = sq;
    set_tmp_ = ColorSpinorField::make_set(lattice_, sp, count);
  }
  if (halo_ && set_halo_count_ != count) {
    // The set's faces in one exchange, field k's at k regions into each face (stencil_faces.h).
    set_halo_.reset();
    std::array<std::size_t, 4> bytes{};
    for (int mu = 0; mu < 4; ++mu)
      if (lattice_->partitioned(mu))
        bytes[mu] = count * set_face_region(lattice_->face_volume_cb(mu), face_bytes_for(param_.precision));
    set_halo_ = std::make_unique<HaloExchange>(*lattice_, param_.backend, bytes);
    set_halo_count_ = count;
  }
  const double site_flops = 2 * (1320.0 + 504.0) + 48.0;
  const LogScope log(LogEvent::dslash, site_flops * lattice_->volume_cb() * count);
  auto run = [&](ColorSpinorField& o, const ColorSpinorField& i, Epilogue e, double a, const ColorSpinorField* x) {
    const CloverField* c = e == Epilogue::clover_xpay ? &clover_ : &clover_inv_;
    wilson::DslashRequest rq{{&o, &i, x, set_halo_.get()}, &gauge_, c, &param_, e, a, false};
    rq.count = count;
    dispatch_precision(param_.precision, [&](auto s) { wilson::launch_dslash<decltype(s)>(rq); });
  };
  run(set_tmp_[0], in[0], Epilogue::clover_inv, 1.0, nullptr);
  run(out[0], set_tmp_[0], type == SchurType::asymmetric ? Epilogue::clover_xpay : Epilogue::clover_inv_xpay,
      -hop() * hop(), &in[0]);
}

void WilsonCloverOperator::prepare_source(ColorSpinorField& bhat, const ColorSpinorField& b, SchurType type) {
  require(bhat.n_parity() == 1 && b.n_parity() == 2, "prepare_source: expected a parity field and a full source");
  const int p = bhat.block_parity(0), q = 1 - p;
  const ColorSpinorField b_p = b.parity(p), b_q = b.parity(q);
  clover(*tmp_[q], b_q, true);
  if (type == SchurType::asymmetric) {
    dslash(bhat, *tmp_[q], Epilogue::xpay, hop(), &b_p, false);
  } else {
    dslash(*tmp_[p], *tmp_[q], Epilogue::xpay, hop(), &b_p, false);
    clover(bhat, *tmp_[p], true);
  }
}

void WilsonCloverOperator::reconstruct(ColorSpinorField& x, const ColorSpinorField& x_p, const ColorSpinorField& b) {
  require(x.n_parity() == 2 && b.n_parity() == 2 && x_p.n_parity() == 1,
          "reconstruct: expected a full solution, a parity solution and a full source");
  const int p = x_p.block_parity(0), q = 1 - p;
  ColorSpinorField xp = x.parity(p), xq = x.parity(q);
  const ColorSpinorField b_q = b.parity(q);
  xp.copy_from(x_p);
  dslash(*tmp_[q], x_p, Epilogue::xpay, hop(), &b_q, false);
  clover(xq, *tmp_[q], true);
}

void WilsonCloverOperator::hopping(ColorSpinorField& out, const ColorSpinorField& in, bool dagger) {
  dslash(out, in, Epilogue::plain, 1.0, nullptr, dagger);
}

void WilsonCloverOperator::clover(ColorSpinorField& out, const ColorSpinorField& in, bool inverse) {
  require_field(out, "output");
  require_field(in, "input");
  require(out.n_parity() == in.n_parity() && out.block_parity(0) == in.block_parity(0),
          "clover: input and output must hold the same sites");
  const CloverField& c = inverse ? clover_inv_ : clover_;
  const LogScope log(LogEvent::clover, 504.0 * lattice_->volume_cb() * in.n_parity());
  dispatch_precision(param_.precision, [&](auto s) { wilson::launch_clover<decltype(s)>(out, in, c); });
}

}  // namespace latke
