// Halo exchange: buffers, the three ways a link moves (see halo.h), MPI and the two-stream
// choreography.
#include "src/core/halo.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

#include "src/core/environment.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/core/policy.h"
#include "src/core/tune.h"
#include "src/core/work_counters.h"

#ifdef LATKE_HAVE_CUDA
#include <cuda.h>  // stream memory operations' types; the functions come through the runtime
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

namespace {
bool profiling = false;
HaloProfile profile_sums;

/// One exchange of `bytes` sent finished after the host waited `us` in it (work_counters.h).
void count_wait(double us, std::size_t bytes) {
  WorkCounters& c = work_counters();
  ++c.exchanges;
  c.halo_seconds += us * 1e-6;
  c.halo_bytes += static_cast<double>(bytes);
}
}  // namespace

void set_halo_profiling(bool on) {
  profiling = on;
  if (on) profile_sums = HaloProfile{};
}

HaloProfile halo_profile() { return profile_sums; }

int exterior_pass_choice() {
  static const int choice = [] {
    const std::string v = env_choice("LATKE_DSLASH_EXTERIOR", {"auto", "whole", "partial", "overlap"});
    return v == "auto" ? -1 : v == "whole" ? 0 : v == "partial" ? 1 : 2;
  }();
  return choice;
}

namespace {
std::vector<std::pair<std::string, std::string>> policies_chosen;
}  // namespace

const std::vector<std::pair<std::string, std::string>>& chosen_policies() { return policies_chosen; }

int choose_policy(const Lattice& lat, const std::string& key, const std::vector<std::string>& names,
                  const std::function<double(int)>& time) {
  const int n = static_cast<int>(names.size());
  const int mine = tuning_enabled() ? tuned_block_size(key) - 1 : 0;  // stored as index + 1
  int lo = 0, hi = 0;
  MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, lat.comm());
  MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, lat.comm());
  int best = 0;
  if (lo == hi && lo >= 0 && lo < n) {
    best = lo;
  } else {
    double best_ms = 0;
    for (int i = 0; i < n; ++i) {
      const double ms = time(i);
      double worst = 0;
      MPI_Allreduce(&ms, &worst, 1, MPI_DOUBLE, MPI_MAX, lat.comm());
      if (i == 0 || worst < best_ms) best = i, best_ms = worst;
    }
    store_block_size(key, best + 1, best_ms);
  }
  policies_chosen.emplace_back(key, names[best]);
  return best;
}

std::array<int, 8> PolicyChoice::where(const Lattice& lat) {
  return {lat.local()[0], lat.local()[1], lat.local()[2], lat.local()[3],
          lat.grid()[0],  lat.grid()[1],  lat.grid()[2],  lat.grid()[3]};
}

int PolicyChoice::known(const Lattice& lat) const {
  const auto it = chosen_.find(where(lat));
  return it == chosen_.end() ? -1 : it->second;
}

int PolicyChoice::choose(const Lattice& lat, const std::function<std::string()>& key,
                         const std::vector<std::string>& names, const std::function<double(int)>& time) {
  const std::array<int, 8> where = PolicyChoice::where(lat);
  std::ostringstream k;
  k << key() << " local " << where[0] << "x" << where[1] << "x" << where[2] << "x" << where[3] << " grid " << where[4]
    << "x" << where[5] << "x" << where[6] << "x" << where[7];
  const int c = choose_policy(lat, k.str(), names, time);
  chosen_[where] = c;
  return c;
}

void* HaloExchange::scratch(std::size_t bytes) {
  if (scratch_.bytes() < bytes) {
    synchronize(backend_);  // the old scratch may still be read
    scratch_ = Buffer(memory_for(backend_), bytes);
  }
  return scratch_.data();
}

struct HaloExchange::Timing {
  Event begin, interior, packed, delivered, done;
};

