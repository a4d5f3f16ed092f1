// Multigrid transfer between one level and the next coarser one: aggregates (blocks of fine
// sites), the near-null basis (Nvec fine fields, each split by chirality, so 2 Nvec coarse
// degrees of freedom per aggregate), prolongation P and restriction R = P^dag.
//
//   (P e)(x)_{s c}      = sum_k V_k(x)_{s c} e(a(x))_{chi(s), k}
//   (R f)(a)_{chi, k}   = sum_{x in a} sum_{s in chi, c} conj(V_k(x)_{s c}) f(x)_{s c}
//
// with a(x) the aggregate of x and chi(s) = s / (Ns/2): the spins 0,1 and 2,3 of a Wilson
// spinor are its two chiralities (gamma_5 = diag(1,1,-1,-1), conventions.h), and on a coarse
// level its two spins are. A coarse field has 2 spins (chirality) and Nvec colors; its site
// a is aggregate a, which covers the fine sites a * block + [0, block) of this rank. After
// orthonormalize() the basis restricted to each (aggregate, chirality) is orthonormal, so
// R P = 1 on the coarse space and P R is the projector onto the span of the basis.
//
// Every kernel is one functor source for both backends; fine fields may be in any shape
// (Ns x Nc, full lattice) and in double or single precision (half may be read by R).
#pragma once

#include <memory>
#include <vector>

#include "src/core/lattice.h"
#include "src/core/memory.h"
#include "src/fields/color_spinor_field.h"

namespace latke::mg {

/// @brief Check aggregates of the given extents on a fine lattice for level `level` (1 = the
/// first coarse level): each extent at least 2 and dividing the local extent, and the
/// coarse local extents even (Latke's even-odd layout needs them); fails naming the block,
/// the dimension and the extents.
void check_aggregates(const Lattice& fine, const Coords& block, int level);

class Transfer {
 public:
  /// @param fine the fine lattice; fine_param: the fine fields' spins, colors, backend, and
  ///        the basis storage precision (double or single).
  /// @param nvec basis vectors (coarse colors); the coarse space has 2 nvec per aggregate.
  /// @param packed precision of the basis as P and R read it (double, single or half).
  Transfer(std::shared_ptr<const Lattice> fine, const SpinorParam& fine_param, const Coords& block, int nvec, int level,
           Precision packed = Precision::single);

  const std::shared_ptr<const Lattice>& fine_lattice() const { return fine_; }
  const std::shared_ptr<const Lattice>& coarse_lattice() const { return coarse_; }
  /// Shape of the fine fields (full lattice) in precision p.
  SpinorParam fine_param(Precision p) const;
  /// Shape of the coarse fields (2 chiralities x nvec, full lattice) in precision p.
  SpinorParam coarse_param(Precision p) const;
  int nvec() const { return nvec_; }
  const Coords& block() const { return block_; }

  /// The basis V_k, k < nvec (full fine fields in the basis precision, one allocation).
  std::vector<ColorSpinorField>& vectors() { return v_; }
  const std::vector<ColorSpinorField>& vectors() const { return v_; }

  /// @brief Orthonormalize the basis within every (aggregate, chirality), in the order of the
  /// vectors (the Gram-Schmidt result), by a Cholesky QR applied twice with sums in double
  /// (transfer.cpp); then pack it for P and R (the packed basis is what R reads, and P except
  /// on a Wilson fine level, where it reads the vectors, or a half copy of them when the packed
  /// basis is half: per site and vector one record of
  /// the site's values, in the packed precision, half with a scale per record). Fails when
  /// the basis is not of full rank on some (aggregate, chirality): a vector vanishes there or
  /// lies in the span of the others to within 1e-6 of its norm (it would not span 2 nvec
  /// dimensions there).
  void orthonormalize();

