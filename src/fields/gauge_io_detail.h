// Pieces shared by the NERSC and ILDG readers and writers: byte order, conversion between
// links and file words, checksums (the MPI-IO of each rank's sites and the atomic file are
// the core's, core/site_files.h).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/core/site_files.h"
#include "src/core/complex.h"
#include "src/core/error.h"
#include "src/core/lattice.h"
#include "src/fields/gauge_io.h"
#include "src/fields/gauge_observables.h"

namespace latke::gauge_io {

/// How the links of one site are stored in a file.
struct SiteFormat {
  bool single = false;  ///< IEEE32 (else IEEE64)
  bool big_endian = true;
  int rows = 3;  ///< 3, or 2 with the third rebuilt
  std::size_t real_bytes() const { return single ? 4 : 8; }
  std::size_t site_bytes() const { return 4 * rows * 3 * 2 * real_bytes(); }
};

/// @brief Links (this rank's host array) to file bytes, site by site.
std::vector<unsigned char> encode_links(const std::vector<Complex<double>>& links, const SiteFormat& f);
/// @brief File bytes to links; two-row links get their third row rebuilt.
std::vector<Complex<double>> decode_links(const std::vector<unsigned char>& bytes, const SiteFormat& f);
/// @brief Largest deviation from orthonormality of the first two rows of every link.
double row_unitarity(const std::vector<Complex<double>>& links);
/// @brief Links read from single-precision data: when every link of the lattice is within
/// the single-precision tolerance of SU(3), project them all back onto SU(3) (the rounding
/// of the file is then gone); otherwise (links that are not meant to be SU(3)) leave them.
void reunitarize_if_close(const Lattice& lat, std::vector<Complex<double>>& links);
/// @brief Links just read from path: every entry must be finite, and, when su3 is set, every
/// link within precision_tolerance(single) of SU(3). Otherwise every rank throws the same
/// error, naming the first offending link in file order (global site x,y,z,t and mu), its
/// deviation, the tolerance and how many links fail. Collective.
void check_read_links(const Lattice& lat, const std::string& path, const std::vector<Complex<double>>& links,
                      bool single, bool su3);
/// @brief Links about to be written to path must be finite; otherwise every rank throws the
/// same error naming the first link that is not. Collective.
void check_finite_for_writing(const Lattice& lat, const std::string& path, const std::vector<Complex<double>>& links);
/// @brief The plaquette and link trace a file is about to state must be finite (finite links
/// can still overflow them); throws naming both.
void require_finite_observables(const std::string& path, const GaugeObservables& o);
/// @brief Tolerance of checks on data stored with this precision (single 1e-5, double 1e-10).
double precision_tolerance(bool single);
/// @brief Half a unit in the last digit of a printed number ("0.5937" -> 5e-5).
double printed_resolution(const std::string& number);

/// @brief NERSC checksum: the sum modulo 2^32 of the data as 32-bit words.
std::uint32_t nersc_checksum(const std::vector<unsigned char>& bytes, const SiteFormat& f);
/// @brief zlib's CRC-32 of n bytes.
std::uint32_t crc32(const unsigned char* data, std::size_t n);
/// @brief SciDAC checksum (suma, sumb) of this rank's sites, before the XOR over ranks.
void scidac_checksum(const Lattice& lat, const std::vector<unsigned char>& bytes, std::size_t site_bytes,
                     std::uint32_t& suma, std::uint32_t& sumb);

/// Big-endian integers in file headers.
std::uint64_t load_be(const unsigned char* p, int bytes);
void store_be(unsigned char* p, std::uint64_t v, int bytes);

/// Format-specific halves of read_gauge_info / read_gauge / write_gauge (rank 0 parses).
GaugeFileInfo parse_nersc(const std::string& path, std::uint64_t file_bytes);
GaugeFileInfo parse_lime(const std::string& path, std::uint64_t file_bytes);
std::vector<Complex<double>> read_nersc(const Lattice& lat, const std::string& path, const GaugeFileInfo& info,
                                        Backend b, const GaugeReadParam& param);
std::vector<Complex<double>> read_ildg(const Lattice& lat, const std::string& path, const GaugeFileInfo& info,
                                       Backend b, const GaugeReadParam& param);
void write_nersc(const Lattice& lat, const std::vector<Complex<double>>& links, const std::string& path,
                 const GaugeWriteParam& p, Backend b);
void write_ildg(const Lattice& lat, const std::vector<Complex<double>>& links, const std::string& path,
                const GaugeWriteParam& p, Backend b);

/// @brief "8x8x8x16"
std::string dims_text(const Coords& c);
/// @brief The positive integer `text`, which a file gives as `what`; throws naming both.
int parse_positive(const std::string& path, const std::string& what, const std::string& text);
/// @brief The hexadecimal 32-bit number `text`, which a file gives as `what`; throws naming both.
std::uint32_t parse_hex32(const std::string& path, const std::string& what, const std::string& text);
/// @brief "1a2b3c4d"
std::string hex32(std::uint32_t v);
/// @brief A real with 15 significant digits, as headers state plaquettes and traces.
std::string print_real(double v);
/// @brief The local time as file headers state dates ("Sun Nov 22 05:50:07 2026").
std::string now_text();
/// @brief The links as they will read back from a file of format f (rounded, rows rebuilt).
std::vector<Complex<double>> as_stored(const std::vector<Complex<double>>& links, const SiteFormat& f);
/// @brief Compare a value a file states with the value of its data; throws naming both.
void check_stated(const std::string& path, const char* what, const std::string& stated, double actual, bool single);

inline constexpr std::uint32_t lime_magic = 0x456789abu;

}  // namespace latke::gauge_io
