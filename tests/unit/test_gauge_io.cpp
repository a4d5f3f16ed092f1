// Gauge files on one rank: every NERSC and ILDG variant written and read back; the bytes on
// disk checked against the formats (layout, byte order, checksums) by code independent of the
// writer; and every kind of bad input the issue lists, each ending in a clear error with
// nothing overwritten.
#include <gtest/gtest.h>
#include <mpi.h>
#include <sys/resource.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "src/fields/gauge_io_detail.h"
#include "latke/conventions.h"
#include "src/core/error.h"
#include "src/fields/gauge_field.h"
#include "src/fields/gauge_io.h"
#include "src/fields/gauge_observables.h"
#include "src/fields/random.h"
#include "tests/support/backends.h"

namespace latke {
namespace {

using test::error_of;

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
}

/// A big-endian or little-endian unsigned integer from file bytes.
std::uint64_t word(const std::string& b, std::size_t at, int n, bool big) {
  std::uint64_t w = 0;
  for (int i = 0; i < n; ++i)
    w |= static_cast<std::uint64_t>(static_cast<unsigned char>(b[at + (big ? n - 1 - i : i)])) << (8 * i);
  return w;
}

double real_at(const std::string& b, std::size_t at, bool single, bool big) {
  if (single) {
    const auto w = static_cast<std::uint32_t>(word(b, at, 4, big));
    float x;
    std::memcpy(&x, &w, 4);
    return x;
  }
  const std::uint64_t w = word(b, at, 8, big);
  double x;
  std::memcpy(&x, &w, 8);
  return x;
}

/// The value of KEY in a NERSC header, and the header with it replaced.
std::string header_value(const std::string& file, const std::string& key) {
  const std::size_t k = file.find("\n" + key + " = ");
  const std::size_t v = k + key.size() + 4, e = file.find('\n', v);
  return file.substr(v, e - v);
}
std::string with_header_value(std::string file, const std::string& key, const std::string& value) {
  const std::size_t k = file.find("\n" + key + " = ");
  const std::size_t v = k + key.size() + 4, e = file.find('\n', v);
  return file.replace(v, e - v, value);
}

std::size_t nersc_data_offset(const std::string& file) { return file.find("END_HEADER\n") + 11; }

double max_diff(const std::vector<Complex<double>>& a, const std::vector<Complex<double>>& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::fmax(d, std::sqrt(norm2(a[i] - b[i])));
  return d;
}

class GaugeFiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = (fs::temp_directory_path() / ("latke-gauge-io-" + std::to_string(getpid()))).string();
    fs::create_directories(dir_);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  GaugeFiles() : lat(MPI_COMM_SELF, dims), links(random_gauge(lat, 31)) {}

  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  std::string written(const std::string& name, const GaugeWriteParam& p) {
    write_gauge(lat, links, path(name), p);
    return path(name);
  }
  /// No temporary files left behind in the directory.
  static bool no_temporaries() {
    for (const auto& e : fs::directory_iterator(dir_))
      if (e.path().string().find(".tmp-") != std::string::npos) return false;
    return true;
  }

  static inline std::string dir_;
  const Coords dims{4, 2, 6, 4};
  Lattice lat;
  std::vector<Complex<double>> links;
};

TEST(Checksums, Crc32KnownAnswer) {
  const char* s = "123456789";
  EXPECT_EQ(gauge_io::crc32(reinterpret_cast<const unsigned char*>(s), 9), 0xCBF43926u);
}

TEST(Checksums, PrintedResolution) {
  EXPECT_DOUBLE_EQ(gauge_io::printed_resolution("0.5937"), 5e-5);
  EXPECT_DOUBLE_EQ(gauge_io::printed_resolution("5.937e-01"), 5e-5);
  EXPECT_DOUBLE_EQ(gauge_io::printed_resolution("1"), 0.5);
}