#ifdef LATKE_HAVE_CUDA
namespace {
// cuStreamWaitValue32 / cuStreamWriteValue32 (v2), found through the runtime so that Latke
// does not link the driver library (hosts without a GPU load it without one).
using MemOp = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
struct MemOps {
  MemOp wait = nullptr, write = nullptr;
};
const MemOps& mem_ops() {
  static const MemOps ops = [] {
    MemOps o;
    auto find = [](const char* name) -> MemOp {
      void* f = nullptr;
      cudaDriverEntryPointQueryResult q{};
      if (cudaGetDriverEntryPointByVersion(name, &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
          q != cudaDriverEntryPointSuccess) {
        cudaGetLastError();
        return nullptr;
      }
      return reinterpret_cast<MemOp>(f);
    };
    o.wait = find("cuStreamWaitValue32");
    o.write = find("cuStreamWriteValue32");
    return o;
  }();
  return ops;
}
/// The stream waits until the 32-bit flag at addr has reached v (wrap-around safe).
void stream_wait(Stream s, const void* addr, unsigned v) {
  const CUresult r = mem_ops().wait(static_cast<CUstream>(s.handle), reinterpret_cast<CUdeviceptr>(addr), v,
                                    CU_STREAM_WAIT_VALUE_GEQ);
  require(r == CUDA_SUCCESS, "halo exchange: cuStreamWaitValue32 failed (CUresult ", static_cast<int>(r), ")");
}
/// The stream writes v to the flag at addr after a fence on its earlier work (its faces).
void stream_write(Stream s, void* addr, unsigned v) {
  const CUresult r = mem_ops().write(static_cast<CUstream>(s.handle), reinterpret_cast<CUdeviceptr>(addr), v,
                                     CU_STREAM_WRITE_VALUE_DEFAULT);
  require(r == CUDA_SUCCESS, "halo exchange: cuStreamWriteValue32 failed (CUresult ", static_cast<int>(r), ")");
}
unsigned* flag(const Buffer& b, int set) { return static_cast<unsigned*>(b.data()) + set; }
unsigned* flag(void* p, int set) { return static_cast<unsigned*>(p) + set; }
}  // namespace
#endif

bool mpi_cuda_aware() {
  if (const char* v = std::getenv("LATKE_MPI_CUDA_AWARE")) return std::string(v) == "1";
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

namespace {
std::array<std::size_t, 4> site_faces(const Lattice& lat, std::size_t site_bytes, int depth) {
  require(depth >= 1, "halo depth ", depth, ": expected a positive number of slices");
  std::array<std::size_t, 4> b{};
  for (int mu = 0; mu < 4; ++mu) {
    if (!lat.partitioned(mu)) continue;
    require(depth <= lat.local()[mu], "halo depth ", depth, " in dimension ", mu, ": the local extent is only ",
            lat.local()[mu]);
    b[mu] = static_cast<std::size_t>(depth) * lat.face_volume_cb(mu) * site_bytes;
  }
  return b;
}
}  // namespace

HaloExchange::HaloExchange(const Lattice& lat, Backend backend, std::size_t site_bytes, int depth)
    : HaloExchange(lat, backend, site_faces(lat, site_bytes, depth)) {}

HaloExchange::HaloExchange(const Lattice& lat, Backend backend, const std::array<std::size_t, 4>& face_bytes)
    : lat_(lat), backend_(backend) {
  cuda_aware_ = backend == Backend::cuda && mpi_cuda_aware();
  const bool staged = backend == Backend::cuda && !cuda_aware_;
  for (int mu = 0; mu < 4; ++mu) {
    if (!lat.partitioned(mu) || face_bytes[mu] == 0) continue;  // not exchanged (active)
    face_bytes_[mu] = (face_bytes[mu] + 255) / 256 * 256;
    require(face_bytes_[mu] <= static_cast<std::size_t>(INT_MAX), "halo exchange: a face of ", face_bytes_[mu],
            " bytes in dimension ", mu, " is more than one MPI message carries (", INT_MAX,
            "); use more ranks in the other dimensions");
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
    if (!active(mu)) continue;
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
  setup_device_signals();
  if (!device_signals_) setup_ipc_events();
#endif
}

void HaloExchange::setup_ipc_events() {
#ifdef LATKE_HAVE_CUDA
  const char* v = std::getenv("LATKE_HALO_SIGNAL");
  // Opt-in: on H100 NVLink it took the host out of the exchange but the faces arrived no sooner
  // (docs/multi-gpu.md). Both ends of a link must signal the same way: agreed over every rank.
  int mine = v && std::string(v) == "event", all = 0, links = 0;
  for (int mu = 0; mu < 4; ++mu)
    for (int s = 0; s < 2; ++s) links += p2p_out_[mu][s] + p2p_in_[mu][s];
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, lat_.comm());
  if (!all || links == 0) return;
  ipc_events_ = true;
  std::vector<cudaIpcEventHandle_t> mine_h(8), theirs_h(8);
  std::vector<MPI_Request> req;
  for (int mu = 0; mu < 4; ++mu)
    for (int s = 0; s < 2; ++s) {
      if (p2p_out_[mu][s]) {
        cudaEvent_t e = nullptr;
        LATKE_CUDA_CALL(cudaEventCreateWithFlags(&e, cudaEventDisableTiming | cudaEventInterprocess));
        ipc_sent_[mu][s] = e;
        LATKE_CUDA_CALL(cudaIpcGetEventHandle(&mine_h[2 * mu + s], e));
        req.emplace_back();
        MPI_Isend(&mine_h[2 * mu + s], sizeof(cudaIpcEventHandle_t), MPI_BYTE, peer_of(lat_, mu, s), 800 + 2 * mu + s,
                  lat_.comm(), &req.back());
      }
      const int d = s;  // incoming link from ahead (1) or behind (0)
      if (p2p_in_[mu][d]) {
        req.emplace_back();
        MPI_Irecv(&theirs_h[2 * mu + d], sizeof(cudaIpcEventHandle_t), MPI_BYTE, lat_.neighbour(mu, d ? +1 : -1),
                  800 + 2 * mu + sender_side(d), lat_.comm(), &req.back());
      }
    }
  MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE);
  for (int mu = 0; mu < 4; ++mu)
    for (int d = 0; d < 2; ++d)
      if (p2p_in_[mu][d]) {
        cudaEvent_t e = nullptr;
        LATKE_CUDA_CALL(cudaIpcOpenEventHandle(&e, theirs_h[2 * mu + d]));
        ipc_arrived_[mu][d] = e;
      }
#endif
}

void HaloExchange::setup_device_signals() {
#ifdef LATKE_HAVE_CUDA
  // Every rank must choose the same way, so the choice is agreed over all of them.
  const char* v = std::getenv("LATKE_HALO_SIGNAL");
  const std::string how = v ? v : "host";
  require(how == "device" || how == "device-pack" || how == "host" || how == "event", "LATKE_HALO_SIGNAL '", how,
          "': expected event, host, device or device-pack");
  // Opt-in (docs/multi-gpu.md has the measurements).
  int mine = (how == "device" || how == "device-pack") && mem_ops().wait && mem_ops().write, all = 0, links = 0;
  for (int mu = 0; mu < 4; ++mu)
    for (int s = 0; s < 2; ++s)
      if (active(mu)) {
        ++links;
        mine &= p2p_out_[mu][s] && p2p_in_[mu][s];
      }
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, lat_.comm());
  if (!all || links == 0) return;
  for (int mu = 0; mu < 4; ++mu)
    for (int s = 0; s < 2; ++s)
      if (active(mu)) {
        sig_in_[mu][s] = Buffer(MemoryKind::device, 256);
        sig_out_[mu][s] = Buffer(MemoryKind::device, 256);
        zero_bytes(sig_in_[mu][s].data(), 256, MemoryKind::device, compute_stream());
        zero_bytes(sig_out_[mu][s].data(), 256, MemoryKind::device, compute_stream());
      }
  synchronize(compute_stream());
  // The writer of my "delivered" flags on incoming link (mu, d) is that link's sender; the
  // writer of my "free" flag on outgoing link (mu, s) is that link's receiver.
  std::vector<cudaIpcMemHandle_t> mine_h(16), theirs_h(16);
  std::vector<MPI_Request> req;
  for (int mu = 0; mu < 4; ++mu) {
    if (!active(mu)) continue;
    for (int d = 0; d < 2; ++d) {
      LATKE_CUDA_CALL(cudaIpcGetMemHandle(&mine_h[2 * mu + d], sig_in_[mu][d].data()));
      req.emplace_back();
      MPI_Isend(&mine_h[2 * mu + d], sizeof(cudaIpcMemHandle_t), MPI_BYTE, lat_.neighbour(mu, d ? +1 : -1),
                600 + 2 * mu + sender_side(d), lat_.comm(), &req.back());
      req.emplace_back();
      MPI_Irecv(&theirs_h[2 * mu + d], sizeof(cudaIpcMemHandle_t), MPI_BYTE, peer_of(lat_, mu, d), 600 + 2 * mu + d,
                lat_.comm(), &req.back());
      LATKE_CUDA_CALL(cudaIpcGetMemHandle(&mine_h[8 + 2 * mu + d], sig_out_[mu][d].data()));
      req.emplace_back();
      MPI_Isend(&mine_h[8 + 2 * mu + d], sizeof(cudaIpcMemHandle_t), MPI_BYTE, peer_of(lat_, mu, d), 700 + 2 * mu + d,
                lat_.comm(), &req.back());
      req.emplace_back();
      MPI_Irecv(&theirs_h[8 + 2 * mu + d], sizeof(cudaIpcMemHandle_t), MPI_BYTE, lat_.neighbour(mu, d ? +1 : -1),
                700 + 2 * mu + sender_side(d), lat_.comm(), &req.back());
    }
  }
  MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE);
  for (int mu = 0; mu < 4; ++mu) {
    if (!active(mu)) continue;
    for (int d = 0; d < 2; ++d) {
      // theirs_h[2mu + s]: the "delivered" flags of the receiver of my outgoing face (mu, s);
      // theirs_h[8 + 2mu + d]: the "free" flag of the sender of my incoming face (mu, d).
      LATKE_CUDA_CALL(
          cudaIpcOpenMemHandle(&remote_sig_in_[mu][d], theirs_h[2 * mu + d], cudaIpcMemLazyEnablePeerAccess));
      LATKE_CUDA_CALL(
          cudaIpcOpenMemHandle(&remote_sig_out_[mu][d], theirs_h[8 + 2 * mu + d], cudaIpcMemLazyEnablePeerAccess));
    }
  }
  device_signals_ = true;
  pack_remote_ = how == "device-pack";
