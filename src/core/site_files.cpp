// Files of per-site records: MPI-IO of each rank's sites, and the atomic file.
#include "src/core/site_files.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "src/core/error.h"

namespace latke {

namespace {

/// This rank's sites as a subarray of the global lexicographic array of sites.
struct SiteTypes {
  MPI_Datatype site = MPI_DATATYPE_NULL, file = MPI_DATATYPE_NULL;
  SiteTypes(const Lattice& lat, std::size_t site_bytes) {
    MPI_Type_contiguous(static_cast<int>(site_bytes), MPI_BYTE, &site);
    MPI_Type_commit(&site);
    const Coords &G = lat.global(), &L = lat.local(), &o = lat.offset();
    int sizes[4] = {G[3], G[2], G[1], G[0]}, sub[4] = {L[3], L[2], L[1], L[0]}, start[4] = {o[3], o[2], o[1], o[0]};
    MPI_Type_create_subarray(4, sizes, sub, start, MPI_ORDER_C, site, &file);
    MPI_Type_commit(&file);
  }
  ~SiteTypes() {
    MPI_Type_free(&file);
    MPI_Type_free(&site);
  }
};


}  // namespace

void bcast_string(MPI_Comm comm, std::string& s) {
  std::uint64_t n = s.size();
  MPI_Bcast(&n, 1, MPI_UINT64_T, 0, comm);
  s.resize(n);
  if (n > 0) MPI_Bcast(s.data(), static_cast<int>(n), MPI_CHAR, 0, comm);
}

std::string mpi_error(const char* call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(call) + ": " + std::string(text, len);
}

std::vector<unsigned char> read_sites(const Lattice& lat, const std::string& path, std::uint64_t offset,
                                      std::size_t site_bytes) {
  std::vector<unsigned char> bytes(static_cast<std::size_t>(lat.volume()) * site_bytes);
  MPI_File fh;
  int rc = MPI_File_open(lat.comm(), path.c_str(), MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  collective_require(lat.comm(), rc == MPI_SUCCESS,
                     path + ": cannot open for reading (" + mpi_error("MPI_File_open", rc) + ")");
  SiteTypes types(lat, site_bytes);
  rc = MPI_File_set_view(fh, static_cast<MPI_Offset>(offset), types.site, types.file, "native", MPI_INFO_NULL);
  int count = 0;
  if (rc == MPI_SUCCESS) {
    MPI_Status status;
    rc = MPI_File_read_all(fh, bytes.data(), static_cast<int>(lat.volume()), types.site, &status);
    if (rc == MPI_SUCCESS) MPI_Get_count(&status, types.site, &count);
  }
  MPI_File_close(&fh);
  collective_require(lat.comm(), rc == MPI_SUCCESS,
                     path + ": reading the links failed (" + mpi_error("MPI_File_read_all", rc) + ")");
  collective_require(lat.comm(), count == lat.volume(),
                     path + ": the file ended after " + std::to_string(count) + " of this rank's " +
                         std::to_string(lat.volume()) + " sites");
  return bytes;
}

AtomicFile::AtomicFile(MPI_Comm comm, const std::string& path) : comm_(comm), path_(path) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0) {
    tmp_ = temporary_name(path);
    std::remove(tmp_.c_str());
    cleanup_ = std::make_unique<InterruptCleanup>(tmp_, path);
    kept_ = "; " + path + (std::filesystem::exists(path) ? " is kept as it was" : " was not written");
  }
  bcast_string(comm, tmp_);
  bcast_string(comm, kept_);
  const int rc = MPI_File_open(comm, tmp_.c_str(), MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh_);
  if (rc != MPI_SUCCESS) fh_ = MPI_FILE_NULL;
  collective_require(comm, rc == MPI_SUCCESS,
                     path + ": cannot create the temporary file " + tmp_ + " (" + mpi_error("MPI_File_open", rc) + ")" +
                         kept_);
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  if (fh_ != MPI_FILE_NULL) MPI_File_close(&fh_);
  int rank = 0;
  MPI_Comm_rank(comm_, &rank);
  if (rank == 0) std::remove(tmp_.c_str());
}

void AtomicFile::write_root(std::uint64_t offset, const std::string& bytes) {
  int rank = 0, rc = MPI_SUCCESS, count = 0;
  MPI_Comm_rank(comm_, &rank);
  if (rank == 0) {
    MPI_Status status;
    rc = MPI_File_write_at(fh_, static_cast<MPI_Offset>(offset), bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE,
                           &status);
    if (rc == MPI_SUCCESS) MPI_Get_count(&status, MPI_BYTE, &count);
  }
  collective_require(comm_, rc == MPI_SUCCESS && (rank != 0 || count == static_cast<int>(bytes.size())),
                     path_ + ": writing " + tmp_ + " failed (" +
                         (rc == MPI_SUCCESS ? "short write of " + std::to_string(count) + " of " +
                                                  std::to_string(bytes.size()) + " bytes: is the disk full?"
                                            : mpi_error("MPI_File_write_at", rc)) +
                         ")" + kept_);
}

void AtomicFile::write_sites(const Lattice& lat, std::uint64_t offset, const std::vector<unsigned char>& bytes,
                             std::size_t site_bytes) {
  SiteTypes types(lat, site_bytes);
  int rc = MPI_File_set_view(fh_, static_cast<MPI_Offset>(offset), types.site, types.file, "native", MPI_INFO_NULL);
  int count = 0;
  if (rc == MPI_SUCCESS) {
    MPI_Status status;
    rc = MPI_File_write_all(fh_, bytes.data(), static_cast<int>(lat.volume()), types.site, &status);
    if (rc == MPI_SUCCESS) MPI_Get_count(&status, types.site, &count);
  }
  MPI_File_set_view(fh_, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  collective_require(comm_, rc == MPI_SUCCESS && count == lat.volume(),
                     path_ + ": writing " + tmp_ + " failed (" +
                         (rc == MPI_SUCCESS ? "short write of " + std::to_string(count) + " sites: is the disk full?"
                                            : mpi_error("MPI_File_write_all", rc)) +
                         ")" + kept_);
}

void AtomicFile::commit(std::uint64_t expected_bytes) {
  const int rc = MPI_File_close(&fh_);
  fh_ = MPI_FILE_NULL;
  collective_require(comm_, rc == MPI_SUCCESS,
                     path_ + ": closing " + tmp_ + " failed (" + mpi_error("MPI_File_close", rc) + ")" + kept_);
  int rank = 0;
  MPI_Comm_rank(comm_, &rank);
  std::string why;
  if (rank == 0) {
    std::error_code ec;
    const std::uintmax_t size = std::filesystem::file_size(tmp_, ec);
    if (ec || size != expected_bytes)
      why = "it has " + (ec ? std::string("an unknown number of") : std::to_string(size)) + " bytes, expected " +
            std::to_string(expected_bytes) + ": the file system did not take the whole write";
  }
  collective_require(comm_, why.empty(), path_ + ": writing " + tmp_ + " failed (" + why + ")" + kept_);
  if (rank == 0 && std::rename(tmp_.c_str(), path_.c_str()) != 0) why = std::strerror(errno);
  collective_require(comm_, why.empty(), path_ + ": cannot rename " + tmp_ + " to it (" + why + ")" + kept_);
  committed_ = true;
  if (cleanup_) cleanup_->release();
}


}  // namespace latke