TEST_F(GaugeFiles, NerscRoundTripEveryVariant) {
  for (bool two_rows : {false, true})
    for (Precision prec : {Precision::double_, Precision::single})
      for (bool little : {false, true}) {
        GaugeWriteParam p;
        p.two_rows = two_rows;
        p.precision = prec;
        p.little_endian = little;
        p.sequence_number = 17;
        const std::string what =
            std::string(two_rows ? "3x2 " : "3x3 ") + to_string(prec) + (little ? " little" : " big");
        const std::string f = written("round.nersc", p);
        GaugeFileInfo info;
        const std::vector<Complex<double>> back = read_gauge(lat, f, &info);
        EXPECT_EQ(info.format, GaugeFileFormat::nersc);
        EXPECT_EQ(info.dims, dims);
        EXPECT_EQ(info.two_rows, two_rows);
        EXPECT_EQ(info.precision, prec);
        EXPECT_EQ(info.little_endian, little);
        EXPECT_EQ(info.sequence_number, 17);
        EXPECT_EQ(info.value("DATATYPE"), two_rows ? "4D_SU3_GAUGE" : "4D_SU3_GAUGE_3x3");
        EXPECT_EQ(info.value("FLOATING_POINT"),
                  std::string(prec == Precision::single ? "IEEE32" : "IEEE64") + (little ? "LITTLE" : "BIG"));
        const double tol = prec == Precision::single ? 1e-6 : (two_rows ? 1e-14 : 0.0);
        EXPECT_LE(max_diff(back, links), tol) << what;
        EXPECT_LT(measure_gauge(lat, back).unitarity, 1e-14) << what << ": SU(3) after reading";
      }
  EXPECT_TRUE(no_temporaries());
}

TEST_F(GaugeFiles, NerscBytesFollowTheFormat) {
  // 3x3 double big endian and 3x2 single little endian: every entry where the format puts
  // it, and CHECKSUM, PLAQUETTE, LINK_TRACE as the format defines them.
  for (bool small : {false, true}) {
    GaugeWriteParam p;
    p.two_rows = small;
    p.precision = small ? Precision::single : Precision::double_;
    p.little_endian = small;
    const std::string f = slurp(written("layout.nersc", p));
    const std::size_t off = nersc_data_offset(f), rb = small ? 4 : 8;
    const int rows = small ? 2 : 3;
    ASSERT_EQ(f.size() - off, lat.volume() * 4 * rows * 3 * 2 * rb);
    for (long s = 0; s < lat.volume(); s += 7)
      for (int mu = 0; mu < 4; ++mu)
        for (int r = 0; r < rows; ++r)
          for (int c = 0; c < 3; ++c) {
            const std::size_t at = off + ((((s * 4 + mu) * rows + r) * 3 + c) * 2) * rb;
            const Complex<double> z = links[lex_gauge_index(s, mu, r, c)];
            const double tol = small ? 1e-7 : 0.0;
            EXPECT_NEAR(real_at(f, at, small, !small), z.re, tol);
            EXPECT_NEAR(real_at(f, at + rb, small, !small), z.im, tol);
          }
    std::uint32_t sum = 0;
    for (std::size_t at = off; at < f.size(); at += rb) {
      const std::uint64_t w = word(f, at, static_cast<int>(rb), !small);
      sum += static_cast<std::uint32_t>(w) + static_cast<std::uint32_t>(w >> 32);
    }
    EXPECT_EQ(std::stoul(header_value(f, "CHECKSUM"), nullptr, 16), sum);
    const GaugeObservables o = measure_gauge(lat, links);
    EXPECT_NEAR(std::stod(header_value(f, "PLAQUETTE")), o.plaquette, small ? 1e-6 : 1e-14);
    EXPECT_NEAR(std::stod(header_value(f, "LINK_TRACE")), o.link_trace, small ? 1e-6 : 1e-14);
    for (int d = 0; d < 4; ++d)
      EXPECT_EQ(header_value(f, "DIMENSION_" + std::to_string(d + 1)), std::to_string(dims[d]));
  }
}

TEST_F(GaugeFiles, IldgRoundTripAndLimeRecords) {
  for (Precision prec : {Precision::double_, Precision::single}) {
    GaugeWriteParam p;
    p.format = GaugeFileFormat::ildg;
    p.precision = prec;
    p.sequence_number = 9;
    const std::string f = written("round.lime", p);
    GaugeFileInfo info;
    const std::vector<Complex<double>> back = read_gauge(lat, f, &info);
    EXPECT_LE(max_diff(back, links), prec == Precision::single ? 1e-6 : 0.0);
    EXPECT_EQ(info.format, GaugeFileFormat::ildg);
    EXPECT_EQ(info.precision, prec);
    EXPECT_EQ(info.sequence_number, 9);
    const std::vector<std::string> types = {"scidac-private-file-xml", "scidac-file-xml", "scidac-private-record-xml",
                                            "scidac-record-xml",       "ildg-format",     "ildg-binary-data",
                                            "scidac-checksum",         "ildg-data-lfn"};
    const bool mb[8] = {true, false, true, false, false, false, false, true};
    const bool me[8] = {false, true, false, false, false, false, true, true};
    ASSERT_EQ(info.records.size(), types.size());
    std::uint64_t pos = 0;
    for (std::size_t i = 0; i < types.size(); ++i) {
      const LimeRecord& r = info.records[i];
      EXPECT_EQ(r.type, types[i]);
      EXPECT_EQ(r.message_begin, mb[i]) << r.type;
      EXPECT_EQ(r.message_end, me[i]) << r.type;
      EXPECT_EQ(r.header_offset, pos) << r.type;
      EXPECT_EQ(r.data_offset % 8, 0u);
      pos = r.data_offset + (r.bytes + 7) / 8 * 8;
    }
    EXPECT_EQ(pos, fs::file_size(f));
    EXPECT_NE(info.records[4].text.find(std::string("<precision>") + (prec == Precision::single ? "32" : "64")),
              std::string::npos);
    EXPECT_NE(info.records[4].text.find("<lx>4</lx><ly>2</ly><lz>6</lz><lt>4</lt>"), std::string::npos);
    EXPECT_EQ(info.records[7].text, "round.lime");
  }
}

