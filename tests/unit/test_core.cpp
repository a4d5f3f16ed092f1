// Core and fields: geometry, process grids, option parsing, precision round trips,
// reductions, and the errors bad input must produce.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "src/core/error.h"
#include "src/core/half2.h"
#include "src/core/indexing.h"
#include "src/core/memory.h"
#include "src/core/output_files.h"
#include "src/core/policy.h"
#include "src/core/stream_graph.h"
#include "src/core/tune.h"
#include "src/core/work_counters.h"
#include "src/fields/blas.h"
#include "src/fields/color_spinor_field.h"
#include "src/fields/gauge_field.h"
#include "src/fields/random.h"
#include "tests/support/backends.h"

namespace latke {
namespace {

using test::available_backends;
using test::error_of;

TEST(Lattice, CheckerboardIndexRoundTrip) {
  Lattice lat(MPI_COMM_SELF, {6, 4, 2, 10});
  const LocalGeometry g = LocalGeometry::of(lat);
  std::vector<int> seen(lat.volume(), 0);
  for (int p = 0; p < 2; ++p)
    for (int x = 0; x < lat.volume_cb(); ++x) {
      int c[4];
      const int full = g.coords(x, p, c);
      EXPECT_EQ((c[0] + c[1] + c[2] + c[3]) & 1, p);
      EXPECT_EQ(full, g.full_index(c));
      EXPECT_EQ(full / 2, x);
      ++seen[full];
    }
  for (int s : seen) EXPECT_EQ(s, 1);
}

TEST(Lattice, ChosenGridSplitsLargestExtentsAndKeepsThemEven) {
  EXPECT_EQ(choose_grid({8, 8, 8, 16}, 2), (Coords{1, 1, 1, 2}));
  EXPECT_EQ(choose_grid({8, 8, 8, 16}, 4), (Coords{1, 1, 2, 2}));
  EXPECT_EQ(choose_grid({16, 16, 16, 32}, 8), (Coords{1, 2, 2, 2}));
  EXPECT_EQ(choose_grid({4, 4, 4, 12}, 3), (Coords{1, 1, 1, 3}));
  EXPECT_NE(error_of([] { choose_grid({4, 4, 4, 4}, 3); }).find("cannot split the lattice 4,4,4,4 over 3 ranks"),
            std::string::npos);
}

TEST(Lattice, BadInputNamesTheValue) {
  EXPECT_NE(error_of([] { Lattice l(MPI_COMM_SELF, {4, 4, 5, 4}); }).find("local extent 5 in dimension 2"), std::string::npos);
  EXPECT_NE(error_of([] { Lattice l(MPI_COMM_SELF, {4, 4, 4, 4}, {1, 1, 1, 2}); })
                .find("process grid 1,1,1,2 has 2 ranks but the communicator has 1"),
            std::string::npos);
  EXPECT_NE(error_of([] { Lattice l(MPI_COMM_SELF, {4, 0, 4, 4}); }).find("lattice extent 0 in dimension 1"), std::string::npos);
  EXPECT_NE(error_of([] { parse_coords("1,2,x,4", "-latke_grid"); }).find("'x' is not an integer"), std::string::npos);
  EXPECT_NE(error_of([] { parse_coords("1,0,1,4", "-latke_grid"); }).find("'0' is not a positive integer"), std::string::npos);
  EXPECT_NE(error_of([] { parse_coords("1,2,3", "-latke_grid"); }).find("expected four comma-separated integers"), std::string::npos);
  EXPECT_NE(error_of([] { parse_precision("quad"); }).find("unknown precision 'quad'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_reconstruct("8"); }).find("unknown reconstruct '8'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_backend("gpu"); }).find("unknown backend 'gpu'"), std::string::npos);
}

// The host's Half2 rounds as IEEE half does: 11 significant bits with ties to even, 65504 the
// largest finite value (65520 and above overflow), multiples of 2^-24 below 2^-14.
TEST(Half2, HostRoundsAsIeeeHalf) {
  EXPECT_EQ(round_to_half(1.0f + std::ldexp(1.0f, -11)), 1.0f);                                  // tie: even
  EXPECT_EQ(round_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 1.0f + std::ldexp(1.0f, -9));     // tie: even
  EXPECT_EQ(round_to_half(1.0f + std::ldexp(1.0f, -11) * 1.01f), 1.0f + std::ldexp(1.0f, -10));  // above the tie
  EXPECT_EQ(round_to_half(-3.14159265f), -3.140625f);
  EXPECT_EQ(round_to_half(65519.0f), 65504.0f);
  EXPECT_TRUE(std::isinf(round_to_half(65520.0f)) && round_to_half(-7e4f) < 0);
  EXPECT_EQ(round_to_half(std::ldexp(1.0f, -24)), std::ldexp(1.0f, -24));
  EXPECT_EQ(round_to_half(std::ldexp(1.0f, -25)), 0.0f);                                 // tie: even (zero)
  EXPECT_EQ(round_to_half(std::ldexp(3.0f, -25)), std::ldexp(1.0f, -23));                // tie: even
  EXPECT_EQ(round_to_half(std::ldexp(1.0f, -14) * 1.5f), std::ldexp(1.0f, -14) * 1.5f);  // normal, exact
  const Half2 a = Half2::pair(1.0f, 2048.0f), b(1.0f / 3);
  const Half2 s = a + Half2(1.0f), p = a * b, f = fma(a, b, Half2(0.5f));
  EXPECT_EQ(s.lo(), 2.0f);
  EXPECT_EQ(s.hi(), 2048.0f);  // 2049 is not a half: ties to even
  EXPECT_EQ(p.lo(), round_to_half(1.0f / 3));
  EXPECT_EQ(f.hi(), round_to_half(2048.0f * round_to_half(1.0f / 3) + 0.5f));
  EXPECT_EQ((-a).hi(), -2048.0f);
}

// Half2's storage is the IEEE binary16 bits of each lane (the device's __half2 in memory):
// known patterns, subnormals, infinity, and every value of a range through bits and back.
TEST(Half2, StoresIeeeBits) {
  EXPECT_EQ(half_bits(1.0f), 0x3c00u);
  EXPECT_EQ(half_bits(-2.0f), 0xc000u);
  EXPECT_EQ(half_bits(65504.0f), 0x7bffu);
  EXPECT_EQ(half_bits(std::ldexp(1.0f, -14)), 0x0400u);  // smallest normal
  EXPECT_EQ(half_bits(std::ldexp(1.0f, -24)), 0x0001u);  // smallest subnormal
  EXPECT_EQ(half_bits(round_to_half(1.0f / 3)), 0x3555u);
  EXPECT_EQ(half_bits(-0.0f), 0x8000u);
  EXPECT_TRUE(std::isinf(half_value(0x7c00u)));
  for (std::uint32_t h = 0; h < 0x7c00u; h += 7) {
    const float v = half_value(static_cast<std::uint16_t>(h));
    ASSERT_EQ(round_to_half(v), v) << h;
    ASSERT_EQ(half_bits(v), h) << h;
    ASSERT_EQ(half_bits(-v), h | 0x8000u) << h;
  }
  const Half2 p = Half2::pair(0.5f, -3.0f);
  EXPECT_EQ(p.bits(), 0x3800u | 0xc200u << 16);
  const Half2 q = Half2::from_bits(p.bits());
  EXPECT_EQ(q.lo(), 0.5f);
  EXPECT_EQ(q.hi(), -3.0f);
}

// The per-user cache directory: $LATKE_CACHE_DIR (empty: none), else the XDG cache home,
// else ~/.cache; nothing where none is set.
// memory_use counts the bytes Latke's own buffers hold, per kind, now and at their peak; a
// borrowed buffer (a PETSc vector's array) is not Latke's and not counted.
TEST(Memory, UseCountsOwnedBuffersNowAndAtThePeak) {
  const int host = static_cast<int>(MemoryKind::host);
  const MemoryUse before = memory_use();
  {
    Buffer a(MemoryKind::host, 3 << 20);
    std::vector<char> outside(1 << 20);
    const Buffer borrowed = Buffer::borrow(MemoryKind::host, outside.data(), outside.size());
    const MemoryUse during = memory_use();
    EXPECT_EQ(during.now[host], before.now[host] + (3u << 20));
    EXPECT_GE(during.peak[host], during.now[host]);
    Buffer moved = std::move(a);  // the bytes move with the buffer, counted once
    EXPECT_EQ(memory_use().now[host], during.now[host]);
  }
  const MemoryUse after = memory_use();
  EXPECT_EQ(after.now[host], before.now[host]);
  EXPECT_GE(after.peak[host], before.now[host] + (3u << 20));
}

TEST(UserCache, FollowsTheXdgBaseDirectories) {
  struct Saved {
    const char* name;
    std::string value;
    bool set;
  };
  std::vector<Saved> saved;
  for (const char* n : {"LATKE_CACHE_DIR", "XDG_CACHE_HOME", "HOME"}) {
    const char* v = std::getenv(n);
    saved.push_back({n, v ? v : "", v != nullptr});
    unsetenv(n);
  }
  EXPECT_EQ(user_cache_dir("gauge"), "");
  setenv("HOME", "/home/q", 1);
  EXPECT_EQ(user_cache_dir("gauge"), "/home/q/.cache/latke/gauge");
  setenv("XDG_CACHE_HOME", "/var/cache/q", 1);
  EXPECT_EQ(user_cache_dir("gauge/0.1.0"), "/var/cache/q/latke/gauge/0.1.0");
  setenv("XDG_CACHE_HOME", "", 1);  // empty: as if unset
  EXPECT_EQ(user_cache_dir("gauge"), "/home/q/.cache/latke/gauge");
  setenv("LATKE_CACHE_DIR", "/scratch/latke", 1);
  EXPECT_EQ(user_cache_dir("gauge"), "/scratch/latke/gauge");
  setenv("LATKE_CACHE_DIR", "", 1);  // empty: no cache
  EXPECT_EQ(user_cache_dir("gauge"), "");
  for (const Saved& s : saved)
    if (s.set)
      setenv(s.name, s.value.c_str(), 1);
    else
      unsetenv(s.name);
}

TEST(Backend, CudaWithoutDeviceIsAClearError) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "this machine has a CUDA device";
  const std::string e = error_of([] { activate_backend(Backend::cuda); });
  EXPECT_TRUE(e.find("no CUDA device is visible") != std::string::npos || e.find("has no CUDA") != std::string::npos) << e;
}