  /// @brief fine = P coarse (fine overwritten; fine in single or double). A fine field of one
  /// parity receives that parity of P coarse (half the work).
  void prolongate(ColorSpinorField& fine, const ColorSpinorField& coarse) const;
  /// @brief fine = P e with e the unit vector of coarse component col on the aggregates of
  /// probe class cls (probe_classes.h; probe_all: on every aggregate) and zero elsewhere: a
  /// masked basis vector (galerkin.cpp).
  void prolongate_unit(ColorSpinorField& fine, int col, int cls) const;
  /// @brief coarse = R fine. A fine field of one parity stands for the full field that is
  /// zero on the other parity: R sums over its sites alone (half the basis read).
  void restrict_to(ColorSpinorField& coarse, const ColorSpinorField& fine) const;
  /// @brief restrict_to and prolongate for every field of two sets (ColorSpinorField::make_set)
  /// of equal size. For a Wilson fine level's fields in double or single, R runs one thread block
  /// per aggregate over all the fields (tiles of its sites in shared memory) and P reads the
  /// basis once per group of 4 fields, rather than once per field; a coarse level's fields
  /// in double or single go through the one-field kernels in one launch for the whole set;
  /// other fields go one by one.
  void restrict_set(std::vector<ColorSpinorField>& coarse, const std::vector<ColorSpinorField>& fine) const;
  void prolongate_set(std::vector<ColorSpinorField>& fine, const std::vector<ColorSpinorField>& coarse) const;
  /// @brief R over only the fine sites on the last slice (into last) and the first slice
  /// (into first) of their aggregate in dimension mu, in one pass: assembling the coarse
  /// operator's hops (galerkin.cpp).
  void restrict_faces(ColorSpinorField& last, ColorSpinorField& first, const ColorSpinorField& fine, int mu) const;
  /// @brief R of the split operator's outputs (LinearOperator::apply_split) in one pass over
  /// the basis: coarse[8] = R site, and coarse[2 mu], coarse[2 mu + 1] = the last and first of
  /// restrict_faces(face[mu], mu); a column of the Galerkin product (galerkin.cpp). The nine
  /// coarse fields are full fields of one precision; site and the four faces full fields of
  /// the level's shape.
  void restrict_split(std::vector<ColorSpinorField>& coarse, const ColorSpinorField& site,
                      const std::vector<ColorSpinorField>& face) const;
  /// @brief restrict_split for n columns at once, n = site.size(): column c's faces are face[4 c
  /// + mu], its nine outputs coarse[9 c + b]. Where the fields are sets (ColorSpinorField::
  /// make_set) of a Wilson fine level's full fields in double or single, one pass over the basis
  /// for all n (the Galerkin product's columns in batches; with many vectors, in parts of as
  /// many columns as a team's shared memory holds); otherwise column by column.
  void restrict_split_set(std::vector<ColorSpinorField>& coarse, const std::vector<ColorSpinorField>& site,
                          const std::vector<ColorSpinorField>& face) const;

  /// Bytes of the basis on the backend.
  std::size_t bytes() const;

 private:
  void restrict_impl(ColorSpinorField& coarse, ColorSpinorField* first, const ColorSpinorField& fine, int mu) const;
  /// P from the packed basis into n fields of a set (n = 1: one field), f0 and c0 their first:
  /// one thread per (field, fine site, component), one launch per fine parity.
  void prolongate_packed(const ColorSpinorField& f0, const ColorSpinorField& c0, int n) const;
  /// R's partial sums: parts_ grown to hold records of `width` complex values for every
  /// (chunk, aggregate, k), with chunks of an aggregate's n_sites sites chosen to fill the device.
  Complex<double>* restrict_parts(int n_sites, int width, Backend backend, int& chunks) const;
  void pack();
  /// f(PackedBasis<S>) for the packed basis's storage type.
  template <typename F>
  void with_packed(F&& f) const;

  std::shared_ptr<const Lattice> fine_, coarse_;
  SpinorParam fine_param_;
  Coords block_;
  int nvec_;
  std::vector<ColorSpinorField> v_;
  std::vector<ColorSpinorField> v_half_;  ///< half copy of v_ that P reads (Wilson fine level, half basis)
  Precision packed_precision_;
  Buffer packed_, packed_scale_;
  mutable Buffer parts_;  ///< R's partial sums per chunk of an aggregate
};

}  // namespace latke::mg
