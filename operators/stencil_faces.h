// What the nearest-neighbour operators (Wilson-clover, staggered) share in their halo
// launches: the part of a request common to both, and the layout of a face buffer (the face
// sites' vectors, then in half precision one float norm per site).
#pragma once

#include <cstddef>

#include "src/core/halo.h"
#include "src/fields/color_spinor_field.h"
#include "src/fields/site_array.h"

namespace latke {

/// The fields of one stencil application: out = (stencil) in, with an optional xpay input.
struct StencilFields {
  ColorSpinorField* out;
  const ColorSpinorField* in;
  const ColorSpinorField* x;  ///< xpay input or nullptr
  HaloExchange* halo;         ///< nullptr when nothing is split
};

/// Bytes of one face site of NReal reals in storage Store (plus its norm in half precision).
template <typename Store, int NReal>
constexpr std::size_t face_site_bytes() {
  return NReal * sizeof(Store) + (sizeof(Store) == 2 ? sizeof(float) : 0);
}

/// Bytes of one field's region in the face of a set exchanged at once (field k's region starts
/// k of these into the face): `sites` face sites of site_bytes each, rounded up to 256.
inline std::size_t set_face_region(int sites, std::size_t site_bytes) {
  return (static_cast<std::size_t>(sites) * site_bytes + 255) / 256 * 256;
}

/// A face buffer of `sites` sites of NReal reals: the vectors, then (half) their norms.
template <typename Store, int NReal>
SiteArray<Store, NReal, 1> face_array(void* region, int sites) {
  SiteArray<Store, NReal, 1> s;
  s.data = static_cast<Store*>(region);
  s.norm = reinterpret_cast<float*>(static_cast<char*>(region) + NReal * sizeof(Store) * static_cast<std::size_t>(sites));
  s.stride = sites;
  return s;
}

}  // namespace latke
