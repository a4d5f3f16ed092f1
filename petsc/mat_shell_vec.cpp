// Vector helpers of the C API (latke.h) for the vectors of Latke matrices: lexicographic
// order, sources, and saving and loading in a grid-independent order through PETSc viewers.
#include <cstdint>
#include <cstring>

#include "petsc/mat_shell.h"
#include "src/core/error.h"
#include "src/core/indexing.h"
#include "src/core/site_files.h"
#include "src/fields/gauge_io_detail.h"
#include "src/fields/random.h"

namespace latke::petsc {

namespace {

MPI_Comm comm_of(Mat A) { return PetscObjectComm(reinterpret_cast<PetscObject>(A)); }

void check(PetscErrorCode ierr, const char* call) {
  require(ierr == 0, call, " failed (PETSc error ", static_cast<int>(ierr), ")");
}

/// Spin-color components per site and local sites of the operator's lattice.
struct Shape {
  int ncomp;
  long volume;
};
Shape shape_of(const ShellOperator& op) { return {op.nspin() * op.ncolor(), op.lattice()->volume()}; }

void set_lex(ShellOperator& op, Vec x, const std::vector<Complex<double>>& host) {
  VecField f(op, x, Access::write, 0);
  f.field().from_lexicographic(host);
  f.release();
}

/// Whether local lexicographic site s belongs to vector v (all sites for a full vector).
struct SiteFilter {
  bool full;
  int parity;
  bool operator()(const Coords& c) const { return full || ((c[0] + c[1] + c[2] + c[3]) & 1) == parity; }
};

SiteFilter filter_for(ShellOperator& op, Vec x) {
  PetscInt n = 0;
  check(VecGetLocalSize(x, &n), "VecGetLocalSize");
  return {is_full_vector(op, n, "the vector"), op.parity()};
}

int parity_of(const Coords& c) { return (c[0] + c[1] + c[2] + c[3]) & 1; }

/// Global natural index of every local element of x, in x's native order: for a full
/// vector (global lexicographic site) * ncomp + component; for a parity vector the site
/// index is halved (sites of one parity, global extents being even).
std::vector<PetscInt> natural_indices(const ShellOperator& op, bool full) {
  const Lattice& lat = *op.lattice();
  const LocalGeometry g = LocalGeometry::of(lat);
  const int ncomp = op.nspin() * op.ncolor();
  const int nblock = full ? 2 : 1;
  std::vector<PetscInt> idx(static_cast<std::size_t>(nblock) * ncomp * lat.volume_cb());
  for (int b = 0; b < nblock; ++b) {
    const int parity = full ? b : op.parity();
    for (int x_cb = 0; x_cb < lat.volume_cb(); ++x_cb) {
      int c[4];
      g.coords(x_cb, parity, c);
      std::int64_t site = 0;
      for (int mu = 3; mu >= 0; --mu) site = site * lat.global()[mu] + c[mu] + lat.offset()[mu];
      if (!full) site /= 2;
      for (int k = 0; k < ncomp; ++k)
        idx[(static_cast<std::size_t>(b) * ncomp + k) * lat.volume_cb() + x_cb] =
            static_cast<PetscInt>(site * ncomp + k);
    }
  }
  return idx;
}

/// A vector in natural order with x's distribution and type, and the scatter to it.
struct Natural {
  Vec v = nullptr;
  VecScatter scatter = nullptr;
  ~Natural() {
    VecScatterDestroy(&scatter);
    VecDestroy(&v);
  }
};

void make_natural(ShellOperator& op, Vec x, Natural& nat) {
  PetscInt n = 0, start = 0, end = 0;
  VecType type = nullptr;
  const char* name = nullptr;
  check(VecGetLocalSize(x, &n), "VecGetLocalSize");
  check(VecGetOwnershipRange(x, &start, &end), "VecGetOwnershipRange");
  check(VecGetType(x, &type), "VecGetType");
  check(PetscObjectGetName(reinterpret_cast<PetscObject>(x), &name), "PetscObjectGetName");
  const std::vector<PetscInt> to = natural_indices(op, is_full_vector(op, n, "the vector"));
  const MPI_Comm comm = op.lattice()->comm();
  check(VecCreate(comm, &nat.v), "VecCreate");
  check(VecSetSizes(nat.v, n, PETSC_DETERMINE), "VecSetSizes");
  check(VecSetType(nat.v, type), "VecSetType");
  check(PetscObjectSetName(reinterpret_cast<PetscObject>(nat.v), name), "PetscObjectSetName");
  IS is_from = nullptr, is_to = nullptr;
  check(ISCreateStride(comm, n, start, 1, &is_from), "ISCreateStride");
  check(ISCreateGeneral(comm, n, to.data(), PETSC_COPY_VALUES, &is_to), "ISCreateGeneral");
  const PetscErrorCode ierr = VecScatterCreate(x, is_from, nat.v, is_to, &nat.scatter);
  ISDestroy(&is_from);
  ISDestroy(&is_to);
  check(ierr, "VecScatterCreate");
}

/// Z2 (+-1) or Z4 (1, i, -1, -i) noise for component k of global site g: a function of the seed,
/// the site and the component only, so the same on any process grid.
Complex<double> noise_value(LatkeNoise noise, PetscInt seed, std::uint64_t g, int k) {
  static const Complex<double> z4[4] = {{1, 0}, {0, 1}, {-1, 0}, {0, -1}};
  const std::uint64_t r = random_bits(static_cast<std::uint64_t>(seed), g, static_cast<std::uint64_t>(k)) >> 62;
  return noise == LATKE_NOISE_Z2 ? Complex<double>((r & 1) ? -1.0 : 1.0) : z4[r];
}

}  // namespace
}  // namespace latke::petsc

