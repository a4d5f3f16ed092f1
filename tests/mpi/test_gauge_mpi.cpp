// Tier 4 for gauge configurations: on process grids splitting every direction, the generator
// makes the same configuration bit for bit as on one rank, the observables agree, and files
// written by all ranks read back the same on all ranks and on one rank alone. Every rank also
// works on the whole lattice on MPI_COMM_SELF and compares its own part. Fourier transforms over
// split dimensions equal those of the whole lattice on one rank, momentum by momentum.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "latke/conventions.h"
#include "src/core/error.h"
#include "src/core/memory.h"
#include "src/fields/gauge_generator.h"
#include "src/fields/gauge_io.h"
#include "src/fields/lattice_fft.h"
#include "src/fields/random.h"

namespace latke {
namespace {

const Coords global_dims{8, 4, 4, 8};

std::vector<Coords> grids_for(int n) {
  switch (n) {
    case 1:
      return {{1, 1, 1, 1}};
    case 2:
      return {{2, 1, 1, 1}, {1, 2, 1, 1}, {1, 1, 2, 1}, {1, 1, 1, 2}};
    case 4:
      return {{4, 1, 1, 1}, {1, 1, 1, 4}, {1, 2, 2, 1}, {2, 1, 1, 2}};
    case 8:
      return {{2, 2, 2, 1}, {1, 2, 2, 2}, {4, 1, 1, 2}};
    default:
      return {};
  }
}

int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

Backend backend() {
  const Backend b = default_backend();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  activate_backend(b, rank);
  return b;
}

/// This rank's part (lexicographic over its local volume) of a global lexicographic array.
std::vector<Complex<double>> local_part(const Lattice& lat, const std::vector<Complex<double>>& global) {
  std::vector<Complex<double>> out(lat.volume() * 36);
  for (long s = 0; s < lat.volume(); ++s)
    std::copy_n(global.begin() + global_site(lat, s) * 36, 36, out.begin() + s * 36);
  return out;
}

/// True on every rank when every rank's arrays agree bit for bit.
bool identical_everywhere(const std::vector<Complex<double>>& a, const std::vector<Complex<double>>& b) {
  int same = a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(Complex<double>)) == 0, all = 0;
  MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all != 0;
}

double max_diff_everywhere(const std::vector<Complex<double>>& a, const std::vector<Complex<double>>& b) {
  double d = 0, all = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::fmax(d, std::sqrt(norm2(a[i] - b[i])));
  MPI_Allreduce(&d, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return all;
}

/// A directory for this run's files, made by rank 0 and removed at the end.
class GaugeMpi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::string d;
    if (rank == 0) {
      d = (std::filesystem::temp_directory_path() / ("latke-gauge-mpi-" + std::to_string(getpid()))).string();
      std::filesystem::create_directories(d);
    }
    int n = static_cast<int>(d.size());
    MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
    d.resize(n);
    MPI_Bcast(d.data(), n, MPI_CHAR, 0, MPI_COMM_WORLD);
    dir_ = d;
  }
  static void TearDownTestSuite() {
    MPI_Barrier(MPI_COMM_WORLD);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) std::filesystem::remove_all(dir_);
  }
  static inline std::string dir_;
};

TEST_F(GaugeMpi, EveryProcessGridMakesTheSameConfiguration) {
  const Backend b = backend();
  HeatbathParam p;
  p.beta = 5.9;
  p.overrelax = 2;
  p.seed = 4242;
  auto whole = std::make_shared<Lattice>(MPI_COMM_SELF, global_dims);
  QuenchedGenerator ref(whole, b, p);
  ref.start(GaugeStart::hot);
  ref.sweep(2);
  const std::vector<Complex<double>> ref_links = ref.links();
  const GaugeObservables ro = ref.measure();
  for (const Coords& grid : grids_for(world_size())) {
    auto lat = std::make_shared<Lattice>(MPI_COMM_WORLD, global_dims, grid);
    QuenchedGenerator gen(lat, b, p);
    gen.start(GaugeStart::hot);
    gen.sweep(2);
    EXPECT_TRUE(identical_everywhere(gen.links(), local_part(*lat, ref_links))) << "grid " << lat->describe();
    const GaugeObservables o = gen.measure();
    EXPECT_NEAR(o.plaquette, ro.plaquette, 1e-14) << lat->describe();
    EXPECT_NEAR(o.plaquette_spatial, ro.plaquette_spatial, 1e-14);
    EXPECT_NEAR(o.link_trace, ro.link_trace, 1e-14);
    EXPECT_NEAR(o.polyakov.re, ro.polyakov.re, 1e-14) << lat->describe();
    EXPECT_NEAR(o.polyakov.im, ro.polyakov.im, 1e-14);
    EXPECT_EQ(o.unitarity, ro.unitarity);
  }
}

