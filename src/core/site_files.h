// Files of per-site records in global lexicographic order (x fastest), read and written by
// every rank at once with MPI-IO, each rank its own sites; writes go through a temporary file
// renamed over the target only when complete. Gauge configurations, null vectors and solution
// vectors are such files. Every call is collective, and a failure on any rank fails every rank
// with one message.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/core/output_files.h"
#include "src/core/lattice.h"

namespace latke {

/// @brief Give every rank of comm rank 0's string.
void bcast_string(MPI_Comm comm, std::string& s);
/// @brief "MPI_File_open: No such file or directory" for an MPI error code.
std::string mpi_error(const char* call, int code);

/// @brief Read this rank's sites (site_bytes each) from the global lexicographic array of
/// sites starting at byte `offset` of the file. Collective.
std::vector<unsigned char> read_sites(const Lattice& lat, const std::string& path, std::uint64_t offset,
                                      std::size_t site_bytes);

/// A file written under a temporary name and renamed over its target by commit(); if the
/// object goes away uncommitted, the temporary file is deleted. Every call is collective.
class AtomicFile {
 public:
  AtomicFile(MPI_Comm comm, const std::string& path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  /// @brief Rank 0 writes bytes at offset (others pass nothing).
  void write_root(std::uint64_t offset, const std::string& bytes);
  /// @brief Every rank writes its sites into the global lexicographic array at offset.
  void write_sites(const Lattice& lat, std::uint64_t offset, const std::vector<unsigned char>& bytes,
                   std::size_t site_bytes);
  /// @brief Close; check that the temporary file has expected_bytes (MPI-IO implementations
  /// do not all report a write the file system refused); rename it over the target.
  void commit(std::uint64_t expected_bytes);

 private:
  MPI_Comm comm_;
  std::string path_, tmp_;
  std::string kept_;  ///< "; PATH is kept as it was" (or "was not written"), for messages
  MPI_File fh_ = MPI_FILE_NULL;
  bool committed_ = false;
  std::unique_ptr<InterruptCleanup> cleanup_;  ///< rank 0: the temporary, removed on SIGINT/SIGTERM
};

}  // namespace latke