TEST_F(GaugeFiles, IldgBytesAndScidacChecksumFollowTheFormat) {
  GaugeWriteParam p;
  p.format = GaugeFileFormat::ildg;
  const std::string path = written("layout.lime", p);
  const std::string f = slurp(path);
  // Record headers: magic, version, length, type, all big endian.
  EXPECT_EQ(word(f, 0, 4, true), 0x456789abu);
  EXPECT_EQ(word(f, 4, 2, true), 1u);
  EXPECT_EQ(word(f, 6, 2, true), 0x8000u);  // message begin
  EXPECT_EQ(std::string(f.c_str() + 16), "scidac-private-file-xml");
  const GaugeFileInfo info = read_gauge_info(MPI_COMM_SELF, path);
  const std::size_t off = info.data_offset;
  EXPECT_EQ(std::string(f.c_str() + off - 128), "ildg-binary-data");
  EXPECT_EQ(word(f, off - 136, 8, true), info.data_bytes);
  for (long s = 0; s < lat.volume(); s += 5)
    for (int mu = 0; mu < 4; ++mu)
      for (int k = 0; k < 9; ++k) {
        const std::size_t at = off + ((s * 4 + mu) * 9 + k) * 16;
        EXPECT_EQ(real_at(f, at, false, true), links[lex_gauge_index(s, mu, k / 3, k % 3)].re);
        EXPECT_EQ(real_at(f, at + 8, false, true), links[lex_gauge_index(s, mu, k / 3, k % 3)].im);
      }
  // SciDAC checksum: CRC-32 of each site's 576 bytes, rotated by its global rank mod 29 / 31.
  std::uint32_t a = 0, b = 0;
  for (long s = 0; s < lat.volume(); ++s) {
    const auto c = gauge_io::crc32(reinterpret_cast<const unsigned char*>(f.data()) + off + s * 576, 576);
    const unsigned ra = s % 29, rb = s % 31;
    a ^= ra ? (c << ra) | (c >> (32 - ra)) : c;
    b ^= rb ? (c << rb) | (c >> (32 - rb)) : c;
  }
  std::ostringstream want;
  want << std::hex << "<suma>" << a << "</suma><sumb>" << b << "</sumb>";
  EXPECT_NE(info.records[6].text.find(want.str()), std::string::npos) << info.records[6].text;
}

// ---------------------------------------------------------------------------------------
// Bad input: each a clear error naming the problem

TEST_F(GaugeFiles, TruncatedFiles) {
  const std::string n = written("cut.nersc", GaugeWriteParam{});
  spit(n, slurp(n).substr(0, fs::file_size(n) - 100));
  EXPECT_NE(error_of([&] { read_gauge(lat, n); }).find("the file is truncated"), std::string::npos)
      << error_of([&] { read_gauge(lat, n); });
  GaugeWriteParam p;
  p.format = GaugeFileFormat::ildg;
  const std::string l = written("cut.lime", p);
  const std::string whole = slurp(l);
  for (std::size_t cut : {std::size_t{100}, std::size_t{1000}, whole.size() / 2}) {
    spit(l, whole.substr(0, whole.size() - cut));
    const std::string e = error_of([&] { read_gauge(lat, l); });
    EXPECT_NE(e.find("truncated"), std::string::npos) << "cut " << cut << ": " << e;
  }
}

