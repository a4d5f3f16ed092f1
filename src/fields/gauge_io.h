// Gauge configuration files: NERSC and ILDG, read and written with MPI-IO (collective; each
// rank reads or writes only its own sites, no rank holds the whole lattice). Links in memory
// are always the host array of this rank's local volume in double (conventions.h layout);
// the file's precision is chosen independently and converted on the way.
//
// NERSC: an ASCII header from BEGIN_HEADER to END_HEADER of "KEY = VALUE" lines, then the
// links, sites in lexicographic order (x fastest, t slowest), per site U_x, U_y, U_z, U_t,
// per link the rows (all three: DATATYPE = 4D_SU3_GAUGE_3x3; the first two: 4D_SU3_GAUGE,
// the third rebuilt as conj(row0 x row1)), each entry (re, im), as IEEE32 or IEEE64, big
// or little endian (FLOATING_POINT = IEEE32BIG, IEEE64LITTLE, ...; plain IEEE32/IEEE64 read
// as big endian). CHECKSUM is the sum modulo 2^32 of the data as 32-bit words (a float is
// one word, a double its two halves), in hexadecimal. LINK_TRACE = <Re tr U_mu(x)> / 3,
// PLAQUETTE = <Re tr U_P> / 3.
//
// ILDG: a LIME container: records of a 144-byte big-endian header (magic 0x456789ab,
// version 1, flags with message-begin bit 15 and message-end bit 14, 64-bit data length,
// 128-byte NUL-padded type string), then the data, zero-padded to a multiple of 8 bytes.
// Latke writes, as SciDAC/QIO do:
//   message 1: scidac-private-file-xml, scidac-file-xml
//   message 2: scidac-private-record-xml, scidac-record-xml, ildg-format, ildg-binary-data,
//              scidac-checksum
//   message 3: ildg-data-lfn
// ildg-binary-data holds the links in NERSC 3x3 order, big-endian IEEE32 or IEEE64 as
// ildg-format's <precision> says. scidac-checksum: for each site of global lexicographic
// index r, c = CRC-32 (zlib's) of the site's 4 links as stored; suma = XOR of c rotated left
// by r mod 29, sumb = XOR of c rotated left by r mod 31 (hexadecimal).
//
// Reading verifies everything a file states: dimensions against the lattice asked for, the
// data length, NERSC's CHECKSUM, PLAQUETTE and LINK_TRACE (to a tolerance set by the file's
// precision and the digits printed), unitarity of the stored rows of a 3x2 file, ILDG's
// scidac-checksum, and the plaquette and link trace that Latke records in scidac-record-xml.
// The links themselves must be finite and, in 3x3 files, in SU(3): max |(U U^dag - 1)_ij|
// and |det U - 1| at most the precision's tolerance (1e-10 for 64-bit data, 1e-5 for 32-bit);
// the error names the first offending link in file order (site x,y,z,t and mu), its
// deviation and how many links fail. GaugeReadParam::accept_nonunitary reads 3x3 links that
// are not SU(3) (smeared or fat links kept in these formats); links that are not finite are
// never read. Every failure names the file, the value found and the value expected. Links
// read from single-precision data that are all within 1e-5 of SU(3) are then projected back
// onto SU(3), which removes the rounding of the file (accepted non-SU(3) links are left alone).
//
// Writing goes to a temporary name next to the file, renamed over it only when every rank
// has written its part: a failed write leaves any existing file untouched.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "src/core/backend.h"
#include "src/core/complex.h"
#include "src/core/lattice.h"
#include "src/fields/precision.h"

namespace latke {

enum class GaugeFileFormat { nersc, ildg };

const char* to_string(GaugeFileFormat f);
/// @brief "nersc" or "ildg"; anything else is an error naming the value.
GaugeFileFormat parse_gauge_format(const std::string& name);

struct GaugeWriteParam {
  GaugeFileFormat format = GaugeFileFormat::nersc;
  Precision precision = Precision::double_;  ///< of the file: double_ or single
  bool two_rows = false;                     ///< NERSC 4D_SU3_GAUGE (3x2) instead of 3x3
  bool little_endian = false;                ///< NERSC only (ILDG is big endian)
  std::string ensemble_id = "latke";
  std::string ensemble_label;
  long sequence_number = 0;
  std::string lfn;  ///< ILDG logical file name; empty: the file's name
};

struct GaugeReadParam {
  /// Read 3x3 links that are not in SU(3) instead of refusing them (links that are not
  /// finite are refused all the same).
  bool accept_nonunitary = false;
};

/// One LIME record as found in a file.
struct LimeRecord {
  std::string type;
  std::uint64_t header_offset = 0, data_offset = 0, bytes = 0;
  bool message_begin = false, message_end = false;
  std::string text;  ///< the data of records up to 64 KiB other than binary data (NULs removed)
};

/// What a file's header says, without reading its links.
struct GaugeFileInfo {
  GaugeFileFormat format = GaugeFileFormat::nersc;
  Coords dims{};
  Precision precision = Precision::double_;
  bool two_rows = false;
  bool little_endian = false;
  std::uint64_t data_offset = 0, data_bytes = 0, file_bytes = 0;
  long sequence_number = -1;                                ///< -1 when the file does not say
  std::vector<std::pair<std::string, std::string>> header;  ///< NERSC: KEY = VALUE in file order
  std::vector<LimeRecord> records;                          ///< ILDG: every record in file order

  /// @brief The value of a NERSC header key, or "" when absent.
  std::string value(const std::string& key) const;
  /// @brief A multi-line description for people (format, dimensions, precision, header or records).
  std::string describe() const;
};

/// @brief The header of a gauge file (format recognized from its first bytes). Rank 0 reads
/// and checks it; every rank of comm gets the result or the same error. Collective.
GaugeFileInfo read_gauge_info(MPI_Comm comm, const std::string& path);

/// @brief Read a gauge file into this rank's part of lat (host array, conventions.h layout),
/// verifying what the file states (see above); plaquette and link trace are computed on
/// backend b. Collective over lat's ranks.
/// @param info when not null, receives the header.
/// @param param what to accept beyond SU(3) links.
std::vector<Complex<double>> read_gauge(const Lattice& lat, const std::string& path, GaugeFileInfo* info = nullptr,
                                        Backend b = Backend::cpu, const GaugeReadParam& param = {});

/// @brief Write this rank's links (host array over its local volume) as part of a gauge
/// file of lat's global extents; header plaquette and link trace are those of the data as
/// stored, computed on backend b. Links that are not finite are refused (naming the first),
/// as is a path that is a directory. Collective over lat's ranks.
void write_gauge(const Lattice& lat, const std::vector<Complex<double>>& links, const std::string& path,
                 const GaugeWriteParam& param, Backend b = Backend::cpu);

}  // namespace latke