class Fields : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override { activate_backend(GetParam()); }
  std::shared_ptr<const Lattice> lat = std::make_shared<Lattice>(MPI_COMM_SELF, Coords{4, 6, 2, 4});
};

TEST_P(Fields, LexicographicRoundTripPerPrecision) {
  const std::vector<Complex<double>> src = random_spinor(*lat, 3);
  for (Precision p : {Precision::double_, Precision::single, Precision::half}) {
    ColorSpinorField f(lat, SpinorParam{4, 3, p, Subset::full, GetParam()});
    f.from_lexicographic(src);
    std::vector<Complex<double>> back;
    f.to_lexicographic(back);
    double worst = 0;
    for (long s = 0; s < lat->volume(); ++s) {
      double site_max = 0;  // half precision: error relative to the site's largest component
      for (int k = 0; k < 12; ++k) site_max = std::fmax(site_max, std::fmax(std::fabs(src[s * 12 + k].re), std::fabs(src[s * 12 + k].im)));
      for (int k = 0; k < 12; ++k) worst = std::fmax(worst, std::sqrt(norm2(back[s * 12 + k] - src[s * 12 + k])) / site_max);
    }
    const double tol = p == Precision::double_ ? 0 : p == Precision::single ? 1e-7 : 1.0 / 32767;
    EXPECT_LE(worst, tol) << to_string(p);
  }
}