TEST_F(GaugeFiles, ChecksumMismatch) {
  const std::string n = written("sum.nersc", GaugeWriteParam{});
  std::string b = slurp(n);
  b[nersc_data_offset(b) + 1000] ^= 0x10;
  spit(n, b);
  EXPECT_NE(error_of([&] { read_gauge(lat, n); }).find("checksum mismatch: the header says CHECKSUM = "),
            std::string::npos);
  GaugeWriteParam p;
  p.format = GaugeFileFormat::ildg;
  const std::string l = written("sum.lime", p);
  b = slurp(l);
  b[read_gauge_info(MPI_COMM_SELF, l).data_offset + 4321] ^= 0x01;
  spit(l, b);
  EXPECT_NE(error_of([&] { read_gauge(lat, l); }).find("scidac-checksum mismatch"), std::string::npos);
}

TEST_F(GaugeFiles, PlaquetteAndLinkTraceMismatch) {
  const std::string n = written("obs.nersc", GaugeWriteParam{});
  const std::string good = slurp(n);
  spit(n, with_header_value(good, "PLAQUETTE", "0.123"));
  EXPECT_NE(error_of([&] { read_gauge(lat, n); }).find("PLAQUETTE mismatch: the file says 0.123"), std::string::npos);
  // A change in the 9th digit of a value printed to 15 is caught too.
  const double plaq = std::stod(header_value(good, "PLAQUETTE"));
  std::ostringstream off;
  off.precision(15);
  off << plaq + 3e-9;
  spit(n, with_header_value(good, "PLAQUETTE", off.str()));
  EXPECT_NE(error_of([&] { read_gauge(lat, n); }).find("PLAQUETTE mismatch"), std::string::npos);
  spit(n, with_header_value(good, "LINK_TRACE", "0.5"));
  EXPECT_NE(error_of([&] { read_gauge(lat, n); }).find("LINK_TRACE mismatch"), std::string::npos);
  spit(n, with_header_value(good, "PLAQUETTE", "abc"));
  EXPECT_NE(error_of([&] { read_gauge(lat, n); }).find("PLAQUETTE 'abc' is not a number"), std::string::npos);
}

TEST_F(GaugeFiles, DimensionsThatDisagreeWithTheLattice) {
  Lattice other(MPI_COMM_SELF, {4, 2, 6, 6});
  const std::string n = written("dims.nersc", GaugeWriteParam{});
  EXPECT_NE(
      error_of([&] { read_gauge(other, n); }).find("holds a 4x2x6x4 lattice, but the lattice asked for is 4x2x6x6"),
      std::string::npos);
  GaugeWriteParam p;
  p.format = GaugeFileFormat::ildg;
  const std::string l = written("dims.lime", p);
  EXPECT_NE(error_of([&] { read_gauge(other, l); }).find("holds a 4x2x6x4 lattice"), std::string::npos);
  // A header whose dimensions disagree with its own data length.
  spit(n, with_header_value(slurp(n), "DIMENSION_4", "6"));
  EXPECT_NE(error_of([&] { read_gauge(other, n); }).find("truncated"), std::string::npos);
}

TEST_F(GaugeFiles, UnknownDatatypeOrFloatingPoint) {
  const std::string n = written("type.nersc", GaugeWriteParam{});
  const std::string good = slurp(n);
  spit(n, with_header_value(good, "DATATYPE", "4D_SU4_GAUGE"));
  EXPECT_NE(error_of([&] { read_gauge(lat, n); }).find("unknown DATATYPE '4D_SU4_GAUGE'"), std::string::npos);
  spit(n, with_header_value(good, "FLOATING_POINT", "IEEE16BIG"));
  EXPECT_NE(error_of([&] { read_gauge(lat, n); }).find("unknown FLOATING_POINT 'IEEE16BIG'"), std::string::npos);
  spit(n, with_header_value(good, "DIMENSION_2", "two"));
  EXPECT_NE(error_of([&] { read_gauge(lat, n); }).find("DIMENSION_2 'two' is not a positive integer"),
            std::string::npos);
  std::string bad = good;
  bad.replace(bad.find("END_HEADER"), 10, "END_HEADEX");
  spit(n, bad);
  EXPECT_NE(error_of([&] { read_gauge(lat, n); }).find("header line 24 'END_HEADEX' is not KEY = VALUE"),
            std::string::npos);
  bad = good;
  bad.erase(bad.find("END_HEADER\n"), 11);
  spit(n, bad);
  EXPECT_NE(error_of([&] { read_gauge(lat, n); }).find("no END_HEADER line before binary data"), std::string::npos);
}