#endif
}

HaloExchange::~HaloExchange() {
  timing_.reset();
#ifdef LATKE_HAVE_CUDA
  if (device_signals_ || ipc_events_) cudaDeviceSynchronize();  // no flag or event wait of this exchange still queued
  for (auto* events : {&ipc_sent_, &ipc_arrived_})
    for (auto& dim : *events)
      for (void* e : dim)
        if (e) cudaEventDestroy(static_cast<cudaEvent_t>(e));
  for (auto& dim : remote_sig_in_)
    for (void* p : dim)
      if (p) cudaIpcCloseMemHandle(p);
  for (auto& dim : remote_sig_out_)
    for (void* p : dim)
      if (p) cudaIpcCloseMemHandle(p);
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
      if (active(mu)) {
        ++links;
        p2p += p2p_out_[mu][s];
      }
  std::ostringstream o;
  if (links == 0) return "none (nothing split)";
  if (backend_ == Backend::cpu) return "MPI on host memory";
  if (device_signals_)
    o << "peer-to-peer " << p2p << "/" << links << " links, "
      << (pack_remote_ ? "faces packed into the neighbours' buffers" : "copy-engine copies") << ", signalled on the device";
  else if (p2p)
    o << "peer-to-peer " << p2p << "/" << links << " links, "
      << (ipc_events_ ? "signalled by CUDA IPC events" : "signalled through the host");
  if (p2p < links) o << (p2p ? ", rest " : "") << (cuda_aware_ ? "CUDA-aware MPI" : "staged through pinned host memory");
  o << (comm_stream_prioritized() ? "; halo stream at high priority" : "; halo stream at default priority");
  const int ext = exterior_pass_choice();
  o << (ext < 0    ? "; exterior pass: autotuned"
        : ext == 1 ? "; exterior pass: face hops"
        : ext == 2 ? "; exterior pass: whole boundary sites, on the halo stream"
                   : "; exterior pass: whole boundary sites");
  return o.str();
}

