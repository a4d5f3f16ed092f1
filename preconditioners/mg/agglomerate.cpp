// Agglomeration of a multigrid level (agglomerate.h): the grid and communicators of the copies,
// the site maps between the spread lattice and a copy's part, and the gather (host-staged
// all-gather within a group, then one placing kernel) and scatter (one kernel). Compiled by
// nvcc in CUDA builds.
#include "preconditioners/mg/agglomerate.h"

#include <mpi.h>

#include <cstring>
#include <limits>
#include <vector>

#include "src/core/error.h"
#include "src/core/lattice.h"
#include "src/core/launch.h"
#include "src/core/sites_on_domain.h"

namespace latke::mg {

namespace {

/// out(parity, x) = in(chunk, parity, site) with map[parity * out_vcb + x] = chunk * in.stride
/// + site: one thread per (output site, real). Chunks are full fields laid end to end (the
/// all-gathered parts), or one (the whole field, for a scatter).
template <typename S>
struct PlaceKernel {
  RealArray<S> out, in;  ///< parity-0 blocks (of chunk 0 for in)
  const int* map;
  long out_block, in_block, in_chunk;  ///< in elements
  int out_vcb, reals;
  LATKE_HOST_DEVICE void operator()(int idx, int parity) const {
    const int r = idx % reals, x = idx / reals;
    const int m = map[parity * out_vcb + x];
    const int chunk = m / in.stride, site = m - chunk * in.stride;
    RealArray<S> o = out, i = in;
    o.data += parity * out_block;
    i.data += chunk * in_chunk + parity * in_block;
    o.template set<S>(r, x, i.template get<S>(r, site));
  }
};

Buffer upload(Backend b, const std::vector<int>& host) {
  Buffer d(memory_for(b), host.size() * sizeof(int));
  copy_bytes(d.data(), host.data(), d.bytes(), compute_stream());
  synchronize(compute_stream());
  return d;
}

/// The linear index of c on `grid`, the last dimension fastest (MPI's Cartesian rank order).
int grid_index(const Coords& c, const Coords& grid) {
  return ((c[0] * grid[1] + c[1]) * grid[2] + c[2]) * grid[3] + c[3];
}

}  // namespace

Coords telescope_grid(const Coords& global, const Coords& grid, int ranks) {
  const int all = grid[0] * grid[1] * grid[2] * grid[3];
  require(ranks >= 1 && ranks <= all && all % ranks == 0, "agglomeration onto ", ranks,
          " ranks: expected a divisor of the ", all, " ranks of the grid ", coords_text(grid));
  Coords onto = grid;
  std::vector<int> primes;  // of all / ranks, largest first
  for (int n = all / ranks, p = 2; n > 1;) {
    if (n % p == 0) {
      primes.insert(primes.begin(), p);
      n /= p;
    } else {
      ++p;
    }
  }
  // A prime of what is left to merge divides the product of onto's extents, so one of them.
  for (int p : primes) {
    int best = -1;
    for (int mu = 0; mu < 4; ++mu)
      if (onto[mu] % p == 0 && (best < 0 || global[mu] / onto[mu] < global[best] / onto[best])) best = mu;
    onto[best] /= p;
  }
  return onto;
}

Agglomeration::Agglomeration(std::shared_ptr<const Lattice> part, Backend backend, int ranks)
    : part_(std::move(part)), backend_(backend) {
  const Coords grid = part_->grid(), onto_grid = telescope_grid(part_->global(), grid, ranks);
  // This rank's block of the onto grid (its domain) and its place within the block (its copy).
  Coords domain, within, per;
  for (int mu = 0; mu < 4; ++mu) {
    per[mu] = grid[mu] / onto_grid[mu];
    const int c = part_->offset()[mu] / part_->local()[mu];
    domain[mu] = c / per[mu];
    within[mu] = c % per[mu];
  }
  const int d = grid_index(domain, onto_grid), w = grid_index(within, per);
  MPI_Comm copy = MPI_COMM_NULL;
  int rc = MPI_Comm_split(part_->comm(), w, d, &copy);  // one copy's ranks, in the onto grid's order
  require(rc == MPI_SUCCESS, "agglomeration: MPI_Comm_split failed (code ", rc, ")");
  onto_ = std::make_shared<Lattice>(copy, part_->global(), onto_grid);  // copies the communicator
  MPI_Comm_free(&copy);
  rc = MPI_Comm_split(part_->comm(), d, w, &group_);  // the ranks of one domain
  require(rc == MPI_SUCCESS, "agglomeration: MPI_Comm_split failed (code ", rc, ")");
  require(onto_->offset() == Coords{domain[0] * onto_->local()[0], domain[1] * onto_->local()[1],
                                    domain[2] * onto_->local()[2], domain[3] * onto_->local()[3]},
          "agglomeration: the ranks of ", onto_->describe(), " are not in the grid's order");
  const int members = copies(), vcb = part_->volume_cb(), wcb = onto_->volume_cb();
  const std::vector<int> site = sites_on_domain(*part_, *onto_, group_);
  std::vector<int> gmap(2 * static_cast<std::size_t>(wcb), -1), smap(2 * static_cast<std::size_t>(vcb));
  for (int r = 0; r < members; ++r)
    for (int p = 0; p < 2; ++p)
      for (int x = 0; x < vcb; ++x) {
        const int o = site[(static_cast<std::size_t>(r) * 2 + p) * vcb + x];
        gmap[static_cast<std::size_t>(p) * wcb + o] = r * vcb + x;
        if (r == w) smap[static_cast<std::size_t>(p) * vcb + x] = o;
      }
  for (int m : gmap) require(m >= 0, "agglomeration: the ranks' parts do not cover ", onto_->describe());
  gather_map_ = upload(backend_, gmap);
  scatter_map_ = upload(backend_, smap);
}

std::string Agglomeration::where(int world) const {
  if (ranks() == 1) return "whole onto each of the " + std::to_string(world) + " ranks";
  return "onto " + std::to_string(ranks()) + " ranks (grid " + coords_text(onto_->grid()) + "), " +
         std::to_string(world / ranks()) + " copies";
}

Agglomeration::~Agglomeration() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && group_ != MPI_COMM_NULL) MPI_Comm_free(&group_);
}

