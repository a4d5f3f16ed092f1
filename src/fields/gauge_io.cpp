// Gauge files: what NERSC and ILDG share (gauge_io_detail.h) and the public entry points,
// which recognize the format and hand over to nersc_io.cpp or ildg_io.cpp.
#include <mpi.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "src/core/log.h"
#include "src/fields/gauge_field.h"
#include "src/fields/gauge_io_detail.h"
#include "src/fields/random.h"
#include "src/fields/su3_update.h"

namespace latke {

namespace gauge_io {

namespace {

void put_real(unsigned char* p, double v, const SiteFormat& f) {
  if (f.single) {
    const float x = static_cast<float>(v);
    std::uint32_t w;
    std::memcpy(&w, &x, 4);
    for (int b = 0; b < 4; ++b) p[f.big_endian ? 3 - b : b] = static_cast<unsigned char>(w >> (8 * b));
  } else {
    std::uint64_t w;
    std::memcpy(&w, &v, 8);
    for (int b = 0; b < 8; ++b) p[f.big_endian ? 7 - b : b] = static_cast<unsigned char>(w >> (8 * b));
  }
}

std::uint64_t get_word(const unsigned char* p, int bytes, bool big_endian) {
  std::uint64_t w = 0;
  for (int b = 0; b < bytes; ++b) w |= static_cast<std::uint64_t>(p[big_endian ? bytes - 1 - b : b]) << (8 * b);
  return w;
}

double get_real(const unsigned char* p, const SiteFormat& f) {
  if (f.single) {
    const std::uint32_t w = static_cast<std::uint32_t>(get_word(p, 4, f.big_endian));
    float x;
    std::memcpy(&x, &w, 4);
    return x;
  }
  const std::uint64_t w = get_word(p, 8, f.big_endian);
  double x;
  std::memcpy(&x, &w, 8);
  return x;
}

void rebuild_third_row(Complex<double>* u) {
  u[6] = conj(u[1] * u[5] - u[2] * u[4]);
  u[7] = conj(u[2] * u[3] - u[0] * u[5]);
  u[8] = conj(u[0] * u[4] - u[1] * u[3]);
}

/// A length-prefixed binary form of GaugeFileInfo, to broadcast it from rank 0.
struct Packer {
  std::string s;
  void u64(std::uint64_t v) { s.append(reinterpret_cast<const char*>(&v), 8); }
  void str(const std::string& t) {
    u64(t.size());
    s += t;
  }
};
struct Unpacker {
  const std::string& s;
  std::size_t pos = 0;
  std::uint64_t u64() {
    std::uint64_t v;
    std::memcpy(&v, s.data() + pos, 8);
    pos += 8;
    return v;
  }
  std::string str() {
    const std::size_t n = u64();
    std::string t = s.substr(pos, n);
    pos += n;
    return t;
  }
};

std::string pack(const GaugeFileInfo& i) {
  Packer p;
  p.u64(static_cast<std::uint64_t>(i.format));
  for (int d = 0; d < 4; ++d) p.u64(i.dims[d]);
  p.u64(static_cast<std::uint64_t>(i.precision));
  p.u64(i.two_rows);
  p.u64(i.little_endian);
  p.u64(i.data_offset);
  p.u64(i.data_bytes);
  p.u64(i.file_bytes);
  p.u64(static_cast<std::uint64_t>(i.sequence_number));
  p.u64(i.header.size());
  for (const auto& kv : i.header) {
    p.str(kv.first);
    p.str(kv.second);
  }
  p.u64(i.records.size());
  for (const auto& r : i.records) {
    p.str(r.type);
    p.u64(r.header_offset);
    p.u64(r.data_offset);
    p.u64(r.bytes);
    p.u64(r.message_begin);
    p.u64(r.message_end);
    p.str(r.text);
  }
  return p.s;
}

GaugeFileInfo unpack(const std::string& s) {
  Unpacker u{s};
  GaugeFileInfo i;
  i.format = static_cast<GaugeFileFormat>(u.u64());
  for (int d = 0; d < 4; ++d) i.dims[d] = static_cast<int>(u.u64());
  i.precision = static_cast<Precision>(u.u64());
  i.two_rows = u.u64() != 0;
  i.little_endian = u.u64() != 0;
  i.data_offset = u.u64();
  i.data_bytes = u.u64();
  i.file_bytes = u.u64();
  i.sequence_number = static_cast<long>(u.u64());
  i.header.resize(u.u64());
  for (auto& kv : i.header) {
    kv.first = u.str();
    kv.second = u.str();
  }
  i.records.resize(u.u64());
  for (auto& r : i.records) {
    r.type = u.str();
    r.header_offset = u.u64();
    r.data_offset = u.u64();
    r.bytes = u.u64();
    r.message_begin = u.u64() != 0;
    r.message_end = u.u64() != 0;
    r.text = u.str();
  }
  return i;
}

/// Links for which a test holds, over all ranks: how many, and which comes first in file
/// order (global lexicographic site, then mu); `mine` is its index in this rank's array on
/// the rank that holds it, -1 elsewhere. Collective.
struct BadLinks {
  long count = 0, total = 0;
  long mine = -1;
};

template <typename Bad>
BadLinks find_bad_links(const Lattice& lat, const std::vector<Complex<double>>& links, Bad bad) {
  const long n = static_cast<long>(links.size() / 9);
  long first = n, count = 0;
  // Sites of a rank's box in local lexicographic order are in global lexicographic order too,
  // so this rank's first bad link is its first in file order.
#pragma omp parallel for schedule(static) reduction(min : first) reduction(+ : count)
  for (long m = 0; m < n; ++m)
    if (bad(&links[9 * m])) {
      first = m < first ? m : first;
      ++count;
    }
  const std::uint64_t none = ~std::uint64_t{0};
  const std::uint64_t key = first < n ? global_site(lat, first / 4) * 4 + static_cast<std::uint64_t>(first % 4) : none;
  std::uint64_t first_key = none;
  MPI_Allreduce(&key, &first_key, 1, MPI_UINT64_T, MPI_MIN, lat.comm());
  BadLinks r;
  MPI_Allreduce(&count, &r.count, 1, MPI_LONG, MPI_SUM, lat.comm());
  MPI_Allreduce(&n, &r.total, 1, MPI_LONG, MPI_SUM, lat.comm());
  if (key != none && key == first_key) r.mine = first;
  return r;
}

bool finite(const Complex<double>* u) {
  for (int k = 0; k < 9; ++k)
    if (!std::isfinite(u[k].re) || !std::isfinite(u[k].im)) return false;
  return true;
}

/// "site (x,y,z,t) = (1,0,3,2), mu 2" for link m of this rank's array.
std::string link_place(const Lattice& lat, long m) {
  const Coords c = lat.coords_of(m / 4);
  std::ostringstream s;
  s << "site (x,y,z,t) = (" << c[0] + lat.offset()[0] << "," << c[1] + lat.offset()[1] << "," << c[2] + lat.offset()[2]
    << "," << c[3] + lat.offset()[3] << "), mu " << m % 4;
  return s.str();
}

/// On the rank holding the first link that is not finite: "the link at site ..., mu 2 is not
/// finite (entry [0][1] = (nan, 0)); 3 of 1024 links are not finite"; "" elsewhere and when
/// every link is finite. Collective.
std::string non_finite_links(const Lattice& lat, const std::vector<Complex<double>>& links) {
  const BadLinks bad = find_bad_links(lat, links, [](const Complex<double>* u) { return !finite(u); });
  if (bad.mine < 0) return "";
  const Complex<double>* u = &links[9 * bad.mine];
  int k = 0;
  while (k < 8 && std::isfinite(u[k].re) && std::isfinite(u[k].im)) ++k;
  std::ostringstream s;
  s << "the link at " << link_place(lat, bad.mine) << " is not finite (entry [" << k / 3 << "][" << k % 3 << "] = ("
    << print_real(u[k].re) << ", " << print_real(u[k].im) << ")); " << bad.count << " of " << bad.total
    << " links are not finite";
  return s.str();
}

}  // namespace

void check_read_links(const Lattice& lat, const std::string& path, const std::vector<Complex<double>>& links,
                      bool single, bool su3) {
  const std::string nan = non_finite_links(lat, links);
  collective_require(lat.comm(), nan.empty(),
                     path + ": " + nan +
                         ". A gauge file must hold finite numbers: it is corrupt or was written from a broken "
                         "configuration (links that are not finite are never read)");
  if (!su3) return;
  const double tol = precision_tolerance(single);
  const long n = static_cast<long>(links.size() / 9);
  double worst = 0, largest = 0;
#pragma omp parallel for schedule(static) reduction(max : worst)
  for (long m = 0; m < n; ++m) worst = std::fmax(worst, su3_link_deviation(&links[9 * m]).worst());
  MPI_Allreduce(&worst, &largest, 1, MPI_DOUBLE, MPI_MAX, lat.comm());
  if (largest <= tol) return;
  const BadLinks bad =
      find_bad_links(lat, links, [tol](const Complex<double>* u) { return !(su3_link_deviation(u).worst() <= tol); });
  std::ostringstream s;
  if (bad.mine >= 0) {
    const Su3Deviation d = su3_link_deviation(&links[9 * bad.mine]);
    s << path << ": the link at " << link_place(lat, bad.mine)
      << " is not in SU(3): max |(U U^dag - 1)_ij| = " << print_real(d.unitarity)
      << ", |det U - 1| = " << print_real(d.det) << " (tolerance " << tol << " for " << (single ? "32" : "64")
      << "-bit data); " << bad.count << " of " << bad.total << " links deviate, the largest by " << print_real(largest)
      << ". Links not meant to be SU(3) (smeared or fat links) are read with -latke_gauge_accept_nonunitary "
         "(GaugeReadParam::accept_nonunitary)";
  }
  collective_require(lat.comm(), bad.mine < 0, s.str());
}

void require_finite_observables(const std::string& path, const GaugeObservables& o) {
  require(std::isfinite(o.plaquette) && std::isfinite(o.link_trace), "writing ", path, ": the links' plaquette is ",
          print_real(o.plaquette), " and link trace ", print_real(o.link_trace),
          ", not finite numbers (links too large for double arithmetic?): nothing written");
}

void check_finite_for_writing(const Lattice& lat, const std::string& path, const std::vector<Complex<double>>& links) {
  const std::string nan = non_finite_links(lat, links);
  collective_require(lat.comm(), nan.empty(),
                     "writing " + path + ": " + nan + "; a gauge file must hold finite numbers (nothing written)");
}

std::vector<unsigned char> encode_links(const std::vector<Complex<double>>& links, const SiteFormat& f) {
  const std::size_t sites = links.size() / 36, rb = f.real_bytes();
  std::vector<unsigned char> out(sites * f.site_bytes());
#pragma omp parallel for schedule(static)
  for (std::size_t s = 0; s < sites; ++s) {
    unsigned char* p = out.data() + s * f.site_bytes();
    for (int mu = 0; mu < 4; ++mu)
      for (int k = 0; k < 3 * f.rows; ++k) {
        const Complex<double> z = links[(s * 4 + mu) * 9 + k];
        put_real(p, z.re, f);
        put_real(p + rb, z.im, f);
        p += 2 * rb;
      }
  }
  return out;
}

std::vector<Complex<double>> decode_links(const std::vector<unsigned char>& bytes, const SiteFormat& f) {
  const std::size_t sites = bytes.size() / f.site_bytes(), rb = f.real_bytes();
  std::vector<Complex<double>> links(sites * 36);
#pragma omp parallel for schedule(static)
  for (std::size_t s = 0; s < sites; ++s) {
    const unsigned char* p = bytes.data() + s * f.site_bytes();
    for (int mu = 0; mu < 4; ++mu) {
      Complex<double>* u = &links[(s * 4 + mu) * 9];
      for (int k = 0; k < 3 * f.rows; ++k) {
        u[k] = Complex<double>(get_real(p, f), get_real(p + rb, f));
        p += 2 * rb;
      }
      if (f.rows == 2) rebuild_third_row(u);
    }
  }
  return links;
}

double row_unitarity(const std::vector<Complex<double>>& links) {
  double worst = 0;
  for (std::size_t m = 0; m + 9 <= links.size(); m += 9) {
    const Complex<double>* u = &links[m];
    double n0 = 0, n1 = 0;
    Complex<double> d;
    for (int c = 0; c < 3; ++c) {
      n0 += norm2(u[c]);
      n1 += norm2(u[3 + c]);
      d += conj_mul(u[c], u[3 + c]);
    }
    const double dev = std::fmax(std::fabs(n0 - 1), std::fmax(std::fabs(n1 - 1), std::sqrt(norm2(d))));
    if (!(dev <= worst)) worst = dev;  // NaN sticks
  }
  return worst;
}

void reunitarize_if_close(const Lattice& lat, std::vector<Complex<double>>& links) {
  double dev = su3_deviation(links), worst = 0;
  MPI_Allreduce(&dev, &worst, 1, MPI_DOUBLE, MPI_MAX, lat.comm());
  if (!(worst <= precision_tolerance(true))) return;
  const std::size_t n = links.size() / 9;
#pragma omp parallel for schedule(static)
  for (std::size_t m = 0; m < n; ++m) {
    gauge::M3 u;
    for (int k = 0; k < 9; ++k) u.e[k / 3][k % 3] = links[m * 9 + k];
    gauge::reunitarize(u);
    for (int k = 0; k < 9; ++k) links[m * 9 + k] = u.e[k / 3][k % 3];
  }
}

double precision_tolerance(bool single) { return single ? 1e-5 : 1e-10; }

double printed_resolution(const std::string& number) {
  const std::size_t e = number.find_first_of("eE");
  const std::string mantissa = number.substr(0, e);
  const int exponent = e == std::string::npos ? 0 : std::atoi(number.c_str() + e + 1);
  const std::size_t dot = mantissa.find('.');
  const int decimals = dot == std::string::npos ? 0 : static_cast<int>(mantissa.size() - dot - 1);
  return 0.5 * std::pow(10.0, exponent - decimals);
}

std::uint32_t nersc_checksum(const std::vector<unsigned char>& bytes, const SiteFormat& f) {
  std::uint32_t sum = 0;  // modulo 2^32: the threads' partial sums add up to the serial one
  const long rb = static_cast<long>(f.real_bytes()), words = static_cast<long>(bytes.size()) / rb;
#pragma omp parallel for schedule(static) reduction(+ : sum)
  for (long i = 0; i < words; ++i) {
    const std::uint64_t w = get_word(bytes.data() + i * rb, static_cast<int>(rb), f.big_endian);
    sum += static_cast<std::uint32_t>(w) + static_cast<std::uint32_t>(w >> 32);
  }
  return sum;
}

std::uint32_t crc32(const unsigned char* data, std::size_t n) {
  return static_cast<std::uint32_t>(::crc32_z(::crc32_z(0L, Z_NULL, 0), data, n));
}

void scidac_checksum(const Lattice& lat, const std::vector<unsigned char>& bytes, std::size_t site_bytes,
                     std::uint32_t& suma, std::uint32_t& sumb) {
  auto rotl = [](std::uint32_t w, unsigned r) { return r == 0 ? w : (w << r) | (w >> (32 - r)); };
  std::uint32_t a = 0, b = 0;  // exclusive or: the threads' partial sums combine to the serial one
#pragma omp parallel for schedule(static) reduction(^ : a, b)
  for (long s = 0; s < lat.volume(); ++s) {
    const std::uint64_t r = global_site(lat, s);
    const std::uint32_t c = crc32(bytes.data() + s * site_bytes, site_bytes);
    a ^= rotl(c, static_cast<unsigned>(r % 29));
    b ^= rotl(c, static_cast<unsigned>(r % 31));
  }
  suma = a;
  sumb = b;
}

std::uint64_t load_be(const unsigned char* p, int bytes) { return get_word(p, bytes, true); }

void store_be(unsigned char* p, std::uint64_t v, int bytes) {
  for (int b = 0; b < bytes; ++b) p[bytes - 1 - b] = static_cast<unsigned char>(v >> (8 * b));
}

std::string dims_text(const Coords& c) {
  return std::to_string(c[0]) + "x" + std::to_string(c[1]) + "x" + std::to_string(c[2]) + "x" + std::to_string(c[3]);
}

int parse_positive(const std::string& path, const std::string& what, const std::string& text) {
  std::size_t used = 0;
  int n = 0;
  try {
    n = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  require(used > 0 && used == text.size() && n > 0, path, ": ", what, " '", text, "' is not a positive integer");
  return n;
}

std::uint32_t parse_hex32(const std::string& path, const std::string& what, const std::string& text) {
  std::size_t used = 0;
  unsigned long v = 0;
  try {
    v = std::stoul(text, &used, 16);
  } catch (const std::exception&) {
    used = 0;
  }
  require(used > 0 && used == text.size() && v <= 0xFFFFFFFFul, path, ": ", what, " '", text,
          "' is not a 32-bit hexadecimal number");
  return static_cast<std::uint32_t>(v);
}

std::string hex32(std::uint32_t v) {
  std::ostringstream s;
  s << std::hex << v;
  return s.str();
}

std::string print_real(double v) {
  std::ostringstream s;
  s.precision(15);
  s << v;
  return s.str();
}

std::string now_text() {
  char buf[64];
  const std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof(buf), "%a %b %d %H:%M:%S %Y", std::localtime(&t));
  return buf;
}

std::vector<Complex<double>> as_stored(const std::vector<Complex<double>>& links, const SiteFormat& f) {
  return decode_links(encode_links(links, f), f);
}

void check_stated(const std::string& path, const char* what, const std::string& stated, double actual, bool single) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(stated, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  require(used > 0 && used == stated.size(), path, ": ", what, " '", stated, "' is not a number");
  const double tol = precision_tolerance(single) + printed_resolution(stated);
  require(std::fabs(v - actual) <= tol, path, ": ", what, " mismatch: the file says ", stated, ", its links give ",
          print_real(actual), " (tolerance ", tol, " for ", single ? "32" : "64", "-bit data)");
}

}  // namespace gauge_io

const char* to_string(GaugeFileFormat f) { return f == GaugeFileFormat::ildg ? "ildg" : "nersc"; }

GaugeFileFormat parse_gauge_format(const std::string& name) {
  if (name == "nersc") return GaugeFileFormat::nersc;
  if (name == "ildg") return GaugeFileFormat::ildg;
  fail("unknown gauge file format '", name, "': expected nersc or ildg");
}

std::string GaugeFileInfo::value(const std::string& key) const {
  for (const auto& kv : header)
    if (kv.first == key) return kv.second;
  return "";
}

std::string GaugeFileInfo::describe() const {
  std::ostringstream s;
  const char* bits = precision == Precision::single ? "32" : "64";
  if (format == GaugeFileFormat::nersc)
    s << "format      NERSC " << (two_rows ? "4D_SU3_GAUGE (3x2)" : "4D_SU3_GAUGE_3x3") << ", IEEE" << bits
      << (little_endian ? " little" : " big") << " endian\n";
  else
    s << "format      ILDG (LIME), IEEE" << bits << " big endian\n";
  s << "dimensions  " << gauge_io::dims_text(dims) << "\n";
  s << "links       " << data_bytes << " bytes at offset " << data_offset << " (file " << file_bytes << " bytes)\n";
  if (sequence_number >= 0) s << "sequence    " << sequence_number << "\n";
  if (format == GaugeFileFormat::nersc) {
    s << "header\n";
    for (const auto& kv : header) s << "  " << kv.first << " = " << kv.second << "\n";
  } else {
    s << "records\n";
    for (std::size_t i = 0; i < records.size(); ++i) {
      const LimeRecord& r = records[i];
      s << "  " << i << "  " << (r.message_begin ? "MB" : "  ") << " " << (r.message_end ? "ME" : "  ") << "  "
        << r.type << "  " << r.bytes << " bytes at " << r.data_offset << "\n";
      if (!r.text.empty()) {
        std::istringstream lines(r.text);
        std::string line;
        while (std::getline(lines, line))
          if (!line.empty()) s << "        " << line << "\n";
      }
    }
  }
  return s.str();
}

GaugeFileInfo read_gauge_info(MPI_Comm comm, const std::string& path) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string packed, error;
  if (rank == 0) {
    try {
      std::error_code ec;
      require(!std::filesystem::is_directory(path, ec), path,
              " is a directory, expected a gauge configuration file (NERSC or ILDG)");
      std::ifstream f(path, std::ios::binary | std::ios::ate);
      require(f.good(), "cannot open gauge file ", path, ": ", std::strerror(errno));
      const std::uint64_t size = static_cast<std::uint64_t>(f.tellg());
      unsigned char head[12] = {};
      f.seekg(0);
      f.read(reinterpret_cast<char*>(head), sizeof(head));
      GaugeFileInfo info;
      if (size >= 12 && std::memcmp(head, "BEGIN_HEADER", 12) == 0) {
        info = gauge_io::parse_nersc(path, size);
      } else if (size >= 4 && gauge_io::load_be(head, 4) == gauge_io::lime_magic) {
        info = gauge_io::parse_lime(path, size);
      } else {
        fail(path,
             ": not a gauge file Latke knows: it starts neither with BEGIN_HEADER (NERSC) nor with the LIME "
             "magic number 0x456789ab (ILDG)");
      }
      packed = gauge_io::pack(info);
    } catch (const Error& e) {
      error = e.what();
    }
  }
  bcast_string(comm, error);
  if (!error.empty()) throw Error(error);
  bcast_string(comm, packed);
  return gauge_io::unpack(packed);
}

