// Gauge configurations of the C API (latke.h): LatkeGauge handles from arrays, random
// fields and the options database.
#include <sstream>

#include "latke/core/error.h"
#include "latke/core/options.h"
#include "latke/fields/random.h"
#include "core/c_api.h"
#include "fields/gauge_handle.h"
#include "latke/latke.h"

namespace latke::petsc {
namespace {

Coords to_coords(const PetscInt v[4], const char* what) {
  Coords c{};
  for (int mu = 0; mu < 4; ++mu) {
    require(v[mu] > 0, what, " extent ", v[mu], " in dimension ", mu, ": expected a positive number");
    c[mu] = static_cast<int>(v[mu]);
  }
  return c;
}

std::shared_ptr<const Lattice> make_lattice(MPI_Comm comm, const PetscInt global[4], const PetscInt grid[4]) {
  require(global != nullptr, "the lattice extents are missing (NULL)");
  const Coords g = to_coords(global, "lattice");
  const Coords p = grid ? to_coords(grid, "process grid") : default_grid();
  return std::make_shared<const Lattice>(comm, g, p);
}

}  // namespace
}  // namespace latke::petsc

using namespace latke;
using namespace latke::petsc;

extern "C" {

PetscErrorCode LatkeGaugeCreateFromArray(MPI_Comm comm, const PetscInt global[4], const PetscInt grid[4],
                                         const PetscScalar links[], LatkeGauge* gauge) {
  PetscFunctionBeginUser;
  LatkeCheckNull(gauge);
  PetscCall(guarded(comm, [&] {
    require_initialized();
    auto d = std::make_shared<LatkeGaugeData>();
    d->lattice = make_lattice(comm, global, grid);
    require(links != nullptr, "LatkeGaugeCreateFromArray: the links array is NULL");
    const std::size_t n = static_cast<std::size_t>(d->lattice->volume()) * 36;
    d->links.resize(n);
    for (std::size_t i = 0; i < n; ++i) d->links[i] = Complex<double>(PetscRealPart(links[i]), PetscImaginaryPart(links[i]));
    d->description = "links given by the program";
    *gauge = new _p_LatkeGauge{std::move(d)};
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeGaugeCreateRandom(MPI_Comm comm, const PetscInt global[4], const PetscInt grid[4], PetscInt seed,
                                      PetscReal spread, LatkeGauge* gauge) {
  PetscFunctionBeginUser;
  LatkeCheckNull(gauge);
  PetscCall(guarded(comm, [&] {
    require_initialized();
    auto d = std::make_shared<LatkeGaugeData>();
    d->lattice = make_lattice(comm, global, grid);
    d->links = random_gauge(*d->lattice, static_cast<std::uint64_t>(seed), spread);
    std::ostringstream s;
    if (spread < 0)
      s << "random SU(3) links, seed " << seed;
    else if (spread == 0)
      s << "unit gauge";
    else
      s << "SU(3) projection of 1 + " << spread << " x Gaussian noise, seed " << seed;
    d->description = s.str();
    *gauge = new _p_LatkeGauge{std::move(d)};
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeGaugeCreateFromOptions(MPI_Comm comm, const char prefix[], LatkeGauge* gauge) {
  std::string lattice, kind;
  long seed = 1;
  double spread = -1;
  PetscFunctionBeginUser;
  LatkeCheckNull(gauge);
  PetscCall(guarded(comm, [&] {
    require_initialized();
    read_options(comm, prefix ? prefix : "", "Latke gauge configuration options", [&](OptionGroup& o) {
      lattice = o.string("-latke_lattice", "8,8,8,8", "Lattice extents X,Y,Z,T");
      kind = o.string("-latke_gauge", "random", "Gauge configuration: random or unit");
      seed = o.integer("-latke_gauge_seed", 1, "Seed of the random gauge field");
      spread = o.real("-latke_gauge_spread", -1.0,
                      "Random field: < 0 independent SU(3) links, >= 0 SU(3) projection of 1 + spread x noise");
    });
  }));
  PetscInt dims[4];
  PetscCall(guarded(comm, [&] {
    const Coords c = parse_coords(lattice, "-latke_lattice");
    for (int mu = 0; mu < 4; ++mu) dims[mu] = c[mu];
    require(kind == "random" || kind == "unit", "-latke_gauge '", kind, "': expected random or unit");
  }));
  PetscCall(LatkeGaugeCreateRandom(comm, dims, nullptr, static_cast<PetscInt>(seed), kind == "unit" ? 0.0 : spread, gauge));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeGaugeGetLattice(LatkeGauge gauge, PetscInt global[4], PetscInt local[4], PetscInt grid[4]) {
  PetscFunctionBeginUser;
  PetscCheck(gauge && gauge->data, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "LatkeGaugeGetLattice: the gauge is NULL");
  const Lattice& lat = *gauge->data->lattice;
  for (int mu = 0; mu < 4; ++mu) {
    if (global) global[mu] = lat.global()[mu];
    if (local) local[mu] = lat.local()[mu];
    if (grid) grid[mu] = lat.grid()[mu];
  }
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeGaugeView(LatkeGauge gauge, PetscViewer viewer) {
  PetscBool ascii = PETSC_FALSE;
  PetscFunctionBeginUser;
  PetscCheck(gauge && gauge->data, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "LatkeGaugeView: the gauge is NULL");
  if (!viewer) PetscCall(PetscViewerASCIIGetStdout(gauge->data->lattice->comm(), &viewer));
  PetscCall(PetscObjectTypeCompare(reinterpret_cast<PetscObject>(viewer), PETSCVIEWERASCII, &ascii));
  if (!ascii) PetscFunctionReturn(0);
  PetscCall(PetscViewerASCIIPrintf(viewer, "Latke gauge configuration: %s on %s\n", gauge->data->description.c_str(),
                                   gauge->data->lattice->describe().c_str()));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeGaugeDestroy(LatkeGauge* gauge) {
  PetscFunctionBeginUser;
  if (gauge && *gauge) {
    delete *gauge;
    *gauge = nullptr;
  }
  PetscFunctionReturn(0);
}

}  // extern "C"
