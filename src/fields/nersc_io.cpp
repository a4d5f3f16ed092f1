// NERSC gauge files (format in gauge_io.h): header parsing, reading with every check the
// header allows, and writing.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "src/fields/gauge_io_detail.h"
#include "src/fields/gauge_observables.h"

namespace latke::gauge_io {

namespace {

std::string trim(const std::string& s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

/// The header is ASCII and short; a file without END_HEADER in its first 64 KiB is not NERSC.
constexpr std::size_t max_header = 65536;

SiteFormat site_format(const GaugeFileInfo& i) {
  SiteFormat f;
  f.single = i.precision == Precision::single;
  f.big_endian = !i.little_endian;
  f.rows = i.two_rows ? 2 : 3;
  return f;
}

}  // namespace

GaugeFileInfo parse_nersc(const std::string& path, std::uint64_t file_bytes) {
  std::ifstream f(path, std::ios::binary);
  std::string text(std::min<std::uint64_t>(file_bytes, max_header), '\0');
  f.read(text.data(), static_cast<std::streamsize>(text.size()));
  GaugeFileInfo info;
  info.format = GaugeFileFormat::nersc;
  info.file_bytes = file_bytes;
  std::size_t pos = text.find('\n');
  require(pos != std::string::npos && trim(text.substr(0, pos)) == "BEGIN_HEADER", path,
          ": the first line is not BEGIN_HEADER");
  int line_no = 1;
  for (;;) {
    const std::size_t next = text.find('\n', pos + 1);
    require(next != std::string::npos, path, ": no END_HEADER line within the first ", text.size(),
            " bytes: the NERSC header is not terminated");
    const std::string line = trim(text.substr(pos + 1, next - pos - 1));
    ++line_no;
    for (char c : line)
      require(std::isprint(static_cast<unsigned char>(c)) || c == '\t', path,
              ": no END_HEADER line before binary data (header line ", line_no,
              "): the NERSC header is not terminated");
    pos = next;
    if (line.empty()) continue;
    if (line == "END_HEADER") break;
    const std::size_t eq = line.find('=');
    require(eq != std::string::npos, path, ": header line ", line_no, " '", line, "' is not KEY = VALUE");
    info.header.emplace_back(trim(line.substr(0, eq)), trim(line.substr(eq + 1)));
  }
  info.data_offset = pos + 1;

  const std::string datatype = info.value("DATATYPE");
  if (datatype == "4D_SU3_GAUGE_3x3")
    info.two_rows = false;
  else if (datatype == "4D_SU3_GAUGE")
    info.two_rows = true;
  else
    fail(path, ": unknown DATATYPE '", datatype,
         "': expected 4D_SU3_GAUGE_3x3 (3x3 links) or 4D_SU3_GAUGE (first two rows)");
  for (int d = 0; d < 4; ++d) {
    const std::string key = "DIMENSION_" + std::to_string(d + 1);
    info.dims[d] = parse_positive(path, key, info.value(key));
  }
  const std::string fp = info.value("FLOATING_POINT");
  if (fp == "IEEE32" || fp == "IEEE32BIG" || fp == "IEEE32LITTLE")
    info.precision = Precision::single;
  else if (fp == "IEEE64" || fp == "IEEE64BIG" || fp == "IEEE64LITTLE")
    info.precision = Precision::double_;
  else
    fail(path, ": unknown FLOATING_POINT '", fp,
         "': expected IEEE32BIG, IEEE32LITTLE, IEEE64BIG or IEEE64LITTLE (IEEE32 or IEEE64: big endian)");
  info.little_endian = fp.size() > 6 && fp.substr(6) == "LITTLE";
  require(!info.value("CHECKSUM").empty(), path, ": the header has no CHECKSUM");
  const std::string seq = info.value("SEQUENCE_NUMBER");
  if (!seq.empty()) {
    try {
      info.sequence_number = std::stol(seq);
    } catch (const std::exception&) {
      info.sequence_number = -1;
    }
  }

  const std::uint64_t sites = static_cast<std::uint64_t>(info.dims[0]) * info.dims[1] * info.dims[2] * info.dims[3];
  info.data_bytes = sites * site_format(info).site_bytes();
  const std::uint64_t found = file_bytes - info.data_offset;
  require(found >= info.data_bytes, path, ": the file is truncated: ", found,
          " bytes of links after the header, but a ", dims_text(info.dims), " lattice of ", datatype, " in ", fp,
          " needs ", info.data_bytes);
  require(found == info.data_bytes, path, ": ", found - info.data_bytes, " unexpected bytes after the ",
          info.data_bytes, " bytes of links a ", dims_text(info.dims), " lattice of ", datatype, " in ", fp, " needs");
  return info;
}

std::vector<Complex<double>> read_nersc(const Lattice& lat, const std::string& path, const GaugeFileInfo& info,
                                        Backend b, const GaugeReadParam& param) {
  const SiteFormat f = site_format(info);
  const std::vector<unsigned char> bytes = read_sites(lat, path, info.data_offset, f.site_bytes());

  const std::uint64_t local = nersc_checksum(bytes, f);
  std::uint64_t total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_UINT64_T, MPI_SUM, lat.comm());
  const std::uint32_t sum = static_cast<std::uint32_t>(total);
  const std::string stated = info.value("CHECKSUM");
  require(sum == parse_hex32(path, "CHECKSUM", stated), path,
          ": checksum mismatch: the header says CHECKSUM = ", stated, ", the data give ", hex32(sum));

