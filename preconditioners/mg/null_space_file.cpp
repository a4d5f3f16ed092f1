// Null-space files (Multigrid::save, Multigrid::load): every level's null vectors in global
// lexicographic order, so that any process grid reads them.
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "src/core/site_files.h"
#include "src/fields/gauge_io_detail.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "preconditioners/mg/mg.h"
#include "preconditioners/mg/mg_level.h"

namespace latke::mg {

// ---- null-space files -----------------------------------------------------------------------
//
// A text header of 4096 bytes ("LATKE-NULLSPACE 2", "levels L", then per transfer
// "transfer l lattice X,Y,Z,T components C nvec N checksum A B", padded with newlines), then
// for each transfer and each vector its sites in global lexicographic order (x fastest), C
// complex numbers of two little-endian doubles per site. A B: the SciDAC checksum (CRC-32 of
// each site rotated by its global index mod 29 and 31, XOR-ed over sites) of each vector,
// XOR-ed over the transfer's vectors, in hexadecimal. Version 1 files (no checksums) are read
// with their size checked only.

namespace {
constexpr std::uint64_t header_bytes = 4096;

/// This vector's SciDAC checksum over all ranks.
std::pair<std::uint32_t, std::uint32_t> vector_checksum(const Lattice& lat, const std::vector<unsigned char>& bytes,
                                                        std::size_t site_bytes) {
  std::uint32_t sum[2], all[2];
  gauge_io::scidac_checksum(lat, bytes, site_bytes, sum[0], sum[1]);
  MPI_Allreduce(sum, all, 2, MPI_UINT32_T, MPI_BXOR, lat.comm());
  return {all[0], all[1]};
}

std::uint64_t global_sites(const Lattice& lat) {
  const Coords& g = lat.global();
  return static_cast<std::uint64_t>(g[0]) * g[1] * g[2] * g[3];
}
}  // namespace

void Multigrid::save(const std::string& file) const {
  require(levels_[0]->transfer != nullptr, "multigrid: save before setup");
  const Lattice& fine = *levels_[0]->op->lattice();
  AtomicFile out(fine.comm(), file);
  std::ostringstream h;
  h << "LATKE-NULLSPACE 2\nlevels " << levels() << "\n";
  std::uint64_t offset = header_bytes;
  std::vector<Complex<double>> host;
  for (int l = 0; l + 1 < levels(); ++l) {
    const Level& L = *levels_[l];
    // An agglomerated level is written from its parts, as where it is spread: each rank its
    // sites of the whole it holds (the same file on any process grid).
    const Lattice& lat = L.gather ? *L.gather->part() : *L.op->lattice();
    const SpinorParam p = L.op->field_param();
    const int comps = p.nspin * p.ncolor;
    const std::size_t site_bytes = comps * sizeof(Complex<double>);
    std::uint32_t a = 0, b = 0;
    for (const ColorSpinorField& v : L.transfer->vectors()) {
      host.clear();
      if (L.gather) {
        L.gather->scatter(*L.part_x, v);
        L.part_x->to_lexicographic(host);
      } else {
        v.to_lexicographic(host);
      }
      std::vector<unsigned char> bytes(host.size() * sizeof(Complex<double>));
      std::memcpy(bytes.data(), host.data(), bytes.size());
      const auto sum = vector_checksum(lat, bytes, site_bytes);
      a ^= sum.first, b ^= sum.second;
      out.write_sites(lat, offset, bytes, site_bytes);
      offset += site_bytes * global_sites(lat);
    }
    const Coords& g = lat.global();
    h << "transfer " << l << " lattice " << g[0] << "," << g[1] << "," << g[2] << "," << g[3] << " components "
      << comps << " nvec " << L.transfer->nvec() << " checksum " << gauge_io::hex32(a) << " " << gauge_io::hex32(b)
      << "\n";
  }
  std::string header = h.str();
  require(header.size() <= header_bytes, "multigrid null-space header too long");
  header.resize(header_bytes, '\n');
  out.write_root(0, header);
  out.commit(offset);
}

void Multigrid::load(const std::string& file, const std::function<void(const std::string&)>& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  const LogScope log(LogEvent::mg_setup, 0, true);
  Level& F = *levels_[0];
  const MPI_Comm comm = F.op->lattice()->comm();
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string header, size_text;
  if (rank == 0) {
    std::error_code ec;
    if (std::filesystem::is_directory(file, ec)) {
      header = "directory";
    } else if (std::FILE* f = std::fopen(file.c_str(), "rb")) {
      header.resize(header_bytes);
      header.resize(std::fread(header.data(), 1, header_bytes, f));
      std::fclose(f);
      size_text = std::to_string(std::filesystem::file_size(file, ec));
    }
  }
  bcast_string(comm, header);
  bcast_string(comm, size_text);
  require(header != "directory", file, ": is a directory, expected a multigrid null-space file");
  require(!header.empty(), file, ": cannot read a multigrid null-space file there");
  std::istringstream h(header);
  std::string magic, word;
  int version = 0, n_levels = 0;
  h >> magic >> version >> word >> n_levels;
  require(magic == "LATKE-NULLSPACE" && (version == 1 || version == 2) && word == "levels", file,
          ": not a Latke null-space file (expected the header 'LATKE-NULLSPACE 2')");
  require(n_levels == levels(), file, ": holds a hierarchy of ", n_levels, " levels, the preconditioner has ",
          levels());
  // Every transfer's line first: the file's size is checked before any vector is read.
  struct Stated {
    std::string lattice, a, b;
    int comps = 0, nvec = 0;
  };
  std::vector<Stated> stated(levels() - 1);
  std::uint64_t expected = header_bytes;
  Coords g = F.op->lattice()->global();
  int comps = F.op->field_param().nspin * F.op->field_param().ncolor;
  for (int l = 0; l + 1 < levels(); ++l) {
    const LevelParam& q = param_.level[l];
    Stated& t = stated[l];
    int index = -1;
    std::string w1, w2, w3, w4, w5;
    h >> w1 >> index >> w2 >> t.lattice >> w3 >> t.comps >> w4 >> t.nvec;
    if (version >= 2) h >> w5 >> t.a >> t.b;
    // Level l's lattice and components from the fine ones and the aggregates (the coarse
    // levels' operators do not exist before their transfers are loaded).
    const std::string want =
        std::to_string(g[0]) + "," + std::to_string(g[1]) + "," + std::to_string(g[2]) + "," + std::to_string(g[3]);
    require(w1 == "transfer" && index == l && (version == 1 || w5 == "checksum"), file,
            ": the header's line for transfer ", l, " is malformed");
    require(t.lattice == want && t.comps == comps && t.nvec == q.nvec, file, ": transfer ", l, " in the file is 'lattice ",
            t.lattice, " components ", t.comps, " nvec ", t.nvec, "', the preconditioner's is 'lattice ", want,
            " components ", comps, " nvec ", q.nvec, "' (same lattice, aggregates and null-vector counts needed)");
    expected += static_cast<std::uint64_t>(t.nvec) * t.comps * sizeof(Complex<double>) * g[0] * g[1] * g[2] * g[3];
    for (int mu = 0; mu < 4; ++mu) g[mu] /= q.block[mu];
    comps = 2 * q.nvec;
  }
  require(size_text == std::to_string(expected), file, ": the file has ",
          size_text.empty() ? std::string("an unknown number of") : size_text, " bytes, its header describes ",
          expected, (size_text.empty() || std::stoull(size_text) < expected ? ": the file is truncated"
                                                                             : ": the file has trailing data"));
  prepare_fine_level();
  std::uint64_t offset = header_bytes;
  for (int l = 0; l + 1 < levels(); ++l) {
    Level& L = *levels_[l];
    const LevelParam& q = param_.level[l];
    const Stated& t = stated[l];
    SpinorParam vp = L.op->field_param();
    vp.precision = Precision::single;
    L.transfer = std::make_unique<Transfer>(L.op->lattice(), vp, q.block, q.nvec, l + 1, q.transfer_precision);
    const Lattice& lat = L.gather ? *L.gather->part() : *L.op->lattice();  // read as save() wrote
    const std::size_t site_bytes = t.comps * sizeof(Complex<double>);
    std::vector<Complex<double>> host(static_cast<std::size_t>(lat.volume()) * t.comps);
    std::uint32_t a = 0, b = 0;
    for (ColorSpinorField& v : L.transfer->vectors()) {
      const std::vector<unsigned char> bytes = read_sites(lat, file, offset, site_bytes);
      const auto sum = vector_checksum(lat, bytes, site_bytes);
      a ^= sum.first, b ^= sum.second;
      std::memcpy(host.data(), bytes.data(), bytes.size());
      bool finite = true;
      for (const Complex<double>& z : host) finite = finite && std::isfinite(z.re) && std::isfinite(z.im);
      collective_require(comm, finite, file + ": transfer " + std::to_string(l) +
                                                      ": a null vector holds numbers that are not finite");
      if (L.gather) {
        L.part_x->from_lexicographic(host);
        L.gather->gather(v, *L.part_x);
      } else {
        v.from_lexicographic(host);
      }
      offset += site_bytes * global_sites(lat);
    }
    if (version >= 2)
      require(gauge_io::hex32(a) == t.a && gauge_io::hex32(b) == t.b, file, ": checksum mismatch in transfer ", l,
              ": the header says ", t.a, " ", t.b, ", the data give ", gauge_io::hex32(a), " ", gauge_io::hex32(b),
              " (the file is corrupted)");
    if (progress)
      progress("level " + std::to_string(l) + ": loaded " + std::to_string(t.nvec) + " null vectors from " + file);
    build_level(l, progress);
  }
  synchronize(F.op->field_param().backend);
  setup_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace latke::mg