void HaloExchange::begin(bool exterior_on_comm, bool after_compute) {
  exterior_on_comm_ = exterior_on_comm && backend_ == Backend::cuda;
#ifdef LATKE_HAVE_CUDA
  if (device_signals_) {
    ++seq_;
    set_ = static_cast<int>(seq_ & 1);
    if (after_compute) {
      compute_ready_.record(compute_stream());
      compute_ready_.wait(comm_stream());
    }
    // The neighbours have read this set's faces of the exchange before last (before the pack
    // writes into their buffers; copies wait in finish(), so that the pack need not).
    if (seq_ > 2 && pack_remote_)
      for (int mu = 0; mu < 4; ++mu)
        for (int s = 0; s < 2; ++s)
          if (active(mu)) stream_wait(comm_stream(), flag(sig_out_[mu][s], 0), seq_ - 2);
    if (profiling) {
      if (!timing_) timing_ = std::make_unique<Timing>();
      timing_->begin.record(compute_stream());
    }
    return;
  }
#endif
  requests_.clear();
  ready_.clear();
  const bool staging = backend_ == Backend::cuda && !cuda_aware_;
  set_ ^= 1;
  if (pending_[set_]) consumed_[set_].synchronize();  // this set's last readers are done
  pending_[set_] = false;
  for (int mu = 0; mu < 4; ++mu) {
    if (!active(mu)) continue;
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
    if (after_compute) {
      compute_ready_.record(compute_stream());
      compute_ready_.wait(comm_stream());
    }
    if (profiling) {
      if (!timing_) timing_ = std::make_unique<Timing>();
      timing_->begin.record(compute_stream());
    }
  }
}