using namespace latke;
using namespace latke::petsc;

extern "C" {

PetscErrorCode LatkeVecSetLexicographic(Mat A, Vec x, const PetscScalar lex[]) {
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  LatkeCheckNull(x);
  PetscCall(guarded(comm_of(A), [&] {
    ShellOperator& op = *context_of(A).op;
    const Shape s = shape_of(op);
    require(lex != nullptr, "LatkeVecSetLexicographic: the array is NULL");
    std::vector<Complex<double>> host(static_cast<std::size_t>(s.volume) * s.ncomp);
    for (std::size_t i = 0; i < host.size(); ++i)
      host[i] = Complex<double>(PetscRealPart(lex[i]), PetscImaginaryPart(lex[i]));
    set_lex(op, x, host);
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeVecGetLexicographic(Mat A, Vec x, PetscScalar lex[]) {
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  LatkeCheckNull(x);
  PetscCall(guarded(comm_of(A), [&] {
    ShellOperator& op = *context_of(A).op;
    const Shape s = shape_of(op);
    require(lex != nullptr, "LatkeVecGetLexicographic: the array is NULL");
    const SiteFilter in_vec = filter_for(op, x);
    std::vector<Complex<double>> host;  // sized by to_lexicographic
    VecField f(op, x, Access::read, 0);
    f.field().to_lexicographic(host);
    f.release();
    // A parity vector writes only its own sites: the output array is never read.
    const Lattice& lat = *op.lattice();
    const Coords& L = lat.local();
    std::size_t i = 0;
    for (int t = 0; t < L[3]; ++t)
      for (int z = 0; z < L[2]; ++z)
        for (int y = 0; y < L[1]; ++y)
          for (int xx = 0; xx < L[0]; ++xx, i += s.ncomp) {
            const Coords c{xx + lat.offset()[0], y + lat.offset()[1], z + lat.offset()[2], t + lat.offset()[3]};
            if (!in_vec(c)) continue;
            for (int k = 0; k < s.ncomp; ++k) lex[i + k] = PetscScalar(host[i + k].re, host[i + k].im);
          }
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeVecSetPointSource(Mat A, Vec b, const PetscInt site[4], PetscInt spin, PetscInt color) {
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  LatkeCheckNull(b);
  PetscCall(guarded(comm_of(A), [&] {
    ShellOperator& op = *context_of(A).op;
    const Lattice& lat = *op.lattice();
    const Shape s = shape_of(op);
    require(site != nullptr, "LatkeVecSetPointSource: the site is NULL");
    Coords c{};
    for (int mu = 0; mu < 4; ++mu) {
      require(site[mu] >= 0 && site[mu] < lat.global()[mu], "point source site coordinate ", site[mu], " in dimension ",
              mu, ": expected 0 to ", lat.global()[mu] - 1);
      c[mu] = static_cast<int>(site[mu]);
    }
    require(spin >= 0 && spin < op.nspin(), "point source spin ", spin, ": expected 0 to ", op.nspin() - 1);
    require(color >= 0 && color < op.ncolor(), "point source color ", color, ": expected 0 to ", op.ncolor() - 1);
    const SiteFilter in_vec = filter_for(op, b);
    require(in_vec(c), "point source at (", c[0], ",", c[1], ",", c[2], ",", c[3], ") of parity ", parity_of(c),
            " in a vector of parity ", op.parity(), ": use a full-lattice vector (MatLatkeCreateFullVecs)");
    std::vector<Complex<double>> host(static_cast<std::size_t>(s.volume) * s.ncomp);
    bool mine = true;
    long local = 0;
    for (int mu = 3; mu >= 0; --mu) {
      const int l = c[mu] - lat.offset()[mu];
      mine = mine && l >= 0 && l < lat.local()[mu];
      local = local * lat.local()[mu] + l;
    }
    if (mine) host[static_cast<std::size_t>(local) * s.ncomp + spin * op.ncolor() + color] = Complex<double>(1.0);
    set_lex(op, b, host);
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeVecSetWallSource(Mat A, Vec b, PetscInt t, PetscInt spin, PetscInt color) {
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  LatkeCheckNull(b);
  PetscCall(guarded(comm_of(A), [&] {
    ShellOperator& op = *context_of(A).op;
    const Lattice& lat = *op.lattice();
    const Shape s = shape_of(op);
    require(t >= 0 && t < lat.global()[3], "wall source time slice ", t, ": expected 0 to ", lat.global()[3] - 1);
    require(spin >= 0 && spin < op.nspin(), "wall source spin ", spin, ": expected 0 to ", op.nspin() - 1);
    require(color >= 0 && color < op.ncolor(), "wall source color ", color, ": expected 0 to ", op.ncolor() - 1);
    std::vector<Complex<double>> host(static_cast<std::size_t>(s.volume) * s.ncomp);
    for (long i = 0; i < s.volume; ++i) {
      const Coords c = lat.coords_of(i);
      if (c[3] + lat.offset()[3] == t)
        host[static_cast<std::size_t>(i) * s.ncomp + spin * op.ncolor() + color] = Complex<double>(1.0);
    }
    set_lex(op, b, host);
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeVecSetNoiseSource(Mat A, Vec b, LatkeNoise noise, PetscInt seed) {
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  LatkeCheckNull(b);
  PetscCall(guarded(comm_of(A), [&] {
    require(noise == LATKE_NOISE_Z2 || noise == LATKE_NOISE_Z4, "noise ", static_cast<int>(noise),
            ": expected LATKE_NOISE_Z2 or LATKE_NOISE_Z4");
    ShellOperator& op = *context_of(A).op;
    const Lattice& lat = *op.lattice();
    const Shape s = shape_of(op);
    std::vector<Complex<double>> host(static_cast<std::size_t>(s.volume) * s.ncomp);
    for (long i = 0; i < s.volume; ++i)
      for (int k = 0; k < s.ncomp; ++k)
        host[static_cast<std::size_t>(i) * s.ncomp + k] = noise_value(noise, seed, global_site(lat, i), k);
    set_lex(op, b, host);
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeVecSetDilutedNoiseSource(Mat A, Vec b, LatkeNoise noise, PetscInt seed, PetscInt t, PetscInt spin,
                                             PetscInt color) {
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  LatkeCheckNull(b);
  PetscCall(guarded(comm_of(A), [&] {
    require(noise == LATKE_NOISE_Z2 || noise == LATKE_NOISE_Z4, "noise ", static_cast<int>(noise),
            ": expected LATKE_NOISE_Z2 or LATKE_NOISE_Z4");
    ShellOperator& op = *context_of(A).op;
    const Lattice& lat = *op.lattice();
    const Shape s = shape_of(op);
    require(t >= -1 && t < lat.global()[3], "diluted noise source time slice ", t, ": expected -1 (all) or 0 to ",
            lat.global()[3] - 1);
    require(spin >= 0 && spin < op.nspin(), "diluted noise source spin ", spin, ": expected 0 to ", op.nspin() - 1);
    require(color >= 0 && color < op.ncolor(), "diluted noise source color ", color, ": expected 0 to ",
            op.ncolor() - 1);
    std::vector<Complex<double>> host(static_cast<std::size_t>(s.volume) * s.ncomp);
    for (long i = 0; i < s.volume; ++i) {
      if (t >= 0 && lat.coords_of(i)[3] + lat.offset()[3] != t) continue;
      // One number per site, the same for every spin and color (the dilution's columns share it).
      host[static_cast<std::size_t>(i) * s.ncomp + spin * op.ncolor() + color] =
          noise_value(noise, seed, global_site(lat, i), 0);
    }
    set_lex(op, b, host);
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeVecView(Mat A, Vec x, PetscViewer viewer) {
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  LatkeCheckNull(x);
  Natural nat;
  PetscCall(guarded(comm_of(A), [&] { make_natural(*context_of(A).op, x, nat); }));
  PetscCall(VecScatterBegin(nat.scatter, x, nat.v, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(nat.scatter, x, nat.v, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecView(nat.v, viewer));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeVecSave(Mat A, Vec x, const char path[]) {
  PetscInt n = 0;
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  LatkeCheckNull(x);
  LatkeCheckNull(path);
  PetscCall(VecGetSize(x, &n));
  PetscCall(guarded(comm_of(A), [&] {
    ShellOperator& op = *context_of(A).op;
    const Lattice& lat = *op.lattice();
    const Shape s = shape_of(op);
    require(filter_for(op, x).full, "LatkeVecSave ", path,
            ": the vector holds one parity; save a full-lattice vector (MatLatkeCreateFullVecs)");
    std::vector<Complex<double>> host;
    VecField f(op, x, Access::read, 0);
    f.field().to_lexicographic(host);
    f.release();
    // PETSc's binary vector: the class id and the length as big-endian PetscInts' width, then
    // the entries as big-endian doubles (real, imaginary).
    const int word = sizeof(PetscInt);
    std::string header(4 + word, '\0');
    gauge_io::store_be(reinterpret_cast<unsigned char*>(header.data()), VEC_FILE_CLASSID, 4);
    gauge_io::store_be(reinterpret_cast<unsigned char*>(header.data()) + 4, static_cast<std::uint64_t>(n), word);
    std::vector<unsigned char> bytes(host.size() * 16);
    for (std::size_t i = 0; i < host.size(); ++i) {
      std::uint64_t re, im;
      std::memcpy(&re, &host[i].re, 8);
      std::memcpy(&im, &host[i].im, 8);
      gauge_io::store_be(bytes.data() + 16 * i, re, 8);
      gauge_io::store_be(bytes.data() + 16 * i + 8, im, 8);
    }
    AtomicFile file(lat.comm(), path);
    file.write_root(0, header);
    file.write_sites(lat, header.size(), bytes, static_cast<std::size_t>(s.ncomp) * 16);
    file.commit(header.size() + static_cast<std::uint64_t>(n) * 16);
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeVecLoad(Mat A, Vec x, PetscViewer viewer) {
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  LatkeCheckNull(x);
  Natural nat;
  PetscCall(guarded(comm_of(A), [&] { make_natural(*context_of(A).op, x, nat); }));
  PetscCall(VecLoad(nat.v, viewer));
  PetscCall(VecScatterBegin(nat.scatter, nat.v, x, INSERT_VALUES, SCATTER_REVERSE));
  PetscCall(VecScatterEnd(nat.scatter, nat.v, x, INSERT_VALUES, SCATTER_REVERSE));
  PetscFunctionReturn(0);
}

}  // extern "C"