TEST_F(GaugeFiles, MalformedLimeRecords) {
  GaugeWriteParam p;
  p.format = GaugeFileFormat::ildg;
  const std::string l = written("bad.lime", p);
  const std::string good = slurp(l);
  const GaugeFileInfo info = read_gauge_info(MPI_COMM_SELF, l);
  const std::size_t second = info.records[1].header_offset, binary = info.records[5].header_offset;
  auto expect = [&](std::string bytes, const std::string& message) {
    spit(l, bytes);
    const std::string e = error_of([&] { read_gauge(lat, l); });
    EXPECT_NE(e.find(message), std::string::npos) << "expected '" << message << "', got '" << e << "'";
  };
  std::string b = good;
  b[second] = 0x12;
  expect(b, "LIME record 1 at byte " + std::to_string(second) + ": magic number 0x126789ab is not LIME's");
  b = good;
  b[second + 5] = 2;
  expect(b, "LIME version 2, expected 1");
  b = good;
  std::memset(&b[second + 16], 'x', 128);
  expect(b, "the type string is not NUL-terminated");
  b = good;
  b[second + 6] = static_cast<char>(0x80);  // begins a message inside one
  expect(b, "message-begin flag 1 after a record with message-end flag 0");
  b = good;
  gauge_io::store_be(reinterpret_cast<unsigned char*>(&b[binary + 8]), 1ull << 40, 8);
  expect(b, "claims 1099511627776 bytes of data");
  b = good;
  b.replace(info.records[4].header_offset + 16, 11, "ildg-formax");
  expect(b, "no ildg-format record");
  b = good;
  b.replace(b.find("<lx>4</lx>"), 10, "<lx>8</lx>");
  expect(b, "ildg-binary-data holds " + std::to_string(info.data_bytes) + " bytes, but a 8x2x6x4 lattice");
  b = good;
  b.replace(b.find("<precision>64</precision>"), 25, "<precision>16</precision>");
  expect(b, "ildg-format precision '16'");
  expect(good.substr(0, 100), "only 100 bytes left, but a LIME record header has 144");
}

TEST_F(GaugeFiles, NonUnitaryLinksInA3x2File) {
  GaugeWriteParam p;
  p.two_rows = true;
  const std::string n = written("nonunitary.nersc", p);
  std::string b = slurp(n);
  const std::size_t off = nersc_data_offset(b) + ((0 * 4 + 1) * 6 + 1) * 16;  // site 0, mu 1, row 0, column 1, re
  const double x = real_at(b, off, false, true) * 1.5 + 0.1;
  std::uint64_t w;
  std::memcpy(&w, &x, 8);
  gauge_io::store_be(reinterpret_cast<unsigned char*>(&b[off]), w, 8);
  // Keep the checksum right, so that it is the unitarity check that fails.
  std::uint32_t sum = 0;
  for (std::size_t at = nersc_data_offset(b); at < b.size(); at += 8) {
    const std::uint64_t v = word(b, at, 8, true);
    sum += static_cast<std::uint32_t>(v) + static_cast<std::uint32_t>(v >> 32);
  }
  std::ostringstream hex;
  hex << std::hex << sum;
  spit(n, with_header_value(b, "CHECKSUM", hex.str()));
  EXPECT_NE(error_of([&] { read_gauge(lat, n); }).find("links are not unitary"), std::string::npos)
      << error_of([&] { read_gauge(lat, n); });
}

/// A LIME record as gauge_io.h describes it: 144-byte header, the data, zero padding to 8.
std::string lime_record(const std::string& type, const std::string& data, bool mb, bool me) {
  std::string h(144, '\0');
  auto* p = reinterpret_cast<unsigned char*>(h.data());
  gauge_io::store_be(p, 0x456789ab, 4);
  gauge_io::store_be(p + 4, 1, 2);
  gauge_io::store_be(p + 6, (mb ? 0x8000 : 0) | (me ? 0x4000 : 0), 2);
  gauge_io::store_be(p + 8, data.size(), 8);
  h.replace(16, type.size(), type);
  return h + data + std::string((data.size() + 7) / 8 * 8 - data.size(), '\0');
}

using Link = std::array<Complex<double>, 9>;