TEST_P(Fields, ParityFieldsTouchOnlyTheirSites) {
  const std::vector<Complex<double>> src = random_spinor(*lat, 4);
  ColorSpinorField odd(lat, SpinorParam{4, 3, Precision::double_, Subset::odd, GetParam()});
  odd.from_lexicographic(src);
  std::vector<Complex<double>> back(src.size(), Complex<double>(7.0, 7.0));
  odd.to_lexicographic(back);
  for (long s = 0; s < lat->volume(); ++s) {
    const Coords c = lat->coords_of(s);
    const bool is_odd = (c[0] + c[1] + c[2] + c[3]) & 1;
    for (int k = 0; k < 12; ++k) {
      if (is_odd) EXPECT_EQ(back[s * 12 + k].re, src[s * 12 + k].re);
      else EXPECT_EQ(back[s * 12 + k].re, 7.0);
    }
  }
}

TEST_P(Fields, PrecisionConversionAndReductions) {
  const std::vector<Complex<double>> src = random_spinor(*lat, 5);
  ColorSpinorField d(lat, SpinorParam{4, 3, Precision::double_, Subset::full, GetParam()});
  d.from_lexicographic(src);
  double want = 0;
  for (const auto& z : src) want += norm2(z);
  EXPECT_NEAR(norm2(d), want, 1e-12 * want);
  const double first = norm2(d);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(norm2(d), first) << "reductions must be reproducible";
  for (Precision p : {Precision::single, Precision::half}) {
    ColorSpinorField f = d.like(p), back = d.like(Precision::double_);
    f.copy_from(d);
    back.copy_from(f);
    axpy(-1.0, d, back);
    EXPECT_LT(std::sqrt(norm2(back) / want), p == Precision::single ? 1e-7 : 1e-4) << to_string(p);
  }
  const Complex<double> z = dot(d, d);
  EXPECT_NEAR(z.im, 0.0, 1e-12 * want);
}

