// Color-spinor fields, generic over spin and color counts, in double, single or half
// storage, on the CPU or CUDA backend, in the coalesced parity-blocked layout (site_array.h).
// A full field holds both parities (block 0 even, block 1 odd); a parity field holds one.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "src/core/complex.h"
#include "src/core/lattice.h"
#include "src/core/memory.h"
#include "src/fields/accessors.h"
#include "src/fields/precision.h"

namespace latke {

enum class Subset { full, even, odd };

struct SpinorParam {
  int nspin = 4;
  int ncolor = 3;
  Precision precision = Precision::double_;
  Subset subset = Subset::full;
  Backend backend = Backend::cpu;
  /// Parity blocks of a field of this shape: 2 for a full field, 1 for one parity.
  int n_parity() const { return subset == Subset::full ? 2 : 1; }
  /// Reals per site.
  int site_reals() const { return 2 * nspin * ncolor; }
};

class ColorSpinorField {
 public:
  ColorSpinorField(std::shared_ptr<const Lattice> lattice, const SpinorParam& param);

  /// @brief A double-precision field over memory it does not own, on param.backend (host
  /// memory for the CPU, device memory for CUDA): e.g. a PETSc Vec's array, whose layout is
  /// this one (native_layout.h). data must be 16-byte aligned and outlive the field.
  static ColorSpinorField wrap(std::shared_ptr<const Lattice> lattice, const SpinorParam& param, void* data);

  /// @brief count fields of one shape in a single allocation, field k's blocks right after
  /// field k-1's: a kernel reaches block b of field k at block_data(0) of field 0 plus
  /// (k * n_parity + b) blocks (and likewise for half-precision norms). For multigrid bases.
  static std::vector<ColorSpinorField> make_set(std::shared_ptr<const Lattice> lattice, const SpinorParam& param,
                                                int count);

  /// @brief A field of the same shape, subset and backend in precision p.
  ColorSpinorField like(Precision p) const;
  /// @brief Whether o is a field like(precision()) would make: the same local lattice, spins,
  /// colors, precision, subset and backend.
  bool is_like(const ColorSpinorField& o) const;
  /// @brief The even (0) or odd (1) half of a full field, sharing its storage.
  ColorSpinorField parity(int p) const;

  const Lattice& lattice() const { return *lattice_; }
  const std::shared_ptr<const Lattice>& lattice_ptr() const { return lattice_; }
  const SpinorParam& param() const { return param_; }
  Precision precision() const { return param_.precision; }
  Backend backend() const { return param_.backend; }
  int nspin() const { return param_.nspin; }
  int ncolor() const { return param_.ncolor; }
  int n_parity() const { return param_.n_parity(); }
  /// The site parity held in block `block` (0 or 1 for a full field; the subset otherwise).
  int block_parity(int block) const;
  /// Reals per site.
  int site_reals() const { return param_.site_reals(); }
  /// Bytes of one parity block's reals (without norms).
  std::size_t block_bytes() const;
  std::size_t bytes() const;
  /// @brief What bytes() of a field of this shape would be, without making one.
  static std::size_t bytes_for(const Lattice& lattice, const SpinorParam& param);

  /// @brief Accessor for block `block` (see block_parity).
  template <typename Store, int Nc, int Ns>
  SpinorAccessor<Store, Nc, Ns> accessor(int block = 0) const {
    SpinorAccessor<Store, Nc, Ns> a;
    a.a.data = static_cast<Store*>(block_data(block));
    a.a.norm = block_norm(block);
    a.a.stride = lattice_->volume_cb();
    return a;
  }
  void* block_data(int block) const;
  float* block_norm(int block) const;

  /// @brief Set every site to zero.
  void zero();
  /// @brief Copy from a field of the same shape, converting precision.
  void copy_from(const ColorSpinorField& src);
  /// @brief Load from a host array in lexicographic order over the local volume
  /// (conventions.h; site, spin, color). A parity field reads only its parity's sites.
  void from_lexicographic(const std::vector<Complex<double>>& host);
  /// @brief Store into a host array of the local volume; a parity field writes only its
  /// parity's sites and leaves the others untouched (the array is sized if empty).
  void to_lexicographic(std::vector<Complex<double>>& host) const;

 private:
  struct NoAlloc {};
  ColorSpinorField(std::shared_ptr<const Lattice> lattice, const SpinorParam& param, NoAlloc);
  /// A CPU field of the same layout to convert through (this field itself on the CPU).
  ColorSpinorField host_stage() const;
  /// Between the host array and `stage` (a CPU field of this layout).
  void convert_lex(const ColorSpinorField& stage, Complex<double>* host, bool to_field) const;
  /// Raw copy of every block (data and norms) between fields of one layout.
  static void copy_raw(const ColorSpinorField& dst, const ColorSpinorField& src);

  std::shared_ptr<const Lattice> lattice_;
  SpinorParam param_;
  std::shared_ptr<Buffer> data_, norm_;
  std::size_t block_offset_ = 0;  ///< in blocks, for parity views
};

/// @brief Whether the fields lie as ColorSpinorField::make_set lays them out: a non-empty set
/// of one shape, subset, precision and backend, field k's storage right after field k-1's.
bool is_set(const std::vector<ColorSpinorField>& set);

/// @brief Block `block` of f as a run-time shaped view (any spin x color count).
template <typename Store>
RealArray<Store> real_array(const ColorSpinorField& f, int block) {
  RealArray<Store> a;
  a.data = static_cast<Store*>(f.block_data(block));
  a.norm = f.block_norm(block);
  a.stride = f.lattice().volume_cb();
  a.lv = vector_shift<Store>(f.site_reals());
  return a;
}

/// @brief Sum over all ranks of |x|^2, accumulated in double.
double norm2(const ColorSpinorField& x);
/// @brief Sum over all ranks of <x, y> = sum conj(x) y, accumulated in double.
Complex<double> dot(const ColorSpinorField& x, const ColorSpinorField& y);
/// @brief y = a x + y (any precisions, same shape; computed in double).
void axpy(double a, const ColorSpinorField& x, ColorSpinorField& y);
/// @brief y = x + a y.
void xpay(const ColorSpinorField& x, double a, ColorSpinorField& y);
/// @brief Fill x with Gaussian random numbers (unit variance per real) on its backend: each a
/// function of (seed, global site, component) through Philox, so the field is the same on any
/// process grid (and, up to rounding of the transform, on either backend).
void fill_gaussian(ColorSpinorField& x, std::uint64_t seed);
/// @brief out = gamma_5 in (Wilson spinors, chiral basis: sign flip of spins 2 and 3).
void apply_gamma5(ColorSpinorField& out, const ColorSpinorField& in);

}  // namespace latke