/// The file at `path` (written by Latke, one rank) with link mu of `site` replaced by u as
/// the file's precision stores it; its checksum made right again (NERSC CHECKSUM, ILDG
/// scidac-checksum, computed here as the formats define them) and the plaquette and link
/// trace it states dropped, so that only a check of the links themselves can tell.
void replace_link(const std::string& path, long site, int mu, const Link& u) {
  const GaugeFileInfo info = read_gauge_info(MPI_COMM_SELF, path);
  gauge_io::SiteFormat f;
  f.single = info.precision == Precision::single;
  f.big_endian = !info.little_endian;
  f.rows = info.two_rows ? 2 : 3;
  std::string b = slurp(path);
  const std::size_t at = info.data_offset + site * f.site_bytes();
  std::vector<unsigned char> bytes(b.begin() + at, b.begin() + at + f.site_bytes());
  std::vector<Complex<double>> s = gauge_io::decode_links(bytes, f);
  for (int k = 0; k < 9; ++k) s[mu * 9 + k] = u[k];
  bytes = gauge_io::encode_links(s, f);
  b.replace(at, bytes.size(), reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (info.format == GaugeFileFormat::nersc) {
    const std::size_t rb = f.real_bytes();
    std::uint32_t sum = 0;
    for (std::size_t i = info.data_offset; i < b.size(); i += rb) {
      const std::uint64_t w = word(b, i, static_cast<int>(rb), f.big_endian);
      sum += static_cast<std::uint32_t>(w) + static_cast<std::uint32_t>(w >> 32);
    }
    std::ostringstream hex;
    hex << std::hex << sum;
    b = with_header_value(b, "CHECKSUM", hex.str());
    for (const char* key : {"\nPLAQUETTE = ", "\nLINK_TRACE = "}) {
      const std::size_t k = b.find(key);
      b.erase(k, b.find('\n', k + 1) - k);
    }
  } else {
    std::uint32_t a = 0, c = 0;
    const std::size_t sb = f.site_bytes(), sites = info.data_bytes / sb;
    for (std::size_t r = 0; r < sites; ++r) {
      const auto crc =
          gauge_io::crc32(reinterpret_cast<const unsigned char*>(b.data()) + info.data_offset + r * sb, sb);
      const unsigned ra = r % 29, rc = r % 31;
      a ^= ra ? (crc << ra) | (crc >> (32 - ra)) : crc;
      c ^= rc ? (crc << rc) | (crc >> (32 - rc)) : crc;
    }
    std::ostringstream sums;
    sums << std::hex << "<?xml version=\"1.0\" encoding=\"UTF-8\"?><scidacChecksum><version>1.0</version><suma>" << a
         << "</suma><sumb>" << c << "</sumb></scidacChecksum>";
    // Records 6 and 7 are scidac-checksum and ildg-data-lfn (IldgRoundTripAndLimeRecords).
    b = b.substr(0, info.records[6].header_offset) + lime_record("scidac-checksum", sums.str(), false, true) +
        b.substr(info.records[7].header_offset);
    // Latke's scidac-record-xml states the plaquette inside <latkeGauge>: make it another's.
    b.replace(b.find("<latkeGauge>"), 12, "<otherGauge>");
    b.replace(b.find("</latkeGauge>"), 13, "</otherGauge>");
  }
  spit(path, b);
}

Link times(const Complex<double>* u, double c) {
  Link v;
  for (int k = 0; k < 9; ++k) v[k] = c * u[k];
  return v;
}

/// Every kind of file Latke writes that holds 3x3 links.
std::vector<std::pair<std::string, GaugeWriteParam>> three_by_three_files() {
  std::vector<std::pair<std::string, GaugeWriteParam>> v(4);
  v[0].first = "d.nersc";
  v[1].first = "s-little.nersc";
  v[1].second.precision = Precision::single;
  v[1].second.little_endian = true;
  v[2].first = "d.lime";
  v[2].second.format = GaugeFileFormat::ildg;
  v[3].first = "s.lime";
  v[3].second.format = GaugeFileFormat::ildg;
  v[3].second.precision = Precision::single;
  return v;
}

TEST_F(GaugeFiles, LinksThatAreNotFiniteAreRefusedEvenWhenAccepted) {
  // Site 37 of 4x2x6x4 is (x,y,z,t) = (1,1,4,0); the bad entry is [1][2], in the stored rows
  // of a 3x2 file too (whose third row is then rebuilt from it).
  auto files = three_by_three_files();
  files.emplace_back("d3x2.nersc", GaugeWriteParam{});
  files.back().second.two_rows = true;
  GaugeReadParam accept;
  accept.accept_nonunitary = true;
  for (const auto& [name, p] : files)
    for (double bad : {NAN, -INFINITY}) {
      const std::string f = written(name, p);
      Link u = times(&links[lex_gauge_index(37, 2, 0, 0)], 1.0);
      u[5] = Complex<double>(bad, 0.25);
      replace_link(f, 37, 2, u);
      for (const GaugeReadParam& rp : {GaugeReadParam{}, accept}) {
        const std::string e = error_of([&] { read_gauge(lat, f, nullptr, Backend::cpu, rp); });
        const std::string what =
            name + (std::isnan(bad) ? " nan" : " -inf") + (rp.accept_nonunitary ? " accepted" : "");
        EXPECT_NE(e.find(f + ": the link at site (x,y,z,t) = (1,1,4,0), mu 2 is not finite (entry [1][2] = (" +
                         (std::isnan(bad) ? "nan" : "-inf") + ", 0.25)); 1 of 768 links are not finite"),
                  std::string::npos)
            << what << ": " << e;
        EXPECT_NE(e.find("links that are not finite are never read"), std::string::npos) << what << ": " << e;
      }
    }
}

TEST_F(GaugeFiles, LinksNotInSu3AreRefusedUnlessAccepted) {
  GaugeReadParam accept;
  accept.accept_nonunitary = true;
  for (const auto& [name, p] : three_by_three_files()) {
    const bool single = p.precision == Precision::single;
    const std::string tolerance = single ? "(tolerance 1e-05 for 32-bit data)" : "(tolerance 1e-10 for 64-bit data)";
    // 2 U: U U^dag - 1 = 3, det - 1 = 7; 0: both 1 (exactly, for double data).
    for (double c : {2.0, 0.0}) {
      const std::string what = name + " x" + std::to_string(c);
      const std::string f = written(name, p);
      const Link u = times(&links[lex_gauge_index(37, 2, 0, 0)], c);
      replace_link(f, 37, 2, u);
      const std::string e = error_of([&] { read_gauge(lat, f); });
      EXPECT_NE(e.find(f + ": the link at site (x,y,z,t) = (1,1,4,0), mu 2 is not in SU(3): max |(U U^dag - 1)_ij| = " +
                       (c == 0   ? "1, |det U - 1| = 1 "
                        : single ? "3"
                                 : "3, |det U - 1| = 7 ")),
                std::string::npos)
          << what << ": " << e;
      EXPECT_NE(e.find(tolerance + "; 1 of 768 links deviate, the largest by "), std::string::npos)
          << what << ": " << e;
      EXPECT_NE(e.find("-latke_gauge_accept_nonunitary"), std::string::npos) << what << ": " << e;
      // Accepted: read as stored, the other links too (no projection onto SU(3)).
      const std::vector<Complex<double>> back = read_gauge(lat, f, nullptr, Backend::cpu, accept);
      std::vector<Complex<double>> want = links;
      for (int k = 0; k < 9; ++k) want[lex_gauge_index(37, 2, 0, 0) + k] = u[k];
      EXPECT_LE(max_diff(back, want), single ? 1e-6 : 0.0) << what;
    }
  }
}

TEST_F(GaugeFiles, WholeFieldsNotInSu3AreRefusedUnlessAccepted) {
  // Written by Latke (which writes any finite links): checksum, plaquette and link trace are
  // right, so only the check of the links can refuse them.
  GaugeReadParam accept;
  accept.accept_nonunitary = true;
  const std::vector<Complex<double>> su3 = links;
  for (const auto& [name, p] : three_by_three_files())
    for (double c : {2.0, 0.0}) {
      const std::string what = name + " x" + std::to_string(c);
      for (auto& z : links) z = c * z;
      const std::string f = written(name, p);
      links = su3;
      const std::string e = error_of([&] { read_gauge(lat, f); });
      EXPECT_NE(e.find(f + ": the link at site (x,y,z,t) = (0,0,0,0), mu 0 is not in SU(3)"), std::string::npos)
          << what << ": " << e;
      EXPECT_NE(e.find("768 of 768 links deviate"), std::string::npos) << what << ": " << e;
      const std::vector<Complex<double>> back = read_gauge(lat, f, nullptr, Backend::cpu, accept);
      EXPECT_NEAR(measure_gauge(lat, back).plaquette, c * c * c * c * measure_gauge(lat, su3).plaquette, 1e-5) << what;
    }
}

TEST_F(GaugeFiles, SingleFilesCloseToSu3AreReadAndProjected) {
  // Links within 1e-5 of SU(3) in a 32-bit file pass the check and are projected onto SU(3).
  GaugeWriteParam p;
  p.precision = Precision::single;
  const std::string f = written("close.nersc", p);
  Link u = times(&links[lex_gauge_index(5, 1, 0, 0)], 1.0 + 2e-6);
  replace_link(f, 5, 1, u);
  const std::vector<Complex<double>> back = read_gauge(lat, f);
  EXPECT_LT(su3_deviation(back), 1e-14);
  EXPECT_LE(max_diff(back, links), 1e-5);
}

TEST_F(GaugeFiles, LinksThatAreNotFiniteAreNotWritten) {
  const std::string f = written("finite.nersc", GaugeWriteParam{});
  const std::string before = slurp(f);
  std::vector<Complex<double>> bent = links;
  bent[lex_gauge_index(37, 3, 2, 1)] = Complex<double>(0.5, NAN);
  // Observables do not hide them either: a NaN link is infinitely far from SU(3).
  EXPECT_TRUE(std::isinf(su3_deviation(bent)));
  EXPECT_TRUE(std::isinf(measure_gauge(lat, bent).unitarity));
  for (GaugeFileFormat fmt : {GaugeFileFormat::nersc, GaugeFileFormat::ildg}) {
    GaugeWriteParam p;
    p.format = fmt;
    const std::string e = error_of([&] { write_gauge(lat, bent, f, p); });
    EXPECT_NE(e.find("writing " + f +
                     ": the link at site (x,y,z,t) = (1,1,4,0), mu 3 is not finite (entry [2][1] = "
                     "(0.5, nan)); 1 of 768 links are not finite"),
              std::string::npos)
        << e;
  }
  EXPECT_EQ(slurp(f), before);
  EXPECT_TRUE(no_temporaries());
}

TEST_F(GaugeFiles, ADirectoryIsNotAGaugeFile) {
  const std::string e = error_of([&] { read_gauge(lat, dir_); });
  EXPECT_NE(e.find(dir_ + " is a directory, expected a gauge configuration file (NERSC or ILDG)"), std::string::npos)
      << e;
  EXPECT_NE(error_of([&] {
              write_gauge(lat, links, dir_, GaugeWriteParam{});
            }).find("writing " + dir_ + ": it is a directory, expected the name of a gauge configuration file"),
            std::string::npos);
}

TEST_F(GaugeFiles, NotAGaugeFileOrNoFile) {
  spit(path("text.txt"), "hello, this is not a gauge configuration\n");
  EXPECT_NE(error_of([&] { read_gauge(lat, path("text.txt")); }).find("not a gauge file Latke knows"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_gauge(lat, path("missing.nersc")); }).find("cannot open gauge file"),
            std::string::npos);
}

