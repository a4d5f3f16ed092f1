// Launching the staggered kernels for one storage type: argument setup, the dispatch from
// run-time link storage to templates, and the halo choreography (as for Wilson-clover: pack
// on the comm stream, interior on the compute stream, exterior once the faces are in).
// Included only by the per-precision files.
#pragma once

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "src/core/halo.h"
#include "src/core/launch.h"
#include "src/core/policy.h"
#include "operators/staggered/staggered_kernel.h"
#include "operators/staggered/staggered_launch.h"

namespace latke::staggered {

inline Faces faces_of(const Lattice& lat, int depth) {
  Faces f;
  f.geom = LocalGeometry::of(lat);
  f.depth = depth;
  for (int mu = 0; mu < 4; ++mu) {
    const bool split = lat.partitioned(mu);
    f.comm_mask |= split << mu;
    f.face_cb[mu] = lat.face_volume_cb(mu);
    f.band[mu] = split ? std::min(2 * depth, lat.local()[mu]) : 0;
    f.band_begin[mu + 1] = f.band_begin[mu] + f.band[mu] * f.face_cb[mu];
    f.pack_begin[mu + 1] = f.pack_begin[mu] + (split ? 2 * depth * f.face_cb[mu] : 0);
  }
  return f;
}

template <typename Store, Reconstruct R>
GaugeAccessor<Store, R> ghost_accessor(void* data, float scale, int face_cb) {
  GaugeAccessor<Store, R> g;
  g.data = static_cast<Store*>(data);
  g.scale = scale;
  g.stride = face_cb;
  return g;
}

template <typename Store, Reconstruct RF, Reconstruct RL, bool Improved, bool Xpay>
void run_dslash(const DslashRequest& rq) {
  using T = typename compute_type<Store>::type;
  const Lattice& lat = rq.out->lattice();
  const Backend b = rq.out->backend();
  DslashArg<Store, RF, RL> arg;
  arg.out = rq.out->accessor<Store, 3, 1>();
  arg.in = rq.in->accessor<Store, 3, 1>();
  if (rq.x) arg.x = rq.x->accessor<Store, 3, 1>();
  arg.fat = rq.fat->accessor<Store, RF>();
  if constexpr (Improved) arg.lng = rq.lng->accessor<Store, RL>();
  arg.parity = rq.out->block_parity(0);
  arg.faces = faces_of(lat, rq.depth);
  for (int mu = 0; mu < 4; ++mu) {
    arg.offset[mu] = lat.offset()[mu];
    arg.global[mu] = lat.global()[mu];
    const Complex<double> z = rq.param->boundary_phase[mu];
    arg.phase[mu] = Complex<T>(static_cast<T>(z.re), static_cast<T>(z.im));
    if (z.re != 1.0 || z.im != 0.0) arg.phase_mask |= 1 << mu;
  }
  arg.a = static_cast<T>(rq.a);
  arg.b = static_cast<T>(rq.b);
  arg.long_scale = static_cast<T>(rq.long_scale);
  const int vcb = lat.volume_cb();
  using Kernel = DslashKernel<Store, RF, RL, Improved, Xpay, true>;
  // out = a D in + b out (x = out: apply_normal(x, x), reconstruct into the source) is not
  // idempotent, so no launch may run it repeatedly to time block sizes or exterior policies.
  const bool in_place = Xpay && rq.x->block_data(0) == rq.out->block_data(0);
  const bool tunable = !in_place;

  if (!rq.halo) {
    // Nothing split: naive runs a kernel without the halo code (the compiler keeps more loads
    // in flight: faster, docs/performance.md). The improved one keeps it: without, the compiler
    // hoists more loads, needs more registers and runs slower in half and double.
    arg.mode = all_sites;
    launch(b, DslashKernel<Store, RF, RL, Improved, Xpay, Improved>{arg}, {vcb}, compute_stream(), tunable);
    return;
  }
  PackKernel<Store> pack;
  pack.in = arg.in;
  pack.faces = arg.faces;
  pack.parity = 1 - arg.parity;
  // The boundary (band) sites are done whole: after the interior on the compute stream, or
  // on the halo stream as soon as the faces are in, concurrent with the interior, which skips
  // them (exterior_pass_choice: "overlap"; "partial" is Wilson-clover's and means whole here).
  auto run = [&](bool overlap) {
    rq.halo->begin(overlap);  // picks the receive set that recv_face returns
    for (int mu = 0; mu < 4; ++mu) {
      if (!lat.partitioned(mu)) continue;
      const int face_cb = arg.faces.face_cb[mu], sites = rq.depth * face_cb;
      for (int side = 0; side < 2; ++side) {
        pack.send[mu][side] = face_array<Store, 6>(rq.halo->send_face(mu, side), sites);
        arg.ghost[mu][side] = face_array<Store, 6>(rq.halo->recv_face(mu, side ? +1 : -1), sites);
      }
      arg.ghost_fat[mu] = ghost_accessor<Store, RF>(rq.ghost_fat[mu], rq.fat->scale(), face_cb);
      if constexpr (Improved)
        arg.ghost_long[mu] = ghost_accessor<Store, RL>(rq.ghost_long[mu], rq.lng->scale(), face_cb);
    }
    launch(b, pack, {arg.faces.pack_begin[4]}, comm_stream());
    arg.mode = interior;
    launch(b, Kernel{arg}, {vcb}, compute_stream(), tunable);
    rq.halo->finish();
    arg.mode = exterior;
    launch(b, Kernel{arg}, {arg.faces.band_begin[4]}, rq.halo->exterior_stream(), tunable);
    rq.halo->end();
  };
  int choice = exterior_pass_choice();
  if (choice < 0) {  // chosen once per kernel instance, local lattice and grid (as Wilson-clover's)
    static PolicyChoice policy;
    static const std::vector<std::string> names{"whole", "overlap"};
    // An in-place call is not timed: it takes the choice made on this lattice, else the whole pass.
    const int c = policy.get(
        lat,
        [&] {
          std::ostringstream key;
          key << "staggered_dslash_exterior " << sizeof(Store) << "B r" << static_cast<int>(RF) << static_cast<int>(RL)
              << (Improved ? " improved" : " naive") << (Xpay ? " xpay" : "");
          return key.str();
        },
        names,
        [&](int i) {
          for (int k = 0; k < 2; ++k) run(i == 1);  // warm-up: kernels tune here
          return time_per_call(b, 10, [&] { run(i == 1); });
        },
        !in_place);
    choice = c == 1 ? 2 : 0;
  }
  run(choice == 2);
}

template <typename Store, Reconstruct RF, Reconstruct RL, bool Improved>
void dispatch_xpay(const DslashRequest& rq) {
  if (rq.x)
    run_dslash<Store, RF, RL, Improved, true>(rq);
  else
    run_dslash<Store, RF, RL, Improved, false>(rq);
}

template <typename Store>
void launch_dslash(const DslashRequest& rq) {
  constexpr Reconstruct r18 = Reconstruct::r18, r12 = Reconstruct::r12;
  if (!rq.lng) {  // naive: the links at 18 or 12 reals
    if (rq.fat->reconstruct() == r12)
      dispatch_xpay<Store, r12, r18, false>(rq);
    else
      dispatch_xpay<Store, r18, r18, false>(rq);
  } else {  // improved: fat links at 18, long links at 18 or 12
    if (rq.lng->reconstruct() == r12)
      dispatch_xpay<Store, r18, r12, true>(rq);
    else
      dispatch_xpay<Store, r18, r18, true>(rq);
  }
}

}  // namespace latke::staggered