TEST_P(Fields, GaugeRoundTripAndReconstruct12) {
  const std::vector<Complex<double>> links = random_gauge(*lat, 8);
  EXPECT_LT(su3_deviation(links), 1e-14);
  for (Precision p : {Precision::double_, Precision::single, Precision::half})
    for (Reconstruct r : {Reconstruct::r18, Reconstruct::r12}) {
      GaugeField g(lat, GaugeParam{p, r, GetParam()});
      g.from_lexicographic(links);
      std::vector<Complex<double>> back;
      g.to_lexicographic(back);
      double worst = 0;
      for (std::size_t i = 0; i < links.size(); ++i) worst = std::fmax(worst, std::sqrt(norm2(back[i] - links[i])));
      const double tol = p == Precision::double_ ? 1e-14 : p == Precision::single ? 1e-6 : 2e-4;
      EXPECT_LE(worst, tol) << to_string(p) << " recon " << to_string(r);
    }
  std::vector<Complex<double>> bad = links;
  bad[5] = bad[5] * 1.01;
  GaugeField g(lat, GaugeParam{Precision::double_, Reconstruct::r12, GetParam()});
  EXPECT_NE(error_of([&] { g.from_lexicographic(bad); }).find("reconstruct 12 needs SU(3) links"), std::string::npos);
  EXPECT_NE(error_of([&] { g.from_lexicographic(std::vector<Complex<double>>(7)); }).find("host array has 7"),
            std::string::npos);
}

TEST_P(Fields, GaugeCopyConvertsOnTheBackendAsAnUploadWould) {
  const std::vector<Complex<double>> links = random_gauge(*lat, 9);
  auto lex = [](const GaugeField& g) {
    std::vector<Complex<double>> h;
    g.to_lexicographic(h);
    return h;
  };
  auto worst_diff = [](const std::vector<Complex<double>>& a, const std::vector<Complex<double>>& b) {
    double w = 0;
    for (std::size_t i = 0; i < a.size(); ++i) w = std::fmax(w, std::sqrt(norm2(a[i] - b[i])));
    return w;
  };
  for (Reconstruct rf : {Reconstruct::r18, Reconstruct::r12}) {
    GaugeField from(lat, GaugeParam{Precision::double_, rf, GetParam()});
    from.from_lexicographic(links);
    for (Precision p : {Precision::double_, Precision::single, Precision::half})
      for (Reconstruct r : {Reconstruct::r18, Reconstruct::r12}) {
        if (rf == Reconstruct::r12 && r == Reconstruct::r18) continue;
        GaugeField up(lat, GaugeParam{p, r, GetParam()}), copy(lat, GaugeParam{p, r, GetParam()});
        up.from_lexicographic(links);
        copy.copy_from(from);
        EXPECT_EQ(copy.scale(), up.scale()) << to_string(p) << " recon " << to_string(r) << " from " << to_string(rf);
        EXPECT_EQ(worst_diff(lex(copy), lex(up)), 0.0)
            << to_string(p) << " recon " << to_string(r) << " from " << to_string(rf);
      }
  }
  // A half field copied on from a half field keeps its scale and links.
  GaugeField h(lat, GaugeParam{Precision::half, Reconstruct::r18, GetParam()}),
      h2(lat, GaugeParam{Precision::half, Reconstruct::r12, GetParam()});
  h.from_lexicographic(links);
  h2.copy_from(h);
  GaugeField h12(lat, GaugeParam{Precision::half, Reconstruct::r12, GetParam()});
  h12.from_lexicographic(links);
  EXPECT_LE(worst_diff(lex(h2), lex(h12)), 2e-4);
  // What a field does not hold is refused, naming what is missing.
  GaugeField s12(lat, GaugeParam{Precision::single, Reconstruct::r12, GetParam()}),
      d18(lat, GaugeParam{Precision::double_, Reconstruct::r18, GetParam()}),
      s18(lat, GaugeParam{Precision::single, Reconstruct::r18, GetParam()});
  s12.from_lexicographic(links);
  EXPECT_NE(error_of([&] { d18.copy_from(s12); }).find("links in single cannot give links in double"),
            std::string::npos);
  EXPECT_NE(error_of([&] { s18.copy_from(s12); }).find("12 reals cannot give links of 18"), std::string::npos);
  auto other = std::make_shared<Lattice>(MPI_COMM_SELF, Coords{4, 4, 4, 8});
  GaugeField elsewhere(other, GaugeParam{Precision::single, Reconstruct::r18, GetParam()});
  EXPECT_NE(error_of([&] { elsewhere.copy_from(d18); }).find("another lattice"), std::string::npos);
}