// ---------------------------------------------------------------------------------------
// Failed writes leave existing files untouched

TEST_F(GaugeFiles, AWriteThatFailsMidwayLeavesTheExistingFile) {
  for (GaugeFileFormat fmt : {GaugeFileFormat::nersc, GaugeFileFormat::ildg}) {
    GaugeWriteParam p;
    p.format = fmt;
    const std::string f = written(fmt == GaugeFileFormat::nersc ? "keep.nersc" : "keep.lime", p);
    const std::string before = slurp(f);
    links = random_gauge(lat, 32);
    // Files may grow to 8 KiB only: the links (about 100 KiB) cannot be written.
    struct rlimit old;
    getrlimit(RLIMIT_FSIZE, &old);
    struct rlimit small = old;
    small.rlim_cur = 8192;
    std::signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &small);
    const std::string e = error_of([&] { write_gauge(lat, links, f, p); });
    setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, SIG_DFL);
    EXPECT_NE(e.find("writing " + f + ".tmp-"), std::string::npos) << e;
    EXPECT_EQ(slurp(f), before) << "the existing file changed";
    EXPECT_TRUE(no_temporaries());
    links = random_gauge(lat, 31);
  }
}

TEST_F(GaugeFiles, RefusedWritesLeaveTheExistingFile) {
  const std::string f = written("refused.nersc", GaugeWriteParam{});
  const std::string before = slurp(f);
  GaugeWriteParam p;
  p.two_rows = true;
  std::vector<Complex<double>> bent = links;
  bent[3] = Complex<double>(0.9, 0.2);
  EXPECT_NE(error_of([&] { write_gauge(lat, bent, f, p); }).find("a 4D_SU3_GAUGE (3x2) file needs SU(3) links"),
            std::string::npos);
  p = GaugeWriteParam{};
  p.precision = Precision::half;
  EXPECT_NE(error_of([&] { write_gauge(lat, links, f, p); }).find("file precision half"), std::string::npos);
  p = GaugeWriteParam{};
  p.format = GaugeFileFormat::ildg;
  p.little_endian = true;
  EXPECT_NE(error_of([&] { write_gauge(lat, links, f, p); }).find("ILDG files hold 3x3 big-endian links"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              write_gauge(lat, links, path("no/such/dir/x.nersc"), GaugeWriteParam{});
            }).find("cannot create the temporary file"),
            std::string::npos);
  EXPECT_EQ(slurp(f), before);
  EXPECT_TRUE(no_temporaries());
}

}  // namespace
}  // namespace latke