// On every grid, each set of transformed dimensions: this rank's momenta of the distributed
// transform (where momentum() puts them) equal the whole lattice's transform on MPI_COMM_SELF,
// and forward then inverse gives back N times the field.
TEST_F(GaugeMpi, FourierTransformsOverSplitDimensionsEqualTheWholeLatticesTransform) {
  const Backend b = backend();
  const Coords dims{8, 4, 12, 8};
  constexpr int ncomp = 2;
  const long gvol = 8L * 4 * 12 * 8;
  auto value = [](long g, int k) { return Complex<double>(std::sin(0.31 * g + k), std::cos(0.17 * g * g + 2 * k)); };
  const Lattice whole(MPI_COMM_SELF, dims, {1, 1, 1, 1});
  for (const Coords& grid : grids_for(world_size())) {
    if (dims[2] % grid[2] != 0 || (dims[2] / grid[2]) % 2 != 0) continue;
    const Lattice lat(MPI_COMM_WORLD, dims, grid);
    for (unsigned mask : {0x7u, 0xFu, 0x9u}) {
      // The whole lattice's transform, on this rank alone (lexicographic global sites).
      std::vector<Complex<double>> all(ncomp * gvol);
      for (int k = 0; k < ncomp; ++k)
        for (long g = 0; g < gvol; ++g) all[k * gvol + g] = value(g, k);
      Buffer wbuf(memory_for(b), all.size() * sizeof(Complex<double>));
      copy_bytes(wbuf.data(), all.data(), all.size() * sizeof(Complex<double>), compute_stream());
      LatticeFFT(whole, b, mask, ncomp).forward(static_cast<Complex<double>*>(wbuf.data()));
      copy_bytes(all.data(), wbuf.data(), all.size() * sizeof(Complex<double>), compute_stream());
      // This rank's part, transformed over the ranks.
      const long V = lat.volume();
      std::vector<Complex<double>> mine(ncomp * V), start(ncomp * V);
      for (int k = 0; k < ncomp; ++k)
        for (long s = 0; s < V; ++s) start[k * V + s] = value(global_site(lat, s), k);
      Buffer buf(memory_for(b), mine.size() * sizeof(Complex<double>));
      copy_bytes(buf.data(), start.data(), mine.size() * sizeof(Complex<double>), compute_stream());
      LatticeFFT fft(lat, b, mask, ncomp);
      fft.forward(static_cast<Complex<double>*>(buf.data()));
      copy_bytes(mine.data(), buf.data(), mine.size() * sizeof(Complex<double>), compute_stream());
      synchronize(b);
      const MomentumLayout m = fft.momentum();
      double err = 0, size = 0;
      for (long s = 0; s < V; ++s) {
        const Coords c = lat.coords_of(s);  // local coordinates
        long g = 0;
        for (int mu = 3; mu >= 0; --mu) {
          const int kmu = (mask >> mu & 1u) ? m.offset[mu] + m.step[mu] * c[mu] : lat.offset()[mu] + c[mu];
          g = g * dims[mu] + kmu;
        }
        for (int k = 0; k < ncomp; ++k) {
          err = std::fmax(err, std::sqrt(norm2(mine[k * V + s] - all[k * gvol + g])));
          size = std::fmax(size, std::sqrt(norm2(all[k * gvol + g])));
        }
      }
      double worst = 0;
      MPI_Allreduce(&err, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      EXPECT_LT(worst, 1e-12 * size) << "grid " << lat.describe() << " dimensions " << mask;
      fft.inverse(static_cast<Complex<double>*>(buf.data()));
      copy_bytes(mine.data(), buf.data(), mine.size() * sizeof(Complex<double>), compute_stream());
      synchronize(b);
      double n = 1;
      for (int mu = 0; mu < 4; ++mu)
        if (mask >> mu & 1u) n *= dims[mu];
      EXPECT_LT(max_diff_everywhere(std::vector<Complex<double>>(mine.begin(), mine.end()),
                                    [&] {
                                      std::vector<Complex<double>> x(start);
                                      for (auto& z : x) z = z * n;
                                      return x;
                                    }()),
                1e-12 * n)
          << "grid " << lat.describe() << " dimensions " << mask;
    }
  }
}

TEST_F(GaugeMpi, FilesWrittenByAllRanksReadBackAnywhere) {
  const Backend b = backend();
  auto whole = std::make_shared<Lattice>(MPI_COMM_SELF, global_dims);
  const std::vector<Complex<double>> all = random_gauge(*whole, 808);
  struct Variant {
    const char* name;
    GaugeWriteParam p;
  };
  std::vector<Variant> variants(4);
  variants[0] = {"d3x3.nersc", {}};
  variants[1] = {"s3x2le.nersc", {}};
  variants[1].p.precision = Precision::single;
  variants[1].p.two_rows = true;
  variants[1].p.little_endian = true;
  variants[2] = {"d.lime", {}};
  variants[2].p.format = GaugeFileFormat::ildg;
  variants[3] = {"s.lime", {}};
  variants[3].p.format = GaugeFileFormat::ildg;
  variants[3].p.precision = Precision::single;
  for (const Coords& grid : grids_for(world_size())) {
    auto lat = std::make_shared<Lattice>(MPI_COMM_WORLD, global_dims, grid);
    const std::vector<Complex<double>> mine = local_part(*lat, all);
    for (const Variant& v : variants) {
      const std::string path = dir_ + "/" + v.name;
      const bool exact = v.p.precision == Precision::double_ && !v.p.two_rows;
      const double tol = v.p.precision == Precision::single ? 1e-6 : 1e-14;
      write_gauge(*lat, mine, path, v.p, b);
      const std::vector<Complex<double>> back = read_gauge(*lat, path, nullptr, b);
      if (exact)
        EXPECT_TRUE(identical_everywhere(back, mine)) << v.name << " on " << lat->describe();
      else
        EXPECT_LE(max_diff_everywhere(back, mine), tol) << v.name << " on " << lat->describe();
      // The same file read by one rank alone holds the same field.
      const std::vector<Complex<double>> alone = read_gauge(*whole, path, nullptr, b);
      EXPECT_TRUE(identical_everywhere(local_part(*lat, alone), back)) << v.name << " read on one rank";
      MPI_Barrier(MPI_COMM_WORLD);  // everyone has read it before the next write replaces it
    }
  }
}

TEST_F(GaugeMpi, BadInputFailsOnEveryRankWithTheSameMessage) {
  const Backend b = backend();
  const Coords grid = grids_for(world_size()).back();
  auto lat = std::make_shared<Lattice>(MPI_COMM_WORLD, global_dims, grid);
  auto whole = std::make_shared<Lattice>(MPI_COMM_SELF, global_dims);
  const std::string path = dir_ + "/bad.nersc";
  write_gauge(*lat, local_part(*lat, random_gauge(*whole, 5)), path, GaugeWriteParam{}, b);
  auto message = [&](auto&& f) {
    std::string m;
    try {
      f();
    } catch (const Error& e) {
      m = e.what();
    }
    return m;
  };
  // Dimensions that disagree with the lattice.
  auto other = std::make_shared<Lattice>(MPI_COMM_WORLD, Coords{8, 4, 4, 16}, grid);
  EXPECT_NE(message([&] {
              read_gauge(*other, path, nullptr, b);
            }).find("holds a 8x4x4x8 lattice, but the lattice asked for is 8x4x4x16"),
            std::string::npos);
  // A checksum that disagrees with the data, found by summing every rank's part.
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    std::FILE* f = std::fopen(path.c_str(), "r+b");
    std::fseek(f, -5, SEEK_END);
    std::fputc(0x42, f);
    std::fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_NE(message([&] { read_gauge(*lat, path, nullptr, b); }).find("checksum mismatch"), std::string::npos);
}

TEST_F(GaugeMpi, LinksNotInSu3AreNamedByTheFirstInTheFileOnEveryRank) {
  // Two links 2U: (7,0,0,0) mu 1, first in the file, and (0,3,3,7) mu 2, last. With x split
  // the first is on the last rank: every rank must name it, not the lowest failing rank's.
  const Backend b = backend();
  auto whole = std::make_shared<Lattice>(MPI_COMM_SELF, global_dims);
  std::vector<Complex<double>> all = random_gauge(*whole, 6);
  const std::pair<Coords, int> bad[2] = {{{7, 0, 0, 0}, 1}, {{0, 3, 3, 7}, 2}};
  for (const auto& [c, mu] : bad)
    for (int k = 0; k < 9; ++k) {
      Complex<double>& z = all[lex_gauge_index(lex_site(c, global_dims), mu, k / 3, k % 3)];
      z = 2.0 * z;
    }
  const std::string path = dir_ + "/twice.nersc";
  GaugeReadParam accept;
  accept.accept_nonunitary = true;
  for (const Coords& grid : grids_for(world_size())) {
    auto lat = std::make_shared<Lattice>(MPI_COMM_WORLD, global_dims, grid);
    const std::vector<Complex<double>> mine = local_part(*lat, all);
    write_gauge(*lat, mine, path, GaugeWriteParam{}, b);
    std::string m;
    try {
      read_gauge(*lat, path, nullptr, b);
    } catch (const Error& e) {
      m = e.what();
    }
    EXPECT_NE(m.find(path + ": the link at site (x,y,z,t) = (7,0,0,0), mu 1 is not in SU(3): max |(U U^dag - 1)_ij| = 3"),
              std::string::npos)
        << lat->describe() << ": " << m;
    EXPECT_NE(m.find("2 of 4096 links deviate"), std::string::npos) << lat->describe() << ": " << m;
    EXPECT_TRUE(identical_everywhere(read_gauge(*lat, path, nullptr, b, accept), mine)) << lat->describe();
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

}  // namespace
}  // namespace latke
