// Color-spinor fields: storage, conversions and the few reductions tests and operators need.
// Compiled by nvcc in CUDA builds: the conversion kernels run on either backend.
#include "src/fields/color_spinor_field.h"

#include <mpi.h>

#include <cmath>
#include <cstdint>

#include "src/core/error.h"
#include "src/core/indexing.h"
#include "src/core/launch.h"
#include "src/core/work_counters.h"
#include "src/fields/philox.h"

namespace latke {

namespace {

constexpr std::size_t align_up(std::size_t n) { return (n + 255) / 256 * 256; }

/// Whether kernels with a compile-time site shape exist for n_real reals per site (Wilson
/// and staggered spinors); other shapes (multigrid coarse fields) take the run-time paths.
bool fixed_shape(int n_real) { return n_real == 24 || n_real == 6; }

/// Dispatch on reals per site for the fixed shapes.
template <typename F>
void dispatch_reals(int n_real, F&& f) {
  switch (n_real) {
    case 24:
      f(std::integral_constant<int, 24>{});
      break;  // Wilson: 4 spins x 3 colors
    case 6:
      f(std::integral_constant<int, 6>{});
      break;  // staggered: 1 spin x 3 colors
    default:
      fail("no fixed-shape kernels for color-spinor fields with ", n_real, " reals per site");
  }
}

/// f(SX{}, SY{}, reals per site) for the storage types of x and y.
template <typename F>
void dispatch_pair(const ColorSpinorField& x, const ColorSpinorField& y, F&& f) {
  dispatch_reals(x.site_reals(), [&](auto nr) {
    dispatch_precision(x.precision(),
                       [&](auto sx) { dispatch_precision(y.precision(), [&](auto sy) { f(sx, sy, nr); }); });
  });
}

/// f(SX{}, SY{}) for the storage types of x and y (run-time shapes).
template <typename F>
void dispatch_types(const ColorSpinorField& x, const ColorSpinorField& y, F&& f) {
  dispatch_precision(x.precision(), [&](auto sx) { dispatch_precision(y.precision(), [&](auto sy) { f(sx, sy); }); });
}

void require_writable(const ColorSpinorField& f, const char* what) {
  require(fixed_shape(f.site_reals()) || f.precision() != Precision::half, what, ": half-precision fields with ",
          f.nspin(), "x", f.ncolor(), " spin x color components are not supported (single or double)");
}

/// Run-time shapes: out = a in + b out, real by real (b = 0: a copy).
template <typename SI, typename SO>
struct GenericAxpbyKernel {
  RealArray<SI> in;
  RealArray<SO> out;
  int n_real;
  double a, b;
  LATKE_HOST_DEVICE void operator()(int x_cb, int) const {
    for (int r = 0; r < n_real; ++r) {
      const double y = b == 0 ? 0.0 : b * out.template get<double>(r, x_cb);
      out.set(r, x_cb, a * in.template get<double>(r, x_cb) + y);
    }
  }
};

template <typename SX, typename SY>
struct GenericDotKernel {
  RealArray<SX> x;
  RealArray<SY> y;
  int n_real;
  LATKE_HOST_DEVICE Complex<double> operator()(int x_cb, int) const {
    Complex<double> s;
    for (int r = 0; r < n_real; r += 2)
      s += conj_mul(Complex<double>(x.template get<double>(r, x_cb), x.template get<double>(r + 1, x_cb)),
                    Complex<double>(y.template get<double>(r, x_cb), y.template get<double>(r + 1, x_cb)));
    return s;
  }
};

/// Gaussian reals from Philox keyed by the seed, counter (global site, component pair).
template <typename Store>
struct GaussianKernel {
  RealArray<Store> field;
  LocalGeometry geom;
  int offset[4], global[4];
  int parity, n_real;
  std::uint32_t key[2];
  LATKE_HOST_DEVICE void operator()(int x_cb, int) const {
    int c[4];
    geom.coords(x_cb, parity, c);
    unsigned long long g = 0;
    for (int mu = 3; mu >= 0; --mu) g = g * global[mu] + (c[mu] + offset[mu]);
    for (int r = 0; r < n_real; r += 4) {
      const Philox4x32 w = philox4x32_10(Philox4x32{{static_cast<std::uint32_t>(g), static_cast<std::uint32_t>(g >> 32),
                                                     0x9a55u, static_cast<std::uint32_t>(r)}},
                                         key[0], key[1]);
      double u[4];
      for (int i = 0; i < 4; ++i) u[i] = uniform_open(w.v[i]);
      for (int i = 0; i < 2; ++i) {
        const double rad = sqrt(-2.0 * log(u[2 * i])), phi = 6.283185307179586 * u[2 * i + 1];
        if (r + 2 * i < n_real) field.set(r + 2 * i, x_cb, rad * cos(phi));
        if (r + 2 * i + 1 < n_real) field.set(r + 2 * i + 1, x_cb, rad * sin(phi));
      }
    }
  }
};

template <typename Store>
struct GenericLexKernel {  // CPU only: host pointers
  RealArray<Store> field;
  Complex<double>* host;
  LocalGeometry geom;
  int parity, n_real;
  bool to_field;
  void operator()(int x_cb, int) const {
    int c[4];
    const long site = geom.coords(x_cb, parity, c);
    const int n = n_real / 2;
    for (int k = 0; k < n; ++k) {
      if (to_field) {
        if constexpr (sizeof(Store) != 2) {
          field.set(2 * k, x_cb, host[site * n + k].re);
          field.set(2 * k + 1, x_cb, host[site * n + k].im);
        }
      } else {
        host[site * n + k] =
            Complex<double>(field.template get<double>(2 * k, x_cb), field.template get<double>(2 * k + 1, x_cb));
      }
    }
  }
};

template <typename Store, int NReal>
struct LexKernel {  // CPU only: host pointers
  SiteArray<Store, NReal, 1> field;
  Complex<double>* host;
  LocalGeometry geom;
  int parity;
  bool to_field;
  void operator()(int x_cb, int) const {
    int c[4];
    const long site = geom.coords(x_cb, parity, c);
    double r[NReal];
    if (to_field) {
      for (int k = 0; k < NReal / 2; ++k) {
        r[2 * k] = host[site * (NReal / 2) + k].re;
        r[2 * k + 1] = host[site * (NReal / 2) + k].im;
      }
      field.save(r, x_cb);
    } else {
      field.load(r, x_cb);
      for (int k = 0; k < NReal / 2; ++k) host[site * (NReal / 2) + k] = Complex<double>(r[2 * k], r[2 * k + 1]);
    }
  }
};

template <typename SX, typename SY, int NReal>
struct DotKernel {
  SiteArray<SX, NReal, 1> x;
  SiteArray<SY, NReal, 1> y;
  LATKE_HOST_DEVICE Complex<double> operator()(int x_cb, int) const {
    double a[NReal], b[NReal];
    x.load(a, x_cb);
    y.load(b, x_cb);
    Complex<double> s;
    for (int k = 0; k < NReal; k += 2) s += conj_mul(Complex<double>(a[k], a[k + 1]), Complex<double>(b[k], b[k + 1]));
    return s;
  }
};

template <typename SX, typename SY, int NReal>
struct AxpbyKernel {  // y = a x + b y
  SiteArray<SX, NReal, 1> x;
  SiteArray<SY, NReal, 1> y;
  double a, b;
  LATKE_HOST_DEVICE void operator()(int x_cb, int) const {
    double u[NReal], v[NReal];
    x.load(u, x_cb);
    y.load(v, x_cb);
    for (int k = 0; k < NReal; ++k) v[k] = a * u[k] + b * v[k];
    y.save(v, x_cb);
  }
};

template <typename SIn, typename SOut>
struct Gamma5Kernel {
  SiteArray<SIn, 24, 1> in;
  SiteArray<SOut, 24, 1> out;
  LATKE_HOST_DEVICE void operator()(int x_cb, int) const {
    double r[24];
    in.load(r, x_cb);
    for (int k = 12; k < 24; ++k) r[k] = -r[k];  // spins 2, 3 (gamma_5 = diag(1,1,-1,-1))
    out.save(r, x_cb);
  }
};

template <typename Store, int NReal>
SiteArray<Store, NReal, 1> site_array(const ColorSpinorField& f, int block) {
  SiteArray<Store, NReal, 1> s;
  s.data = static_cast<Store*>(f.block_data(block));
  s.norm = f.block_norm(block);
  s.stride = f.lattice().volume_cb();
  return s;
}

void require_same_shape(const ColorSpinorField& a, const ColorSpinorField& b, const char* what) {
  require(&a.lattice() == &b.lattice() || a.lattice().local() == b.lattice().local(), what,
          ": fields live on different lattices");
  require(a.nspin() == b.nspin() && a.ncolor() == b.ncolor(), what, ": fields have ", a.nspin(), "x", a.ncolor(),
          " and ", b.nspin(), "x", b.ncolor(), " spin x color components");
  require(a.n_parity() == b.n_parity(), what, ": a full field and a parity field");
  require(a.backend() == b.backend(), what, ": fields on backends ", to_string(a.backend()), " and ",
          to_string(b.backend()));
}

}  // namespace

ColorSpinorField::ColorSpinorField(std::shared_ptr<const Lattice> lattice, const SpinorParam& param)
    : lattice_(std::move(lattice)), param_(param) {
  require(param.nspin > 0 && param.ncolor > 0, "color-spinor field with ", param.nspin, " spins and ", param.ncolor,
          " colors: expected positive counts");
  const std::size_t vcb = lattice_->volume_cb();
  const MemoryKind k = memory_for(param.backend);
  data_ = std::make_shared<Buffer>(k, align_up(n_parity() * site_reals() * vcb * real_bytes(param.precision)));
  if (param.precision == Precision::half)
    norm_ = std::make_shared<Buffer>(k, align_up(n_parity() * vcb * sizeof(float)));
  zero();
}

ColorSpinorField::ColorSpinorField(std::shared_ptr<const Lattice> lattice, const SpinorParam& param, NoAlloc)
    : lattice_(std::move(lattice)), param_(param) {}

ColorSpinorField ColorSpinorField::wrap(std::shared_ptr<const Lattice> lattice, const SpinorParam& param, void* data) {
  require(param.precision == Precision::double_, "wrapping external memory as a ", to_string(param.precision),
          " field: only double-precision fields have no norms and can be wrapped");
  require(reinterpret_cast<std::uintptr_t>(data) % 16 == 0, "wrapping external memory at ", data,
          ": expected 16-byte alignment");
  ColorSpinorField f(std::move(lattice), param, NoAlloc{});
  f.data_ = std::make_shared<Buffer>(Buffer::borrow(
      memory_for(param.backend), data, f.n_parity() * f.site_reals() * f.lattice_->volume_cb() * sizeof(double)));
  return f;
}

std::vector<ColorSpinorField> ColorSpinorField::make_set(std::shared_ptr<const Lattice> lattice,
                                                         const SpinorParam& param, int count) {
  require(count >= 1, "a set of ", count, " fields: expected at least one");
  ColorSpinorField first(lattice, param, NoAlloc{});
  const std::size_t vcb = lattice->volume_cb();
  const std::size_t blocks = static_cast<std::size_t>(count) * first.n_parity();
  const MemoryKind k = memory_for(param.backend);
  first.data_ = std::make_shared<Buffer>(k, align_up(blocks * first.site_reals() * vcb * real_bytes(param.precision)));
  if (param.precision == Precision::half)
    first.norm_ = std::make_shared<Buffer>(k, align_up(blocks * vcb * sizeof(float)));
  std::vector<ColorSpinorField> set;
  for (int i = 0; i < count; ++i) {
    ColorSpinorField f = first;
    f.block_offset_ = static_cast<std::size_t>(i) * first.n_parity();
    f.zero();
    set.push_back(std::move(f));
  }
  return set;
}

bool is_set(const std::vector<ColorSpinorField>& set) {
  if (set.empty()) return false;
  const ColorSpinorField& f0 = set[0];
  const SpinorParam& p0 = f0.param();
  const std::size_t step = f0.n_parity() * f0.block_bytes();
  const std::size_t norm_step = static_cast<std::size_t>(f0.n_parity()) * f0.lattice().volume_cb();
  for (std::size_t k = 0; k < set.size(); ++k) {
    const SpinorParam& p = set[k].param();
    if (p.nspin != p0.nspin || p.ncolor != p0.ncolor || p.precision != p0.precision || p.subset != p0.subset ||
        p.backend != p0.backend || set[k].lattice().local() != f0.lattice().local())
      return false;
    if (static_cast<const char*>(set[k].block_data(0)) != static_cast<const char*>(f0.block_data(0)) + k * step)
      return false;
    if (p0.precision == Precision::half && set[k].block_norm(0) != f0.block_norm(0) + k * norm_step) return false;
  }
  return true;
}

std::size_t ColorSpinorField::block_bytes() const {
  return static_cast<std::size_t>(site_reals()) * lattice_->volume_cb() * real_bytes(param_.precision);
}

ColorSpinorField ColorSpinorField::like(Precision p) const {
  SpinorParam q = param_;
  q.precision = p;
  return ColorSpinorField(lattice_, q);
}

bool ColorSpinorField::is_like(const ColorSpinorField& o) const {
  const SpinorParam& q = o.param_;
  return lattice_->local() == o.lattice_->local() && param_.nspin == q.nspin && param_.ncolor == q.ncolor &&
         param_.precision == q.precision && param_.subset == q.subset && param_.backend == q.backend;
}

ColorSpinorField ColorSpinorField::parity(int p) const {
  require(param_.subset == Subset::full, "parity(", p, ") of a field that already holds one parity");
  require(p == 0 || p == 1, "parity ", p, ": expected 0 (even) or 1 (odd)");
  ColorSpinorField v = *this;
  v.param_.subset = p == 0 ? Subset::even : Subset::odd;
  v.block_offset_ = block_offset_ + p;
  return v;
}

int ColorSpinorField::block_parity(int block) const {
  switch (param_.subset) {
    case Subset::full:
      return block;
    case Subset::even:
      return 0;
    default:
      return 1;
  }
}

std::size_t ColorSpinorField::bytes() const { return bytes_for(*lattice_, param_); }

std::size_t ColorSpinorField::bytes_for(const Lattice& lattice, const SpinorParam& param) {
  return static_cast<std::size_t>(param.n_parity()) * lattice.volume_cb() *
         (param.site_reals() * real_bytes(param.precision) + (param.precision == Precision::half ? sizeof(float) : 0));
}

void* ColorSpinorField::block_data(int block) const {
  return static_cast<char*>(data_->data()) +
         (block_offset_ + block) * site_reals() * lattice_->volume_cb() * real_bytes(param_.precision);
}

float* ColorSpinorField::block_norm(int block) const {
  return norm_ ? static_cast<float*>(norm_->data()) + (block_offset_ + block) * lattice_->volume_cb() : nullptr;
}

void ColorSpinorField::zero() {
  const MemoryKind k = memory_for(param_.backend);
  for (int b = 0; b < n_parity(); ++b) {
    zero_bytes(block_data(b), site_reals() * lattice_->volume_cb() * real_bytes(param_.precision), k, compute_stream());
    if (norm_) zero_bytes(block_norm(b), lattice_->volume_cb() * sizeof(float), k, compute_stream());
  }
}

void ColorSpinorField::copy_from(const ColorSpinorField& src) {
  require_same_shape(*this, src, "copy_from");
  if (!fixed_shape(site_reals())) {
    require_writable(*this, "copy_from");
    dispatch_types(src, *this, [&](auto si, auto so) {
      using SI = decltype(si);
      using SO = decltype(so);
      if constexpr (sizeof(SO) != 2)
        for (int b = 0; b < n_parity(); ++b)
          launch(backend(),
                 GenericAxpbyKernel<SI, SO>{real_array<SI>(src, b), real_array<SO>(*this, b), site_reals(), 1.0, 0.0},
                 {lattice_->volume_cb()});
    });
    return;
  }
  dispatch_pair(src, *this, [&](auto si, auto so, auto nr) {
    using SI = decltype(si);
    using SO = decltype(so);
    constexpr int NR = decltype(nr)::value;
    for (int b = 0; b < n_parity(); ++b)
      launch(backend(), SiteCopyKernel<SI, SO, NR, 1>{site_array<SI, NR>(src, b), site_array<SO, NR>(*this, b)},
             {lattice_->volume_cb()});
  });
}

void ColorSpinorField::copy_raw(const ColorSpinorField& dst, const ColorSpinorField& src) {
  const std::size_t vcb = src.lattice_->volume_cb();
  for (int b = 0; b < src.n_parity(); ++b) {
    copy_bytes(dst.block_data(b), src.block_data(b), src.site_reals() * vcb * real_bytes(src.precision()),
               compute_stream());
    if (src.norm_) copy_bytes(dst.block_norm(b), src.block_norm(b), vcb * sizeof(float), compute_stream());
  }
  synchronize(compute_stream());
}

void ColorSpinorField::convert_lex(const ColorSpinorField& stage, Complex<double>* host, bool to_field) const {
  const LocalGeometry g = LocalGeometry::of(*lattice_);
  if (!fixed_shape(site_reals())) {
    if (to_field) require_writable(*this, "from_lexicographic");
    dispatch_precision(precision(), [&](auto s) {
      using S = decltype(s);
      for (int b = 0; b < n_parity(); ++b)
        launch_cpu(GenericLexKernel<S>{real_array<S>(stage, b), host, g, block_parity(b), site_reals(), to_field},
                   {lattice_->volume_cb()});
    });
    return;
  }
  dispatch_reals(site_reals(), [&](auto nr) {
    constexpr int NR = decltype(nr)::value;
    dispatch_precision(precision(), [&](auto s) {
      using S = decltype(s);
      for (int b = 0; b < n_parity(); ++b)
        launch_cpu(LexKernel<S, NR>{site_array<S, NR>(stage, b), host, g, block_parity(b), to_field},
                   {lattice_->volume_cb()});
    });
  });
}

ColorSpinorField ColorSpinorField::host_stage() const {
  if (backend() == Backend::cpu) return *this;
  SpinorParam hp = param_;
  hp.backend = Backend::cpu;
  return ColorSpinorField(lattice_, hp);
}

void ColorSpinorField::from_lexicographic(const std::vector<Complex<double>>& host) {
  const std::size_t want = static_cast<std::size_t>(lattice_->volume()) * site_reals() / 2;
  require(host.size() == want, "from_lexicographic: host array has ", host.size(), " complex numbers, expected ", want,
          " (local volume x spins x colors)");
  const ColorSpinorField stage = host_stage();
  convert_lex(stage, const_cast<Complex<double>*>(host.data()), true);
  if (backend() != Backend::cpu) copy_raw(*this, stage);
}

void ColorSpinorField::to_lexicographic(std::vector<Complex<double>>& host) const {
  const std::size_t want = static_cast<std::size_t>(lattice_->volume()) * site_reals() / 2;
  if (host.empty()) host.assign(want, Complex<double>());
  require(host.size() == want, "to_lexicographic: host array has ", host.size(), " complex numbers, expected ", want,
          " (local volume x spins x colors)");
  const ColorSpinorField stage = host_stage();
  if (backend() != Backend::cpu) {
    synchronize(backend());
    copy_raw(stage, *this);
  }
  convert_lex(stage, host.data(), false);
}

Complex<double> dot(const ColorSpinorField& x, const ColorSpinorField& y) {
  require_same_shape(x, y, "dot");
  Complex<double> local;
  if (!fixed_shape(x.site_reals())) {
    dispatch_types(x, y, [&](auto sx, auto sy) {
      using SX = decltype(sx);
      using SY = decltype(sy);
      for (int b = 0; b < x.n_parity(); ++b)
        local += launch_reduce<Complex<double>>(
            x.backend(), GenericDotKernel<SX, SY>{real_array<SX>(x, b), real_array<SY>(y, b), x.site_reals()},
            {x.lattice().volume_cb()});
    });
  } else {
    dispatch_pair(x, y, [&](auto sx, auto sy, auto nr) {
      using SX = decltype(sx);
      using SY = decltype(sy);
      constexpr int NR = decltype(nr)::value;
      for (int b = 0; b < x.n_parity(); ++b)
        local += launch_reduce<Complex<double>>(
            x.backend(), DotKernel<SX, SY, NR>{site_array<SX, NR>(x, b), site_array<SY, NR>(y, b)},
            {x.lattice().volume_cb()});
    });
  }
  double out[2] = {local.re, local.im};
  global_sum(out, 2, x.lattice().comm());
  return {out[0], out[1]};
}

double norm2(const ColorSpinorField& x) { return dot(x, x).re; }

namespace {
void axpby(double a, const ColorSpinorField& x, double b, ColorSpinorField& y) {
  require_same_shape(x, y, "axpby");
  if (!fixed_shape(x.site_reals())) {
    require_writable(y, "axpby");
    dispatch_types(x, y, [&](auto sx, auto sy) {
      using SX = decltype(sx);
      using SY = decltype(sy);
      if constexpr (sizeof(SY) != 2)
        for (int blk = 0; blk < x.n_parity(); ++blk)
          launch(x.backend(),
                 GenericAxpbyKernel<SX, SY>{real_array<SX>(x, blk), real_array<SY>(y, blk), x.site_reals(), a, b},
                 {x.lattice().volume_cb()}, compute_stream(), false);
    });
    return;
  }
  dispatch_pair(x, y, [&](auto sx, auto sy, auto nr) {
    using SX = decltype(sx);
    using SY = decltype(sy);
    constexpr int NR = decltype(nr)::value;
    for (int blk = 0; blk < x.n_parity(); ++blk)
      launch(x.backend(), AxpbyKernel<SX, SY, NR>{site_array<SX, NR>(x, blk), site_array<SY, NR>(y, blk), a, b},
             {x.lattice().volume_cb()}, compute_stream(), false);
  });
}
}  // namespace

void axpy(double a, const ColorSpinorField& x, ColorSpinorField& y) { axpby(a, x, 1.0, y); }
void xpay(const ColorSpinorField& x, double a, ColorSpinorField& y) { axpby(1.0, x, a, y); }

void fill_gaussian(ColorSpinorField& x, std::uint64_t seed) {
  if (x.precision() == Precision::half) {
    ColorSpinorField s = x.like(Precision::single);
    fill_gaussian(s, seed);
    x.copy_from(s);
    return;
  }
  const Lattice& lat = x.lattice();
  dispatch_precision(x.precision(), [&](auto st) {
    using S = decltype(st);
    if constexpr (sizeof(S) != 2) {
      GaussianKernel<S> k;
      k.geom = LocalGeometry::of(lat);
      for (int mu = 0; mu < 4; ++mu) {
        k.offset[mu] = lat.offset()[mu];
        k.global[mu] = lat.global()[mu];
      }
      k.n_real = x.site_reals();
      k.key[0] = static_cast<std::uint32_t>(seed);
      k.key[1] = static_cast<std::uint32_t>(seed >> 32);
      for (int b = 0; b < x.n_parity(); ++b) {
        k.field = real_array<S>(x, b);
        k.parity = x.block_parity(b);
        launch(x.backend(), k, {lat.volume_cb()});
      }
    }
  });
}

void apply_gamma5(ColorSpinorField& out, const ColorSpinorField& in) {
  require_same_shape(out, in, "apply_gamma5");
  require(in.nspin() == 4 && in.ncolor() == 3, "apply_gamma5: expected a Wilson spinor (4 spins, 3 colors)");
  dispatch_precision(in.precision(), [&](auto si) {
    dispatch_precision(out.precision(), [&](auto so) {
      using SI = decltype(si);
      using SO = decltype(so);
      for (int b = 0; b < in.n_parity(); ++b) {
        Gamma5Kernel<SI, SO> k{site_array<SI, 24>(in, b), site_array<SO, 24>(out, b)};
        launch(in.backend(), k, {in.lattice().volume_cb()}, compute_stream(), false);
      }
    });
  });
}

}  // namespace latke
