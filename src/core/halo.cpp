// Halo exchange: buffers, the three ways a link moves (see halo.h), MPI and the two-stream
// choreography.
#include "src/core/halo.h"

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

#include "src/core/error.h"
#include "src/core/log.h"

#ifdef LATKE_HAVE_CUDA
#include <cuda_runtime.h>
#endif
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

namespace latke {

namespace {
// MPI tags: face data 2mu+side (side of the sender's face), "buffer free" and "face
// delivered" signals of peer-to-peer links offset from it.
constexpr int tag_ready = 100, tag_done = 200;
int sender_side(int from_ahead) { return from_ahead ? 0 : 1; }  // which face of the sender
int peer_of(const Lattice& lat, int mu, int side) { return lat.neighbour(mu, side == 0 ? -1 : +1); }
}  // namespace

bool mpi_cuda_aware() {
  if (const char* v = std::getenv("LATKE_MPI_CUDA_AWARE")) return std::string(v) == "1";
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

HaloExchange::HaloExchange(const Lattice& lat, Backend backend, std::size_t site_bytes, int depth)
    : lat_(lat), backend_(backend) {
  require(depth >= 1, "halo depth ", depth, ": expected a positive number of slices");
  cuda_aware_ = backend == Backend::cuda && mpi_cuda_aware();
  const bool staged = backend == Backend::cuda && !cuda_aware_;
  for (int mu = 0; mu < 4; ++mu) {
    if (!lat.partitioned(mu)) continue;
    require(depth <= lat.local()[mu], "halo depth ", depth, " in dimension ", mu, ": the local extent is only ",
            lat.local()[mu]);
    face_bytes_[mu] = (static_cast<std::size_t>(depth) * lat.face_volume_cb(mu) * site_bytes + 255) / 256 * 256;
    for (int s = 0; s < 2; ++s) {
      send_[mu][s] = Buffer(memory_for(backend), face_bytes_[mu]);
      if (staged) send_host_[mu][s] = Buffer(MemoryKind::pinned, face_bytes_[mu]);
      for (int k = 0; k < 2; ++k) {
        recv_[k][mu][s] = Buffer(memory_for(backend), face_bytes_[mu]);
        if (staged) recv_host_[k][mu][s] = Buffer(MemoryKind::pinned, face_bytes_[mu]);
      }
    }
  }
  if (backend == Backend::cuda) setup_peer_to_peer();
}

void HaloExchange::setup_peer_to_peer() {
#ifdef LATKE_HAVE_CUDA
  if (const char* v = std::getenv("LATKE_P2P"); v && std::string(v) == "0") return;
  // Who is where: host name and the PCI address of each rank's device.
  struct Where {
    char host[MPI_MAX_PROCESSOR_NAME];
    char bus[32];
  } me{}, *all = nullptr;
  int len = 0;
  MPI_Get_processor_name(me.host, &len);
  int dev = 0;
  LATKE_CUDA_CALL(cudaGetDevice(&dev));
  LATKE_CUDA_CALL(cudaDeviceGetPCIBusId(me.bus, sizeof(me.bus), dev));
  std::vector<Where> where(lat_.size());
  all = where.data();
  MPI_Allgather(&me, sizeof(Where), MPI_BYTE, all, sizeof(Where), MPI_BYTE, lat_.comm());
  auto reachable = [&](int rank) {
    if (std::strcmp(all[rank].host, me.host) != 0) return false;
    int other = -1;
    if (cudaDeviceGetByPCIBusId(&other, all[rank].bus) != cudaSuccess) {
      cudaGetLastError();
      return false;  // not visible from this process
    }
    if (other == dev) return true;
    int a = 0, b = 0;
    cudaDeviceCanAccessPeer(&a, dev, other);
    cudaDeviceCanAccessPeer(&b, other, dev);
    return a && b;
  };
  // Both ends of a link tell each other what they see and take the AND, so they agree even
  // where devices are visible differently to different ranks.
  int out_view[4][2] = {}, in_view[4][2] = {}, out_peer[4][2] = {}, in_peer[4][2] = {};
  std::vector<MPI_Request> agree;
  for (int mu = 0; mu < 4; ++mu) {
    if (!lat_.partitioned(mu)) continue;
    for (int s = 0; s < 2; ++s) {
      out_view[mu][s] = reachable(peer_of(lat_, mu, s));
      const int d = s;  // incoming link from ahead (1) or behind (0)
      const int from = lat_.neighbour(mu, d ? +1 : -1);
      in_view[mu][d] = reachable(from);
      agree.resize(agree.size() + 4);
      MPI_Request* r = &agree[agree.size() - 4];
      MPI_Isend(&out_view[mu][s], 1, MPI_INT, peer_of(lat_, mu, s), 400 + 2 * mu + s, lat_.comm(), r);
      MPI_Irecv(&out_peer[mu][s], 1, MPI_INT, peer_of(lat_, mu, s), 500 + 2 * mu + s, lat_.comm(), r + 1);
      MPI_Isend(&in_view[mu][d], 1, MPI_INT, from, 500 + 2 * mu + sender_side(d), lat_.comm(), r + 2);
      MPI_Irecv(&in_peer[mu][d], 1, MPI_INT, from, 400 + 2 * mu + sender_side(d), lat_.comm(), r + 3);
    }
  }
  MPI_Waitall(static_cast<int>(agree.size()), agree.data(), MPI_STATUSES_IGNORE);
  for (int mu = 0; mu < 4; ++mu)
    for (int s = 0; s < 2; ++s) {
      p2p_out_[mu][s] = out_view[mu][s] && out_peer[mu][s];
      p2p_in_[mu][s] = in_view[mu][s] && in_peer[mu][s];
    }
  // Hand the writers the IPC handles of the receive buffers they will write.
  std::vector<cudaIpcMemHandle_t> mine(32), theirs(32);
  std::vector<MPI_Request> req;
  for (int mu = 0; mu < 4; ++mu)
    for (int d = 0; d < 2; ++d)
      for (int k = 0; k < 2; ++k) {
        const int slot = (mu * 2 + d) * 2 + k;
        if (p2p_in_[mu][d]) {
          LATKE_CUDA_CALL(cudaIpcGetMemHandle(&mine[slot], recv_[k][mu][d].data()));
          req.emplace_back();
          MPI_Isend(&mine[slot], sizeof(cudaIpcMemHandle_t), MPI_BYTE, lat_.neighbour(mu, d ? +1 : -1),
                    300 + (2 * mu + sender_side(d)) * 2 + k, lat_.comm(), &req.back());
        }
        const int side = d;  // outgoing face `side` lands in the peer's buffer "from the other way"
        if (p2p_out_[mu][side]) {
          req.emplace_back();
          MPI_Irecv(&theirs[slot], sizeof(cudaIpcMemHandle_t), MPI_BYTE, peer_of(lat_, mu, side),
                    300 + (2 * mu + side) * 2 + k, lat_.comm(), &req.back());
        }
      }
  MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE);
  for (int mu = 0; mu < 4; ++mu)
    for (int side = 0; side < 2; ++side)
      if (p2p_out_[mu][side])
        for (int k = 0; k < 2; ++k)
          LATKE_CUDA_CALL(cudaIpcOpenMemHandle(&remote_[k][mu][side], theirs[(mu * 2 + side) * 2 + k],
                                               cudaIpcMemLazyEnablePeerAccess));
#endif
}

HaloExchange::~HaloExchange() {
#ifdef LATKE_HAVE_CUDA
  for (auto& set : remote_)
    for (auto& dim : set)
      for (void* p : dim)
        if (p) cudaIpcCloseMemHandle(p);
#endif
}

std::size_t HaloExchange::bytes_per_exchange() const {
  std::size_t b = 0;
  for (int mu = 0; mu < 4; ++mu) b += 2 * face_bytes_[mu];
  return b;
}

std::string HaloExchange::describe() const {
  int links = 0, p2p = 0;
  for (int mu = 0; mu < 4; ++mu)
    for (int s = 0; s < 2; ++s)
      if (lat_.partitioned(mu)) {
        ++links;
        p2p += p2p_out_[mu][s];
      }
  std::ostringstream o;
  if (links == 0) return "none (nothing split)";
  if (backend_ == Backend::cpu) return "MPI on host memory";
  if (p2p) o << "peer-to-peer " << p2p << "/" << links << " links";
  if (p2p < links) o << (p2p ? ", rest " : "") << (cuda_aware_ ? "CUDA-aware MPI" : "staged through pinned host memory");
  return o.str();
}

void HaloExchange::begin() {
  requests_.clear();
  ready_.clear();
  const bool staging = backend_ == Backend::cuda && !cuda_aware_;
  set_ ^= 1;
  if (pending_[set_]) consumed_[set_].synchronize();  // this set's last readers are done
  pending_[set_] = false;
  for (int mu = 0; mu < 4; ++mu) {
    if (!lat_.partitioned(mu)) continue;
    for (int d = 0; d < 2; ++d) {
      const int from = lat_.neighbour(mu, d ? +1 : -1), tag = 2 * mu + sender_side(d);
      requests_.emplace_back();
      if (p2p_in_[mu][d]) {  // tell the writer this set is free; expect its "delivered"
        MPI_Isend(nullptr, 0, MPI_BYTE, from, tag_ready + tag, lat_.comm(), &requests_.back());
        requests_.emplace_back();
        MPI_Irecv(nullptr, 0, MPI_BYTE, from, tag_done + tag, lat_.comm(), &requests_.back());
      } else {
        void* dst = staging ? recv_host_[set_][mu][d].data() : recv_[set_][mu][d].data();
        MPI_Irecv(dst, static_cast<int>(face_bytes_[mu]), MPI_BYTE, from, tag, lat_.comm(), &requests_.back());
      }
    }
    for (int s = 0; s < 2; ++s)
      if (p2p_out_[mu][s]) {
        ready_.emplace_back();
        MPI_Irecv(nullptr, 0, MPI_BYTE, peer_of(lat_, mu, s), tag_ready + 2 * mu + s, lat_.comm(), &ready_.back());
      }
  }
  if (backend_ == Backend::cuda) {
    compute_ready_.record(compute_stream());
    compute_ready_.wait(comm_stream());
  }
}

void HaloExchange::finish() {
  const LogScope log(LogEvent::halo, 0, false);
  const bool staging = backend_ == Backend::cuda && !cuda_aware_;
  for (int mu = 0; mu < 4; ++mu)
    if (lat_.partitioned(mu))
      for (int s = 0; s < 2; ++s)
        if (staging && !p2p_out_[mu][s])
          copy_bytes(send_host_[mu][s].data(), send_[mu][s].data(), face_bytes_[mu], comm_stream());
  if (!ready_.empty()) {  // peers' buffers are free: write the faces into them
    MPI_Waitall(static_cast<int>(ready_.size()), ready_.data(), MPI_STATUSES_IGNORE);
    for (int mu = 0; mu < 4; ++mu)
      for (int s = 0; s < 2; ++s)
        if (p2p_out_[mu][s]) copy_bytes(remote_[set_][mu][s], send_[mu][s].data(), face_bytes_[mu], comm_stream());
  }
  if (backend_ == Backend::cuda) synchronize(comm_stream());  // faces packed, staged or delivered
  for (int mu = 0; mu < 4; ++mu) {
    if (!lat_.partitioned(mu)) continue;
    for (int s = 0; s < 2; ++s) {
      requests_.emplace_back();
      if (p2p_out_[mu][s]) {
        MPI_Isend(nullptr, 0, MPI_BYTE, peer_of(lat_, mu, s), tag_done + 2 * mu + s, lat_.comm(), &requests_.back());
      } else {
        void* src = staging ? send_host_[mu][s].data() : send_[mu][s].data();
        MPI_Isend(src, static_cast<int>(face_bytes_[mu]), MPI_BYTE, peer_of(lat_, mu, s), 2 * mu + s, lat_.comm(),
                  &requests_.back());
      }
    }
  }
  const int rc = MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
  require(rc == MPI_SUCCESS, "halo exchange: MPI_Waitall failed with code ", rc);
  if (backend_ == Backend::cuda) {
    if (staging)
      for (int mu = 0; mu < 4; ++mu)
        if (lat_.partitioned(mu))
          for (int d = 0; d < 2; ++d)
            if (!p2p_in_[mu][d])
              copy_bytes(recv_[set_][mu][d].data(), recv_host_[set_][mu][d].data(), face_bytes_[mu], comm_stream());
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