void Agglomeration::check(const ColorSpinorField& whole, const ColorSpinorField& part, const char* what) const {
  require(whole.n_parity() == 2 && part.n_parity() == 2 && whole.precision() == part.precision() &&
              whole.precision() != Precision::half && whole.nspin() == part.nspin() &&
              whole.ncolor() == part.ncolor() && whole.backend() == backend_ && part.backend() == backend_ &&
              whole.lattice().volume() == onto_->volume() && part.lattice().volume() == part_->volume() &&
              whole.lattice().size() == onto_->size(),
          "agglomeration (", what, "): expected full double or single fields of one shape on the ", to_string(backend_),
          " backend, on ", onto_->describe(), " and on its part ", part_->describe());
}

const void* Agglomeration::all_gather(const void* from, std::size_t mine) {
  const Backend b = backend_;
  const int ranks = copies();
  require(mine * ranks <= static_cast<std::size_t>(std::numeric_limits<int>::max()), "agglomeration: ", mine,
          " bytes per rank are too many to gather");
  const MemoryKind staging = b == Backend::cuda ? MemoryKind::pinned : MemoryKind::host;
  if (stage_.bytes() != mine) {
    stage_ = Buffer(staging, mine);
    stage_all_ = Buffer(staging, mine * ranks);
    if (b == Backend::cuda) device_all_ = Buffer(MemoryKind::device, mine * ranks);
  }
  copy_bytes(stage_.data(), from, mine, compute_stream());
  synchronize(compute_stream());
  const int rc = MPI_Allgather(stage_.data(), static_cast<int>(mine), MPI_BYTE, stage_all_.data(),
                               static_cast<int>(mine), MPI_BYTE, group_);
  require(rc == MPI_SUCCESS, "agglomeration: MPI_Allgather of ", mine, " bytes per rank failed (code ", rc, ")");
  if (b != Backend::cuda) return stage_all_.data();
  copy_bytes(device_all_.data(), stage_all_.data(), mine * ranks, compute_stream());
  return device_all_.data();
}

void Agglomeration::gather(ColorSpinorField& whole, const ColorSpinorField& part) {
  check(whole, part, "gather");
  const void* all = all_gather(part.block_data(0), 2 * part.block_bytes());
  place(whole, all, part.lattice().volume_cb(), static_cast<const int*>(gather_map_.data()));
}

void Agglomeration::gather_set(std::vector<ColorSpinorField>& whole, const std::vector<ColorSpinorField>& part) {
  require(whole.size() == part.size() && is_set(whole) && is_set(part), "agglomeration (gather_set): expected two ",
          "sets (make_set) of equal size");
  check(whole[0], part[0], "gather_set");
  const int n = static_cast<int>(part.size());
  const std::size_t field = 2 * part[0].block_bytes();
  const char* all = static_cast<const char*>(all_gather(part[0].block_data(0), field * n));
  for (int k = 0; k < n; ++k)
    place(whole[k], all + field * k, part[0].lattice().volume_cb(), static_cast<const int*>(gather_map_.data()), n);
}

void Agglomeration::scatter(ColorSpinorField& part, const ColorSpinorField& whole) {
  check(whole, part, "scatter");
  place(part, whole.block_data(0), whole.lattice().volume_cb(), static_cast<const int*>(scatter_map_.data()));
}

void Agglomeration::place(ColorSpinorField& out, const void* in, int in_vcb, const int* map, int fields) {
  const int reals = out.site_reals(), vcb = out.lattice().volume_cb();
  auto run = [&](auto s) {
    using S = decltype(s);
    PlaceKernel<S> k;
    k.out = real_array<S>(out, 0);
    k.in = k.out;
    k.in.data = static_cast<S*>(const_cast<void*>(in));
    k.in.stride = in_vcb;
    k.map = map;
    k.out_block = static_cast<long>(reals) * vcb;
    k.in_block = static_cast<long>(reals) * in_vcb;
    k.in_chunk = 2 * k.in_block * fields;
    k.out_vcb = vcb;
    k.reals = reals;
    launch(out.backend(), k, {vcb * reals, 0, 2}, compute_stream(), false);
  };
  if (out.precision() == Precision::double_)
    run(double{});
  else
    run(float{});
}

}  // namespace latke::mg
