// Thermalized quenched configurations for tests and demonstrations, cached as NERSC files
// (gauge_generator.h).
#include <mpi.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "src/core/error.h"
#include "src/core/output_files.h"
#include "src/fields/gauge_generator.h"
#include "src/fields/gauge_io.h"

namespace latke {

std::string thermalized_cache_name(const Coords& dims, const HeatbathParam& param, int sweeps, Backend b) {
  // The backend too: the CPU and the CUDA generator draw the same distribution, not the same
  // links.
  std::ostringstream s;
  s << "quenched_" << dims[0] << "x" << dims[1] << "x" << dims[2] << "x" << dims[3] << "_b" << param.beta << "_or"
    << param.overrelax << "_s" << param.seed << "_n" << sweeps << "_" << to_string(b) << ".nersc";
  return s.str();
}

std::vector<Complex<double>> thermalized_configuration(std::shared_ptr<const Lattice> lattice, Backend b,
                                                       const HeatbathParam& param, int sweeps,
                                                       const std::string& cache_dir, bool* loaded,
                                                       const std::function<void(int, int)>& progress) {
  require(sweeps >= 0, "thermalization sweeps ", sweeps, ": expected 0 or more");
  const std::string path =
      cache_dir.empty() ? "" : cache_dir + "/" + thermalized_cache_name(lattice->global(), param, sweeps, b);
  int exists = 0;
  if (!path.empty() && lattice->rank() == 0) exists = std::ifstream(path).good() ? 1 : 0;
  MPI_Bcast(&exists, 1, MPI_INT, 0, lattice->comm());
  if (loaded) *loaded = exists != 0;
  if (exists) return read_gauge(*lattice, path, nullptr, b);
  // Before the sweeps: a cache that cannot take the configuration is found now.
  if (!path.empty()) require_writable(lattice->comm(), path, "the gauge cache's file");
  QuenchedGenerator gen(lattice, b, param);
  gen.start(GaugeStart::hot);
  const int chunk = progress ? std::max(1, (sweeps + 9) / 10) : std::max(1, sweeps);
  for (int done = 0; done < sweeps;) {  // sweep(a) then sweep(b) is sweep(a + b)
    const int n = std::min(chunk, sweeps - done);
    gen.sweep(n);
    done += n;
    if (progress) progress(done, sweeps);
  }
  std::vector<Complex<double>> links = gen.links();
  if (!path.empty()) {
    GaugeWriteParam w;
    std::ostringstream label;
    label << "quenched Wilson beta=" << param.beta << " overrelax=" << param.overrelax << " seed=" << param.seed
          << " sweeps=" << sweeps;
    w.ensemble_label = label.str();
    w.sequence_number = gen.heatbath_passes();
    write_gauge(*lattice, links, path, w, b);
  }
  return links;
}

}  // namespace latke