  std::vector<Complex<double>> links = decode_links(bytes, f);
  // Before PLAQUETTE and LINK_TRACE: a link that is not SU(3) is named, not a mean of them.
  // 3x2 links are checked by the orthonormality of their stored rows below.
  check_read_links(lat, path, links, f.single, f.rows == 3 && !param.accept_nonunitary);
  if (f.rows == 2) {
    // The stored rows must be orthonormal for the rebuilt third row to make an SU(3) link.
    double dev = row_unitarity(links), worst = 0;
    MPI_Allreduce(&dev, &worst, 1, MPI_DOUBLE, MPI_MAX, lat.comm());
    require(worst <= precision_tolerance(f.single), path,
            ": links are not unitary: the stored rows of a 4D_SU3_GAUGE (3x2) file deviate from orthonormal by ", worst,
            " (tolerance ", precision_tolerance(f.single), " for ", f.single ? "IEEE32" : "IEEE64",
            " data), so the third row cannot be rebuilt");
  }
  const std::string plaq = info.value("PLAQUETTE"), trace = info.value("LINK_TRACE");
  if (!plaq.empty() || !trace.empty()) {
    const GaugeObservables o = measure_gauge(lat, links, b);
    if (!plaq.empty()) check_stated(path, "PLAQUETTE", plaq, o.plaquette, f.single);
    if (!trace.empty()) check_stated(path, "LINK_TRACE", trace, o.link_trace, f.single);
  }
  if (f.single) reunitarize_if_close(lat, links);
  return links;
}

void write_nersc(const Lattice& lat, const std::vector<Complex<double>>& links, const std::string& path,
                 const GaugeWriteParam& p, Backend b) {
  SiteFormat f;
  f.single = p.precision == Precision::single;
  f.big_endian = !p.little_endian;
  f.rows = p.two_rows ? 2 : 3;
  const std::vector<unsigned char> bytes = encode_links(links, f);
  const std::vector<Complex<double>> stored = decode_links(bytes, f);
  if (f.rows == 2) {
    double dev = row_unitarity(stored), worst = 0;
    MPI_Allreduce(&dev, &worst, 1, MPI_DOUBLE, MPI_MAX, lat.comm());
    require(worst <= precision_tolerance(f.single), "writing ", path,
            ": a 4D_SU3_GAUGE (3x2) file needs SU(3) links, but the first two rows deviate from orthonormal by ", worst,
            " (tolerance ", precision_tolerance(f.single), "); reunitarize them or write 3x3");
  }
  const GaugeObservables o = measure_gauge(lat, stored, b);
  require_finite_observables(path, o);
  const std::uint64_t local = nersc_checksum(bytes, f);
  std::uint64_t total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_UINT64_T, MPI_SUM, lat.comm());

  // Rank 0's header (host name, date) for all: the links start at the same offset everywhere.
  std::ostringstream h;
  const Coords& G = lat.global();
  char host[256] = "unknown";
  gethostname(host, sizeof(host) - 1);
  const std::string date = now_text();
  h << "BEGIN_HEADER\n"
    << "HDR_VERSION = 1.0\n"
    << "DATATYPE = " << (f.rows == 2 ? "4D_SU3_GAUGE" : "4D_SU3_GAUGE_3x3") << "\n"
    << "STORAGE_FORMAT = 1.0\n";
  for (int d = 0; d < 4; ++d) h << "DIMENSION_" << d + 1 << " = " << G[d] << "\n";
  h << "LINK_TRACE = " << print_real(o.link_trace) << "\n"
    << "PLAQUETTE = " << print_real(o.plaquette) << "\n";
  for (int d = 0; d < 4; ++d) h << "BOUNDARY_" << d + 1 << " = PERIODIC\n";
  h << "CHECKSUM = " << hex32(static_cast<std::uint32_t>(total)) << "\n"
    << "ENSEMBLE_ID = " << p.ensemble_id << "\n"
    << "ENSEMBLE_LABEL = " << p.ensemble_label << "\n"
    << "SEQUENCE_NUMBER = " << p.sequence_number << "\n"
    << "CREATOR = Latke\n"
    << "CREATOR_HARDWARE = " << host << "\n"
    << "CREATION_DATE = " << date << "\n"
    << "ARCHIVE_DATE = " << date << "\n"
    << "FLOATING_POINT = IEEE" << (f.single ? "32" : "64") << (f.big_endian ? "BIG" : "LITTLE") << "\n"
    << "END_HEADER\n";
  std::string header = h.str();
  bcast_string(lat.comm(), header);

  AtomicFile file(lat.comm(), path);
  file.write_root(0, header);
  file.write_sites(lat, header.size(), bytes, f.site_bytes());
  file.commit(header.size() + static_cast<std::uint64_t>(lat.volume()) * lat.size() * f.site_bytes());
}

}  // namespace latke::gauge_io