// The tune cache file (LATKE_RESOURCE_PATH's latke_tunecache.tsv): this run's timed choices
// are written and read back by another cache; untimed ones are not kept; a file made for
// another device is ignored; an unwritable place is an error naming it.
TEST(TuneCache, ChoicesSurviveInTheFileForTheirDevice) {
  const std::string dir = ::testing::TempDir();
  const std::string path = dir + "/latke_tunecache_test.tsv";
  store_block_size("TestKernelA n=100x2", 96, 0.25);
  store_block_size("TestKernelB n=7x1", 128, -1.0 / 3);  // launched untimed
  write_tune_cache(path);
  {
    std::ifstream in(path);
    std::string header, line, all;
    std::getline(in, header);
    EXPECT_EQ(header, "latke-tunecache 1\t" + tune_cache_device());
    while (std::getline(in, line)) all += line + "\n";
    EXPECT_NE(all.find("TestKernelA n=100x2\t96\t"), std::string::npos);
    EXPECT_EQ(all.find("TestKernelB"), std::string::npos) << "an untimed choice was written";
  }
  {  // a file of this device with a choice this run has not made
    std::ofstream out(path);
    out << "latke-tunecache 1\t" << tune_cache_device() << "\nTestKernelC n=5x1\t256\t0.125\n";
  }
  EXPECT_EQ(tuned_block_size("TestKernelC n=5x1"), 0);
  EXPECT_EQ(read_tune_cache(path), 1);
  EXPECT_EQ(tuned_block_size("TestKernelC n=5x1"), 256);
  EXPECT_EQ(tuned_block_size("TestKernelB n=7x1"), 0) << "an untimed choice counts as not tuned";
  {  // another device's file
    std::ofstream out(path);
    out << "latke-tunecache 1\tSome Other GPU|7\nTestKernelD n=5x1\t512\t0.1\n";
  }
  EXPECT_EQ(read_tune_cache(path), 0);
  EXPECT_EQ(tuned_block_size("TestKernelD n=5x1"), 0);
  EXPECT_EQ(read_tune_cache(dir + "/no_such_file.tsv"), 0);
  std::remove(path.c_str());
  EXPECT_NE(error_of([&] {
              write_tune_cache("/nonexistent-dir/latke_tunecache.tsv");
            }).find("cannot write /nonexistent-dir/latke_tunecache.tsv.tmp"),
            std::string::npos);
}

// A call site's policy choice (PolicyChoice): the fastest candidate, timed once per local
// lattice and process grid and kept in the tune cache under its key; known() says nothing
// before the choice and the choice after it, for that lattice only.
TEST(PolicyChoice, TimesOncePerLatticeAndRemembers) {
  const Lattice a(MPI_COMM_SELF, Coords{4, 4, 4, 8}), b(MPI_COMM_SELF, Coords{4, 4, 8, 8});
  PolicyChoice choice;
  const std::vector<std::string> names = {"slow", "fast", "slower"};
  const double ms[] = {2.0, 0.5, 3.0};
  int timed = 0;
  auto time = [&](int i) {
    ++timed;
    return ms[i];
  };
  EXPECT_EQ(choice.known(a), -1);
  EXPECT_EQ(choice.get(a, [] { return std::string("test_policy_choice"); }, names, time), 1);
  EXPECT_EQ(timed, 3);
  EXPECT_EQ(choice.known(a), 1);
  EXPECT_EQ(choice.known(b), -1) << "another local lattice has no choice yet";
  EXPECT_EQ(choice.get(a, [] { return std::string("test_policy_choice"); }, names, time), 1);
  EXPECT_EQ(timed, 3) << "timed again";
  EXPECT_EQ(tuned_block_size("test_policy_choice local 4x4x4x8 grid 1x1x1x1"), 2) << "kept as index + 1";
}

