// Lattice geometry and the process grid.
#include "src/core/lattice.h"

#include <limits>

#include <sstream>
#include <vector>

#include "src/core/error.h"

namespace latke {

std::string coords_text(const Coords& c) {
  std::ostringstream s;
  s << c[0] << "," << c[1] << "," << c[2] << "," << c[3];
  return s.str();
}

Coords parse_coords(const std::string& text, const std::string& what) {
  Coords c{};
  std::stringstream s(text);
  std::string item;
  int n = 0;
  while (std::getline(s, item, ',')) {
    require(n < 4, what, " '", text, "': expected four comma-separated integers");
    std::size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(item, &used);
    } catch (const std::exception&) {
      fail(what, " '", text, "': '", item, "' is not an integer");
    }
    require(used == item.size() && v > 0, what, " '", text, "': '", item, "' is not a positive integer");
    c[n++] = v;
  }
  require(n == 4, what, " '", text, "': expected four comma-separated integers, got ", n);
  return c;
}

Coords choose_grid(const Coords& global, int nranks) {
  Coords grid{1, 1, 1, 1};
  std::vector<int> primes;
  for (int n = nranks, p = 2; n > 1;) {
    if (n % p == 0) { primes.insert(primes.begin(), p); n /= p; } else ++p;
  }
  for (int p : primes) {  // largest first
    int best = -1;
    for (int mu = 3; mu >= 0; --mu) {
      const int l = global[mu] / grid[mu];
      if (global[mu] % (grid[mu] * p) != 0 || (l / p) % 2 != 0) continue;
      // Largest local extent first; on a tie, a dimension split less so far (smaller surface).
      const int lb = best < 0 ? 0 : global[best] / grid[best];
      if (best < 0 || l > lb || (l == lb && grid[mu] < grid[best])) best = mu;
    }
    require(best >= 0, "cannot split the lattice ", coords_text(global), " over ", nranks,
            " ranks with even local extents; give -latke_grid explicitly or use another rank count");
    grid[best] *= p;
  }
  return grid;
}

Lattice::Lattice(MPI_Comm comm, const Coords& global, const Coords& grid_in) : global_(global) {
  MPI_Comm_size(comm, &size_);
  for (int mu = 0; mu < 4; ++mu)
    require(global[mu] > 0, "lattice extent ", global[mu], " in dimension ", mu, ": expected a positive integer");
  const bool chosen = grid_in == Coords{0, 0, 0, 0};
  grid_ = chosen ? choose_grid(global, size_) : grid_in;
  require(grid_[0] * grid_[1] * grid_[2] * grid_[3] == size_, "process grid ", coords_text(grid_),
          " has ", grid_[0] * grid_[1] * grid_[2] * grid_[3], " ranks but the communicator has ", size_);
  for (int mu = 0; mu < 4; ++mu) {
    require(global[mu] % grid_[mu] == 0, "lattice extent ", global[mu], " in dimension ", mu,
            " is not divisible by the process grid's ", grid_[mu], " ranks there");
    local_[mu] = global[mu] / grid_[mu];
    require(local_[mu] % 2 == 0, "local extent ", local_[mu], " in dimension ", mu, " (lattice ",
            coords_text(global), " on grid ", coords_text(grid_),
            "): expected an even number, which even-odd ordering needs");
  }
  const int dims[4] = {grid_[0], grid_[1], grid_[2], grid_[3]};
  const int periods[4] = {1, 1, 1, 1};
  MPI_Cart_create(comm, 4, dims, periods, 0, &comm_);
  MPI_Comm_rank(comm_, &rank_);
  int c[4];
  MPI_Cart_coords(comm_, rank_, 4, c);
  for (int mu = 0; mu < 4; ++mu) {
    grid_coords_[mu] = c[mu];
    offset_[mu] = c[mu] * local_[mu];
    MPI_Cart_shift(comm_, mu, 1, &bwd_[mu], &fwd_[mu]);
  }
  volume_ = static_cast<long>(local_[0]) * local_[1] * local_[2] * local_[3];
  require(volume_ / 2 <= std::numeric_limits<int>::max(), "local volume ", volume_, " sites (lattice ",
          coords_text(global), " on grid ", coords_text(grid_), "): more than the ",
          2L * std::numeric_limits<int>::max(), " sites per rank Latke indexes; use more ranks (-latke_grid)");
}

Lattice::~Lattice() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

Coords Lattice::coords_of(long full) const {
  Coords c;
  for (int mu = 0; mu < 4; ++mu) {
    c[mu] = static_cast<int>(full % local_[mu]);
    full /= local_[mu];
  }
  return c;
}

std::string Lattice::describe() const {
  std::ostringstream s;
  s << global_[0] << "x" << global_[1] << "x" << global_[2] << "x" << global_[3] << " on "
    << grid_[0] << "x" << grid_[1] << "x" << grid_[2] << "x" << grid_[3] << " ranks (local "
    << local_[0] << "x" << local_[1] << "x" << local_[2] << "x" << local_[3] << ")";
  return s.str();
}

}  // namespace latke
