// The staples of a link on the extended links (host and device code), shared by the quenched
// generator's heat bath and by link smearing.
#pragma once

#include "src/fields/extended_links.h"
#include "src/fields/su3_update.h"

namespace latke::gauge {

/// @brief A = the sum of the staples of U_mu(x) in the planes (mu, nu), nu < n_nu, nu != mu,
/// ordered so that U_mu(x) A is the sum of the plaquettes through the link:
///   A = sum_nu U_nu(x+mu) U_mu(x+nu)^dag U_nu(x)^dag + U_nu(x+mu-nu)^dag U_mu(x-nu)^dag U_nu(x-nu).
/// n_nu = 4: all six staples (the Wilson action); 3: the spatial ones. e: x's extended index.
LATKE_HOST_DEVICE LATKE_INLINE M3 staples(const ExtLinks& ext, long e, int mu, int n_nu = 4) {
  M3 a;
  for (int nu = 0; nu < n_nu; ++nu) {
    if (nu == mu) continue;
    const long sm = ext.stride[mu], sn = ext.stride[nu];
    M3 p, q, r;
    // U_nu(x+mu) U_mu(x+nu)^dag U_nu(x)^dag = U_nu(x+mu) [U_nu(x) U_mu(x+nu)]^dag
    ext.load(e + sm, nu, p);
    ext.load(e + sn, mu, q);
    ext.load(e, nu, r);
    const M3 up = mul_adj(p, r * q);
    // U_nu(x+mu-nu)^dag U_mu(x-nu)^dag U_nu(x-nu) = [U_mu(x-nu) U_nu(x+mu-nu)]^dag U_nu(x-nu)
    ext.load(e + sm - sn, nu, p);
    ext.load(e - sn, mu, q);
    ext.load(e - sn, nu, r);
    const M3 down = adj_mul(q * p, r);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) a.e[i][j] += up.e[i][j] + down.e[i][j];
  }
  return a;
}

}  // namespace latke::gauge