// A CUDA graph of the compute stream's kernels (StreamGraph) runs nothing while recording and
// then launches them again on the fields' values of the moment: x += 2 y recorded once and
// launched three times is x + 6 y, the launches counted at each. It refuses what it cannot
// hold (a host synchronisation, a buffer allocated inside), and the stream stays usable after;
// it goes invalid once a buffer that existed when it was recorded is freed. Nothing is recorded
// for the CPU backend.
TEST_P(Fields, GraphLaunchesWhatItRecorded) {
  const SpinorParam sp{4, 3, Precision::double_, Subset::full, GetParam()};
  ColorSpinorField x(lat, sp), y(lat, sp), want(lat, sp);
  fill_gaussian(x, 1);
  fill_gaussian(y, 2);
  want.copy_from(x);
  auto differs = [&](const ColorSpinorField& a, const ColorSpinorField& b) {
    ColorSpinorField d(lat, sp);
    d.copy_from(a);
    blas::caxpby(blas::Cplx(-1), b, blas::Cplx(1), d);
    return std::sqrt(blas::cdot_norms(d, d).xx / blas::cdot_norms(b, b).xx);
  };
  const long before = work_counters().launches;
  blas::caxpby(blas::Cplx(0), y, blas::Cplx(1), want);  // want = want, to count one update's launches
  const long per_update = work_counters().launches - before;
  StreamGraph g;
  const long launches = work_counters().launches;
  const bool recorded = g.record(GetParam(), [&] { blas::caxpby(blas::Cplx(2), y, blas::Cplx(1), x); });
  EXPECT_EQ(work_counters().launches, launches) << "recording runs nothing";
  EXPECT_EQ(differs(x, want), 0.0) << "recording changed x";
  if (GetParam() == Backend::cpu) {
    EXPECT_FALSE(recorded);
    EXPECT_FALSE(g.valid());
    return;
  }
  ASSERT_TRUE(recorded);
  ASSERT_TRUE(g.valid());
  const long at = work_counters().launches;
  for (int k = 0; k < 3; ++k) g.launch();
  EXPECT_EQ(work_counters().launches, at + 3 * per_update);
  blas::caxpby(blas::Cplx(6), y, blas::Cplx(1), want);
  EXPECT_LT(differs(x, want), 1e-15);

  StreamGraph refused;
  EXPECT_FALSE(refused.record(GetParam(), [&] {
    blas::caxpby(blas::Cplx(1), y, blas::Cplx(1), x);
    synchronize(compute_stream());
  })) << "a host synchronisation inside";
  EXPECT_FALSE(refused.record(GetParam(), [&] {
    ColorSpinorField t(lat, sp);
    t.copy_from(x);
  })) << "a buffer allocated inside";
  EXPECT_FALSE(refused.valid());
  EXPECT_LT(differs(x, want), 1e-15) << "what a refused recording queued ran";
  g.launch();  // the stream works after the refusals
  blas::caxpby(blas::Cplx(2), y, blas::Cplx(1), want);
  EXPECT_LT(differs(x, want), 1e-15);

  auto gone = std::make_unique<ColorSpinorField>(lat, sp);
  StreamGraph h;
  ASSERT_TRUE(h.record(GetParam(), [&] { gone->copy_from(x); }));
  ColorSpinorField later(lat, sp);  // allocated after the recording: not one it can use
  { ColorSpinorField freed = std::move(later); }
  EXPECT_TRUE(h.valid());
  gone.reset();
  EXPECT_FALSE(h.valid()) << "a buffer that existed when it was recorded is gone";
  EXPECT_NE(error_of([&] { h.launch(); }).find("no valid recording"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Backends, Fields, ::testing::ValuesIn(available_backends()),
                         [](const ::testing::TestParamInfo<Backend>& i) { return std::string(to_string(i.param)); });

}  // namespace
}  // namespace latke
