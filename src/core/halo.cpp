// Halo exchange: buffers, MPI and the two-stream choreography (see halo.h).
#include "latke/core/halo.h"

#include <cstdlib>
#include <string>

#include "latke/core/error.h"

#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

namespace latke {

bool mpi_cuda_aware() {
  if (const char* v = std::getenv("LATKE_MPI_CUDA_AWARE")) return std::string(v) == "1";
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

HaloExchange::HaloExchange(const Lattice& lat, Backend backend, std::size_t site_bytes)
    : lat_(lat), backend_(backend) {
  cuda_aware_ = backend == Backend::cuda && mpi_cuda_aware();
  const bool staged = backend == Backend::cuda && !cuda_aware_;
  for (int mu = 0; mu < 4; ++mu) {
    if (!lat.partitioned(mu)) continue;
    face_bytes_[mu] = (static_cast<std::size_t>(lat.face_volume_cb(mu)) * site_bytes + 255) / 256 * 256;
    for (int s = 0; s < 2; ++s) {
      send_[mu][s] = Buffer(memory_for(backend), face_bytes_[mu]);
      if (staged) send_host_[mu][s] = Buffer(MemoryKind::pinned, face_bytes_[mu]);
      for (int k = 0; k < 2; ++k) {
        recv_[k][mu][s] = Buffer(memory_for(backend), face_bytes_[mu]);
        if (staged) recv_host_[k][mu][s] = Buffer(MemoryKind::pinned, face_bytes_[mu]);
      }
    }
  }
}

std::size_t HaloExchange::bytes_per_exchange() const {
  std::size_t b = 0;
  for (int mu = 0; mu < 4; ++mu) b += 2 * face_bytes_[mu];
  return b;
}

void HaloExchange::begin() {
  requests_.clear();
  const bool staged = backend_ == Backend::cuda && !cuda_aware_;
  set_ ^= 1;
  if (pending_[set_]) consumed_[set_].synchronize();  // this set's last readers are done
  pending_[set_] = false;
  for (int mu = 0; mu < 4; ++mu) {
    if (!lat_.partitioned(mu)) continue;
    for (int dir : {+1, -1}) {
      // From the rank ahead comes its side-0 face (tag 2mu); from behind its side-1 face.
      void* dst = staged ? recv_host_[set_][mu][dir > 0].data() : recv_[set_][mu][dir > 0].data();
      requests_.emplace_back();
      MPI_Irecv(dst, static_cast<int>(face_bytes_[mu]), MPI_BYTE, lat_.neighbour(mu, dir),
                2 * mu + (dir > 0 ? 0 : 1), lat_.comm(), &requests_.back());
    }
  }
  if (backend_ == Backend::cuda) {
    compute_ready_.record(compute_stream());
    compute_ready_.wait(comm_stream());
  }
}

void HaloExchange::finish() {
  const bool staged = backend_ == Backend::cuda && !cuda_aware_;
  if (staged)
    for (int mu = 0; mu < 4; ++mu)
      if (lat_.partitioned(mu))
        for (int s = 0; s < 2; ++s)
          copy_bytes(send_host_[mu][s].data(), send_[mu][s].data(), face_bytes_[mu], comm_stream());
  if (backend_ == Backend::cuda) synchronize(comm_stream());  // faces packed (and staged)
  for (int mu = 0; mu < 4; ++mu) {
    if (!lat_.partitioned(mu)) continue;
    for (int s = 0; s < 2; ++s) {
      void* src = staged ? send_host_[mu][s].data() : send_[mu][s].data();
      requests_.emplace_back();
      MPI_Isend(src, static_cast<int>(face_bytes_[mu]), MPI_BYTE, lat_.neighbour(mu, s == 0 ? -1 : +1),
                2 * mu + s, lat_.comm(), &requests_.back());
    }
  }
  const int rc = MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
  require(rc == MPI_SUCCESS, "halo exchange: MPI_Waitall failed with code ", rc);
  if (backend_ == Backend::cuda) {
    if (staged)
      for (int mu = 0; mu < 4; ++mu)
        if (lat_.partitioned(mu))
          for (int s = 0; s < 2; ++s)
            copy_bytes(recv_[set_][mu][s].data(), recv_host_[set_][mu][s].data(), face_bytes_[mu], comm_stream());
    ghosts_ready_.record(comm_stream());
    ghosts_ready_.wait(compute_stream());
  }
}

void HaloExchange::end() {
  if (backend_ != Backend::cuda) return;
  consumed_[set_].record(compute_stream());
  pending_[set_] = true;
}

}  // namespace latke