void HaloExchange::finish() {
  const LogScope log(LogEvent::halo, 0, false);
  const bool staging = backend_ == Backend::cuda && !cuda_aware_;
  const bool timed = profiling && timing_ && backend_ == Backend::cuda;
  const auto t0 = std::chrono::steady_clock::now();
  if (timed) {
    timing_->interior.record(compute_stream());  // the interior kernel was the last launched there
    timing_->packed.record(comm_stream());
  }
#ifdef LATKE_HAVE_CUDA
  if (device_signals_) {
    for (int mu = 0; mu < 4; ++mu)
      for (int s = 0; s < 2; ++s)
        if (active(mu) && !pack_remote_) {
          if (seq_ > 2) stream_wait(comm_stream(), flag(sig_out_[mu][s], 0), seq_ - 2);
          copy_bytes(remote_[set_][mu][s], send_[mu][s].data(), face_bytes_[mu], comm_stream());
        }
    for (int mu = 0; mu < 4; ++mu)
      for (int s = 0; s < 2; ++s)
        if (active(mu)) stream_write(comm_stream(), flag(remote_sig_in_[mu][s], set_), seq_);
    if (!exterior_on_comm_) {  // my faces are read and sent: the input may change after
      ghosts_ready_.record(comm_stream());
      ghosts_ready_.wait(compute_stream());
    }
    for (int mu = 0; mu < 4; ++mu)
      for (int d = 0; d < 2; ++d)
        if (active(mu)) stream_wait(exterior_stream(), flag(sig_in_[mu][d], set_), seq_);
    if (timed) timing_->delivered.record(exterior_stream());
    finish_host_us_ = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    count_wait(finish_host_us_, bytes_sent());
    return;
  }
#endif
  for (int mu = 0; mu < 4; ++mu)
    if (active(mu))
      for (int s = 0; s < 2; ++s)
        if (staging && !p2p_out_[mu][s])
          copy_bytes(send_host_[mu][s].data(), send_[mu][s].data(), face_bytes_[mu], comm_stream());
  if (!ready_.empty()) {  // peers' buffers are free: write the faces into them
    MPI_Waitall(static_cast<int>(ready_.size()), ready_.data(), MPI_STATUSES_IGNORE);
    for (int mu = 0; mu < 4; ++mu)
      for (int s = 0; s < 2; ++s)
        if (p2p_out_[mu][s]) copy_bytes(remote_[set_][mu][s], send_[mu][s].data(), face_bytes_[mu], comm_stream());
  }
  bool host_waits = backend_ == Backend::cuda;  // for the faces packed, staged or delivered
#ifdef LATKE_HAVE_CUDA
  if (ipc_events_) {  // the peer links' receivers wait for the copies on the device
    host_waits = false;
    for (int mu = 0; mu < 4; ++mu)
      for (int s = 0; s < 2; ++s)
        if (active(mu)) {
          if (p2p_out_[mu][s])
            LATKE_CUDA_CALL(cudaEventRecord(static_cast<cudaEvent_t>(ipc_sent_[mu][s]),
                                            static_cast<cudaStream_t>(comm_stream().handle)));
          else
            host_waits = true;  // MPI reads the faces from memory: they must be there
        }
  }
#endif
  if (host_waits) synchronize(comm_stream());
  for (int mu = 0; mu < 4; ++mu) {
    if (!active(mu)) continue;
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
#ifdef LATKE_HAVE_CUDA
    if (ipc_events_)  // each peer's copy into my buffers, on the device ("delivered" said it was queued)
      for (int mu = 0; mu < 4; ++mu)
        for (int d = 0; d < 2; ++d)
          if (active(mu) && p2p_in_[mu][d])
            LATKE_CUDA_CALL(cudaStreamWaitEvent(static_cast<cudaStream_t>(comm_stream().handle),
                                                static_cast<cudaEvent_t>(ipc_arrived_[mu][d]), 0));
#endif
    if (staging)
      for (int mu = 0; mu < 4; ++mu)
        if (active(mu))
          for (int d = 0; d < 2; ++d)
            if (!p2p_in_[mu][d])
              copy_bytes(recv_[set_][mu][d].data(), recv_host_[set_][mu][d].data(), face_bytes_[mu], comm_stream());
    if (!exterior_on_comm_) {
      ghosts_ready_.record(comm_stream());
      ghosts_ready_.wait(compute_stream());
    }
    if (timed) timing_->delivered.record(comm_stream());
  }
  finish_host_us_ = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  count_wait(finish_host_us_, bytes_sent());
}

