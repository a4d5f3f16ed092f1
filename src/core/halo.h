// Halo exchange of face data between neighbouring ranks, overlapped with computation.
// For each partitioned dimension mu a rank sends two faces (its x_mu = 0 face to the rank
// behind, its x_mu = L_mu - 1 face to the rank ahead) and receives the two matching ones; a
// face is `depth` slices deep (1 for Wilson; 3 for the staggered Naik term: x_mu = 0..2 and
// L_mu-3..L_mu-1). What a face site carries is the operator's business (Wilson: a spin-
// projected half-spinor; staggered: a color vector); this class owns the buffers and moves
// them, per link the fastest way there is:
//   peer-to-peer  neighbour's GPU on the same node: the sender copies its face straight into
//                 the receiver's buffer (CUDA IPC, NVLink where there is one); MPI carries
//                 only zero-byte "buffer free" and "face delivered" messages
//   CUDA-aware    MPI moves device buffers itself
//   staged        device -> pinned host -> MPI -> pinned host -> device
// with non-blocking MPI and the stream/event choreography
//   begin(): post receives, make the comm stream wait for the compute stream
//   [operator packs faces on the comm stream, then runs interior work on the compute stream]
//   finish(): send, wait, upload, make the compute stream wait for the ghosts
//   [operator runs the boundary work on the compute stream]
//   end(): mark the received faces as consumed once that work is done
// Received faces alternate between two buffer sets: an exchange may not receive into a set
// whose faces the boundary kernel of the exchange before may still be reading (nor into a
// pinned buffer whose upload is still in flight), and with two sets the wait in begin() is
// for the exchange before last, which has long finished.
#pragma once

#include <array>
#include <string>
#include <vector>

#include <mpi.h>

#include "src/core/backend.h"
#include "src/core/lattice.h"
#include "src/core/memory.h"

namespace latke {

/// @brief Whether MPI can take device pointers (OpenMPI's query, or LATKE_MPI_CUDA_AWARE=0/1).
bool mpi_cuda_aware();

class HaloExchange {
 public:
  /// @param site_bytes bytes per face site of payload; layout within a face is the caller's.
  /// @param depth slices per face: each face holds depth x face_volume_cb(mu) sites.
  HaloExchange(const Lattice& lat, Backend backend, std::size_t site_bytes, int depth = 1);
  ~HaloExchange();
  HaloExchange(const HaloExchange&) = delete;
  HaloExchange& operator=(const HaloExchange&) = delete;

  /// Face region that rank sends in dimension mu: side 0 = its x_mu = 0 face (to the rank
  /// behind), side 1 = its x_mu = L-1 face (to the rank ahead).
  void* send_face(int mu, int side) const { return send_[mu][side].data(); }
  /// Face region received in dimension mu from the rank ahead (dir = +1: their x_mu = 0
  /// face, the forward neighbours of my last slice) or behind (dir = -1). Valid from
  /// begin() to end() of one exchange (the sets alternate).
  void* recv_face(int mu, int dir) const { return recv_[set_][mu][dir > 0].data(); }
  std::size_t face_bytes(int mu) const { return face_bytes_[mu]; }

  void begin();
  void finish();
  void end();

  bool cuda_aware() const { return cuda_aware_; }
  /// How the links move: "peer-to-peer 4/4 links", "staged through host", ... for reports.
  std::string describe() const;
  /// Bytes sent per exchange by this rank.
  std::size_t bytes_per_exchange() const;

 private:
  const Lattice& lat_;
  Backend backend_;
  bool cuda_aware_ = false;
  std::array<std::size_t, 4> face_bytes_{};
  using Faces = std::array<std::array<Buffer, 2>, 4>;  // [mu][side or direction]
  Faces send_, send_host_;                              // device (or host on cpu); pinned staging
  std::array<Faces, 2> recv_, recv_host_;               // two sets, alternating
  int set_ = 0;
  std::vector<MPI_Request> requests_;
  Event compute_ready_, ghosts_ready_;
  std::array<Event, 2> consumed_;
  std::array<bool, 2> pending_{false, false};
  std::array<std::array<bool, 2>, 4> p2p_out_{}, p2p_in_{};  // [mu][side] / [mu][from ahead]
  std::array<std::array<std::array<void*, 2>, 4>, 2> remote_{};  // peer's receive buffers [set][mu][side]
  std::vector<MPI_Request> ready_;                             // peers' "buffer free" messages
  void setup_peer_to_peer();
};

}  // namespace latke