std::vector<Complex<double>> read_gauge(const Lattice& lat, const std::string& path, GaugeFileInfo* info_out, Backend b,
                                        const GaugeReadParam& param) {
  const LogScope log(LogEvent::gauge_io, 0, false);
  const GaugeFileInfo info = read_gauge_info(lat.comm(), path);
  require(info.dims == lat.global(), path, ": the file holds a ", gauge_io::dims_text(info.dims),
          " lattice, but the lattice asked for is ", gauge_io::dims_text(lat.global()));
  if (info_out) *info_out = info;
  return info.format == GaugeFileFormat::nersc ? gauge_io::read_nersc(lat, path, info, b, param)
                                               : gauge_io::read_ildg(lat, path, info, b, param);
}

void write_gauge(const Lattice& lat, const std::vector<Complex<double>>& links, const std::string& path,
                 const GaugeWriteParam& p, Backend b) {
  const LogScope log(LogEvent::gauge_io, 0, false);
  require(links.size() == static_cast<std::size_t>(lat.volume()) * 36, "writing ", path, ": host array has ",
          links.size(), " complex numbers, expected ", lat.volume() * 36, " (local volume x 4 x 3 x 3)");
  require(p.precision == Precision::double_ || p.precision == Precision::single, "writing ", path, ": file precision ",
          to_string(p.precision), " is not one gauge files have: expected double or single");
  require(p.format == GaugeFileFormat::nersc || (!p.two_rows && !p.little_endian), "writing ", path,
          ": ILDG files hold 3x3 big-endian links; 3x2 and little endian are NERSC options");
  int directory = 0;
  if (lat.rank() == 0) {
    std::error_code ec;
    directory = std::filesystem::is_directory(path, ec) ? 1 : 0;
  }
  MPI_Bcast(&directory, 1, MPI_INT, 0, lat.comm());
  require(!directory, "writing ", path, ": it is a directory, expected the name of a gauge configuration file");
  gauge_io::check_finite_for_writing(lat, path, links);
  if (p.format == GaugeFileFormat::nersc)
    gauge_io::write_nersc(lat, links, path, p, b);
  else
    gauge_io::write_ildg(lat, links, path, p, b);
}

}  // namespace latke
