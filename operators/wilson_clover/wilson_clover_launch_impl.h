// Launching the Wilson-clover kernels for one storage type: argument setup, the dispatch
// from run-time reconstruct and epilogue to templates, and the halo choreography (pack on
// the comm stream, interior on the compute stream, exterior once the faces are in).
// Included only by the per-precision files.
#pragma once

#include <cstdlib>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "operators/wilson_clover/wilson_clover_kernel.h"
#include "operators/wilson_clover/wilson_clover_launch.h"
#include "src/core/environment.h"
#include "src/core/error.h"
#include "src/core/halo.h"
#include "src/core/launch.h"
#include "src/core/memory.h"
#include "src/core/policy.h"
#include "src/fields/blas.h"

namespace latke::wilson {

/// The kernel argument of a request (all modes; field 0 of a set).
template <typename Store, Reconstruct R>
DslashArg<Store, R> make_arg(const DslashRequest& rq) {
  const Lattice& lat = rq.out->lattice();
  using T = typename compute_type<Store>::type;
  DslashArg<Store, R> arg;
  arg.out = rq.out->accessor<Store, 3, 4>();
  arg.in = rq.in->accessor<Store, 3, 4>();
  if (rq.x) arg.x = rq.x->accessor<Store, 3, 4>();
  arg.gauge = rq.gauge->accessor<Store, R>();
  arg.parity = rq.out->block_parity(0);
  if (rq.clover) arg.clover = rq.clover->accessor<Store>(arg.parity);
  arg.faces = face_geometry(lat);
  if (rq.param->block[0] > 0) {  // domain-local: no faces, hops leaving a block dropped
    arg.faces.comm_mask = 0;
    for (int mu = 0; mu < 4; ++mu) {
      arg.block[mu] = rq.param->block[mu];
      if (rq.param->block[mu] < lat.global()[mu]) arg.cut_mask |= 1 << mu;
    }
  }
  if (rq.split_block) {
    for (int mu = 0; mu < 4; ++mu) arg.block[mu] = rq.split_block[mu];
    if (rq.split_dim < 0) {  // inside blocks: no hop crosses a rank (blocks tile it)
      arg.faces.comm_mask = 0;
      arg.cut_mask = 15;
    } else if (rq.split_dim == split_across_blocks) {  // a block as wide as the lattice has no boundary in mu
      arg.inner_mask = 15;
      for (int mu = 0; mu < 4; ++mu) {
        if (rq.split_block[mu] >= lat.global()[mu]) arg.cut_mask |= 1 << mu;
        arg.colour_base += lat.offset()[mu] / rq.split_block[mu];
      }
      arg.skip_colour = rq.skip_colour;
    } else {
      arg.inner_mask = 15;
      arg.cut_mask = 15 & ~(1 << rq.split_dim);
    }
  }
  for (int mu = 0; mu < 4; ++mu) {
    const int last = lat.global()[mu] - 1 - lat.offset()[mu];
    arg.last_slice[mu] = last < lat.local()[mu] ? last : -1;
    arg.first_slice[mu] = lat.offset()[mu] == 0 ? 0 : -1;
    const Complex<double> z = rq.param->boundary_phase[mu];
    arg.phase[mu] = Complex<T>(static_cast<T>(z.re), static_cast<T>(z.im));
    if (z.re != 1.0 || z.im != 0.0) arg.phase_mask |= 1 << mu;
  }
  arg.a = static_cast<T>(rq.a);
  arg.sign = rq.dagger ? T(1) : T(-1);
  return arg;
}

/// The pack kernel of the faces of arg's input (the parity opposite arg's output).
template <typename Store, Reconstruct R>
PackKernel<Store, R> make_pack(const DslashArg<Store, R>& arg) {
  PackKernel<Store, R> pack;
  pack.in = arg.in;
  pack.gauge = arg.gauge;
  pack.faces = arg.faces;
  pack.parity = 1 - arg.parity;
  for (int mu = 0; mu < 4; ++mu) {
    pack.last_slice[mu] = arg.last_slice[mu];
    pack.phase[mu] = arg.phase[mu];
  }
  pack.phase_mask = arg.phase_mask;
  pack.sign = arg.sign;
  return pack;
}

/// Words from field 0 to field 1 of a set made by make_set (and of their norms in half).
template <typename Store>
void set_steps(const DslashRequest& rq, long& step, long& step_norm) {
  step = static_cast<long>(rq.out->n_parity() * rq.out->block_bytes() / sizeof(Store));  // make_set's layout
  step_norm = sizeof(Store) == 2 ? rq.out->lattice().volume_cb() : 0;
}

/// Per field of a set, the sum of its input's site norms squared, on the backend: the half pair
/// kernel's scales (set_max doubles, reused launch to launch in stream order).
inline double* half_pair_norms(Backend b) {
  static Buffer device, host;
  Buffer& buf = b == Backend::cuda ? device : host;
  if (!buf.data()) buf = Buffer(memory_for(b), blas::set_max * sizeof(double));
  return static_cast<double*>(buf.data());
}

template <Reconstruct R, Epilogue E, bool SkipFaces>
void run_dslash_set_half_pairs(const DslashRequest& rq, const DslashArg<short, R>& arg) {
  using K = DslashSetHalfPairKernel<R, E, SkipFaces>;
  K k;
  k.arg = arg;
  k.count = rq.count;
  const int pairs = (rq.count + 1) / 2;
  k.pairs_log2 = K::pairs_log2_for(pairs);
  k.quads = (pairs + (1 << k.pairs_log2) - 1) >> k.pairs_log2;
  k.vcb = rq.out->lattice().volume_cb();
  set_steps<short>(rq, k.step, k.step_norm);
  const Backend b = rq.out->backend();
  double* norm2 = half_pair_norms(b);
  launch_segmented_reduce<double>(b, SetNormSquares{arg.in, k.step_norm}, rq.count, k.vcb, norm2);
  k.norm2 = norm2;
  const int spw = k.sites_per_warp();
  const long threads = static_cast<long>((k.vcb + spw - 1) / spw) * k.quads * 32;
  require(threads < (1L << 31), "Wilson-clover dslash over a set: ", rq.count, " fields of ", k.vcb,
          " sites need more threads than one launch takes");
  launch(b, k, {static_cast<int>(threads)});
}

template <typename Store, Reconstruct R, Epilogue E, bool SkipFaces>
void run_dslash_set(const DslashRequest& rq, DslashArg<Store, R> arg) {
  if constexpr (std::is_same_v<Store, short>) {
    if (rq.param->half_pairs) return run_dslash_set_half_pairs<R, E, SkipFaces>(rq, arg);
  }
  using K = DslashSetKernel<Store, R, E, SkipFaces>;
  K k;
  k.arg = arg;
  k.count = rq.count;
  k.quads = (rq.count + K::fields_per_warp - 1) / K::fields_per_warp;
  k.vcb = rq.out->lattice().volume_cb();
  set_steps<Store>(rq, k.step, k.step_norm);
  const long threads = static_cast<long>((k.vcb + K::sites_per_warp - 1) / K::sites_per_warp) * k.quads * 32;
  require(threads < (1L << 31), "Wilson-clover dslash over a set: ", rq.count, " fields of ", k.vcb,
          " sites need more threads than one launch takes");
  launch(rq.out->backend(), k, {static_cast<int>(threads)});
}

/// A set on a split lattice, through rq.halo (made for rq.count fields: field k's faces at k
/// set_face_region()s into each face): every field's faces packed on the comm stream, the
/// interior sites of the whole set in one pass over links and clover meanwhile, then each
/// field's boundary sites (DslashKernel's exterior mode) on the halo stream once the faces are in.
template <typename Store, Reconstruct R, Epilogue E>
void run_dslash_set_halo(const DslashRequest& rq, DslashArg<Store, R> arg) {
  const Lattice& lat = rq.out->lattice();
  const Backend b = rq.out->backend();
  long step = 0, step_norm = 0;
  set_steps<Store>(rq, step, step_norm);
  const int n_face = arg.faces.face_begin[4];
  std::size_t region[4] = {};
  for (int mu = 0; mu < 4; ++mu)
    if (lat.partitioned(mu)) region[mu] = set_face_region(arg.faces.face_cb[mu], face_site_bytes<Store, 12>());
  auto at = [](void* face, std::size_t offset) { return static_cast<char*>(face) + offset; };
  rq.halo->begin(true);
  PackKernel<Store, R> pack = make_pack(arg);
  for (int k = 0; k < rq.count; ++k) {
    pack.in = set_field(arg.in, k, step, step_norm);
    for (int mu = 0; mu < 4; ++mu)
      if (lat.partitioned(mu))
        for (int side = 0; side < 2; ++side)
          pack.send[mu][side] = face_array<Store, 12>(at(rq.halo->send_face(mu, side), k * region[mu]), arg.faces.face_cb[mu]);
    launch(b, pack, {n_face}, comm_stream());
  }
  run_dslash_set<Store, R, E, true>(rq, arg);
  rq.halo->finish();
  for (int k = 0; k < rq.count; ++k) {
    DslashArg<Store, R> a = arg;
    a.out = set_field(arg.out, k, step, step_norm);
    a.in = set_field(arg.in, k, step, step_norm);
    a.x = set_field(arg.x, k, step, step_norm);
    for (int mu = 0; mu < 4; ++mu)
      if (lat.partitioned(mu))
        for (int side = 0; side < 2; ++side)
          a.ghost[mu][side] =
              face_array<Store, 12>(at(rq.halo->recv_face(mu, side ? +1 : -1), k * region[mu]), arg.faces.face_cb[mu]);
    a.mode = exterior;
    launch(b, DslashKernel<Store, R, E>{a}, {n_face}, rq.halo->exterior_stream());
  }
  rq.halo->end();
}

/// The interior kernel of the whole and overlap passes, from LATKE_WILSON_INTERIOR: 1 "lean"
/// (LocalDslashKernel skipping the boundary sites), 0 "halo" (DslashKernel's interior mode), -1 "auto" or unset (the
/// autotuner tries both; a pass chosen by hand takes "halo").
inline int interior_kernel_choice() {
  static const int choice = [] {
    const std::string v = env_choice("LATKE_WILSON_INTERIOR", {"auto", "halo", "lean"});
    return v == "auto" ? -1 : v == "lean" ? 1 : 0;
  }();
  return choice;
}

template <typename Store, Reconstruct R, Epilogue E>
void run_dslash(const DslashRequest& rq) {
  const Lattice& lat = rq.out->lattice();
  const Backend b = rq.out->backend();
  DslashArg<Store, R> arg = make_arg<Store, R>(rq);
  const int vcb = lat.volume_cb();
  // out += a D in (the xpay epilogues with x = out: SAP's boundary update) is not idempotent, so
  // neither launch may run it repeatedly to time block sizes or exterior policies.
  const bool in_place = rq.x && rq.x->block_data(0) == rq.out->block_data(0);
  const bool tunable = !in_place;
  if (rq.count > 1) {
    // Sets: the even-odd operator's epilogues (what the set solvers run).
    constexpr bool set_kernel =
        E == Epilogue::clover_inv || E == Epilogue::clover_inv_xpay || E == Epilogue::clover_xpay;
    require(set_kernel, "Wilson-clover dslash over a set: only the even-odd operator's clover epilogues are built ",
            "for sets");
    require(!in_place, "Wilson-clover dslash over a set: the output must not be the xpay input");
    if constexpr (set_kernel) {
      if (rq.halo) return run_dslash_set_halo<Store, R, E>(rq, arg);  // (no halo where blocks mask hops)
      return run_dslash_set<Store, R, E, false>(rq, arg);
    }
  }

  if (!rq.halo) {  // nothing split over ranks: the kernel without the halo's code (docs/performance.md)
    require(arg.faces.comm_mask == 0, "Wilson-clover dslash: dimensions split over ranks but no halo exchange");
    if (arg.skip_colour >= 0) {
      // sap_boundary's two forms: r_q = a D_hop dx_p, s_p += a A^-1 D_hop dx_q
      constexpr bool boundary = E == Epilogue::plain || E == Epilogue::clover_inv_xpay;
      require(boundary, "Wilson-clover dslash: skipping a colour of blocks takes the plain or the clover_inv_xpay ",
              "epilogue (SAP's boundary update)");
      if constexpr (boundary) {
        BlockBoundaryKernel<Store, R, E> k{arg};
        const int bx = arg.block[0], lx = lat.local()[0];
        if (rq.colour_order && bx % 2 == 0 && lx % (2 * bx) == 0) k.run = bx / 2;  // an even number of blocks along x
        // Colour by colour: the skipped colour's threads are needed only to zero its sites.
        launch(b, k, {k.run > 0 && E != Epilogue::plain ? vcb / 2 : vcb}, compute_stream(), tunable);
      }
      return;
    }
    launch(b, LocalDslashKernel<Store, R, E>{arg}, {vcb}, compute_stream(), tunable);
    return;
  }
  PackKernel<Store, R> pack = make_pack(arg);
  const int n_face = arg.faces.face_begin[4];
  using T = typename compute_type<Store>::type;
  // The policy: the exterior pass (halo.h, exterior_pass_choice) and the interior kernel.
  //   0 whole: boundary sites whole after the interior (DslashKernel's interior mode);
  //   1 partial: their on-rank hops in the interior pass, the face hops after the exchange;
  //   2 overlap: whole, on the halo stream as soon as the faces are in, concurrent with the
  //     interior (which skips those sites);
  //   3, 4: 0 and 2 with the lean interior pass (LocalDslashKernel skipping the boundary sites).
  // Where blocks mask hops (apply_split) only 0.
  auto run = [&](int policy) {
    const bool partial = policy == 1, overlap = policy == 2 || policy == 4, lean = policy >= 3;
    if (partial) {
      arg.slots = n_face;
      arg.partial = static_cast<T*>(rq.halo->scratch(static_cast<std::size_t>(24) * n_face * sizeof(T)));
    }
    rq.halo->begin(overlap);  // picks the receive set that recv_face returns, and where faces go
    for (int mu = 0; mu < 4; ++mu)
      if (lat.partitioned(mu))
        for (int side = 0; side < 2; ++side) {
          pack.send[mu][side] = face_array<Store, 12>(rq.halo->send_face(mu, side), arg.faces.face_cb[mu]);
          arg.ghost[mu][side] = face_array<Store, 12>(rq.halo->recv_face(mu, side ? +1 : -1), arg.faces.face_cb[mu]);
        }
    launch(b, pack, {n_face}, comm_stream());
    if (lean) {
      launch(b, LocalDslashKernel<Store, R, E, true>{arg}, {vcb}, compute_stream(), tunable);
    } else {
      arg.mode = partial ? interior_partial : interior;
      launch(b, DslashKernel<Store, R, E>{arg}, {vcb}, compute_stream(), tunable);
    }
    rq.halo->finish();
    arg.mode = partial ? exterior_partial : exterior;
    launch(b, DslashKernel<Store, R, E>{arg}, {n_face}, rq.halo->exterior_stream(), tunable);
    rq.halo->end();
  };
  const bool may_split = arg.cut_mask == 0 && arg.inner_mask == 0;
  const int pass = may_split ? exterior_pass_choice() : 0, interior = interior_kernel_choice();
  int choice = pass == 1 ? 1 : pass + (pass >= 0 && interior == 1 ? 3 : 0);  // whole 0/3, overlap 2/4
  if (pass < 0) {
    // Chosen once per kernel instance, local lattice and process grid, the same on every rank;
    // timed on this call's fields, which the candidates overwrite alike. With
    // LATKE_WILSON_INTERIOR set, only that interior kernel's policies.
    static PolicyChoice policy;
    static const std::vector<int> candidates =
        interior == 0 ? std::vector<int>{0, 1, 2} : interior == 1 ? std::vector<int>{3, 1, 4} : std::vector<int>{0, 1, 2, 3, 4};
    static const std::vector<std::string> names = [] {
      const char* const all[] = {"whole", "partial", "overlap", "whole, lean interior", "overlap, lean interior"};
      std::vector<std::string> v;
      for (int c : candidates) v.emplace_back(all[c]);
      return v;
    }();
    // An in-place call is not timed (each candidate would add to out again): it takes the choice
    // a call of this kernel made on this lattice, else the first candidate, the whole pass.
    const int c = policy.get(
        lat,
        [&] {
          std::ostringstream key;
          key << "wilson_dslash_exterior " << sizeof(Store) << "B r" << static_cast<int>(R) << " e"
              << static_cast<int>(E)
              << (interior < 0 ? ""
                  : interior   ? " lean"
                               : " halo");
          return key.str();
        },
        names,
        [&](int i) {
          for (int k = 0; k < 2; ++k) run(candidates[i]);  // warm-up (with time_per_call's): kernels tune here
          return time_per_call(b, 10, [&] { run(candidates[i]); });
        },
        !in_place);
    choice = candidates[c];
  }
  run(choice);
}

template <typename Store, Reconstruct R>
void dispatch_epilogue(const DslashRequest& rq) {
  switch (rq.epilogue) {
    case Epilogue::plain: return run_dslash<Store, R, Epilogue::plain>(rq);
    case Epilogue::clover_inv: return run_dslash<Store, R, Epilogue::clover_inv>(rq);
    case Epilogue::clover_xpay: return run_dslash<Store, R, Epilogue::clover_xpay>(rq);
    case Epilogue::clover_inv_xpay: return run_dslash<Store, R, Epilogue::clover_inv_xpay>(rq);
    case Epilogue::xpay: return run_dslash<Store, R, Epilogue::xpay>(rq);
  }
}

template <typename Store>
void launch_dslash(const DslashRequest& rq) {
  if (rq.gauge->reconstruct() == Reconstruct::r12) dispatch_epilogue<Store, Reconstruct::r12>(rq);
  else dispatch_epilogue<Store, Reconstruct::r18>(rq);
}

template <typename Store>
void launch_clover(ColorSpinorField& out, const ColorSpinorField& in, const CloverField& clover) {
  for (int blk = 0; blk < out.n_parity(); ++blk) {
    CloverKernel<Store> k{out.accessor<Store, 3, 4>(blk), in.accessor<Store, 3, 4>(blk),
                          clover.accessor<Store>(out.block_parity(blk))};
    launch(out.backend(), k, {out.lattice().volume_cb()});
  }
}

}  // namespace latke::wilson