void HaloExchange::end() {
  if (backend_ != Backend::cuda) return;
  if (exterior_on_comm_) {  // the boundary pass (and the faces' sending) done before what follows
    exterior_done_.record(comm_stream());
    exterior_done_.wait(compute_stream());
  }
#ifdef LATKE_HAVE_CUDA
  if (device_signals_) {  // the exterior has read the faces: the senders may write this set again
    for (int mu = 0; mu < 4; ++mu)
      for (int d = 0; d < 2; ++d)
        if (active(mu)) stream_write(compute_stream(), flag(remote_sig_out_[mu][d], 0), seq_);
  } else
#endif
  {
    consumed_[set_].record(compute_stream());
    pending_[set_] = true;
  }
  if (profiling && timing_) {
    Timing& e = *timing_;
    e.done.record(compute_stream());
    const double interior = 1e3 * Event::elapsed_ms(e.begin, e.interior);
    const double delivered = 1e3 * Event::elapsed_ms(e.begin, e.delivered);
    const double done = 1e3 * Event::elapsed_ms(e.begin, e.done);
    HaloProfile& s = profile_sums;
    ++s.exchanges;
    s.interior_us += interior;
    s.packed_us += 1e3 * Event::elapsed_ms(e.begin, e.packed);
    s.delivered_us += delivered;
    s.done_us += done;
    s.exterior_us += done - std::max(interior, delivered);
    s.host_finish_us += finish_host_us_;
  }
}

}  // namespace latke
