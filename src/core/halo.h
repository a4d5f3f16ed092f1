// Halo exchange of face data between neighbouring ranks, overlapped with computation.
// For each partitioned dimension mu a rank sends two faces (its x_mu = 0 face to the rank
// behind, its x_mu = L_mu - 1 face to the rank ahead) and receives the two matching ones; a
// face is `depth` slices deep (1 for Wilson; 3 for the staggered Naik term: x_mu = 0..2 and
// L_mu-3..L_mu-1). What a face site carries is the operator's business (Wilson: a spin-
// projected half-spinor; staggered: a color vector); this class owns the buffers and moves
// them, per link the fastest way there is:
//   device-signalled  every link of every rank peer to peer (CUDA IPC, NVLink where there is
//                 one): the faces go by copy-engine copies into the neighbour's receive buffer
//                 (LATKE_HALO_SIGNAL=device) or the pack kernel writes them there itself
//                 (LATKE_HALO_SIGNAL=device-pack), and flags in device memory, written and
//                 waited for by stream memory operations, say "face delivered" and "buffer
//                 free": no host and no MPI per exchange, so the host never waits (opt-in,
//                 docs/multi-gpu.md)
//   peer-to-peer  neighbour's GPU on the same node: the sender copies its face straight into
//                 the receiver's buffer (CUDA IPC, NVLink where there is one); MPI carries
//                 only zero-byte "buffer free" and "face delivered" messages. The copy's
//                 completion reaches the receiver either through the host (default: the
//                 sender's host waits for its pack and copies before saying "delivered"), or
//                 through an interprocess CUDA event the sender records after its copies
//                 (LATKE_HALO_SIGNAL=event): the sender says "delivered" at once, and the
//                 receiver's stream waits for the event, so neither host waits for the GPU
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
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>

#include "src/core/backend.h"
#include "src/core/lattice.h"
#include "src/core/memory.h"

namespace latke {

/// @brief Whether MPI can take device pointers (OpenMPI's query, or LATKE_MPI_CUDA_AWARE=0/1).
bool mpi_cuda_aware();

/// Where the time of halo-exchanging operator applications goes, summed over the exchanges
/// made while profiling is on (CUDA backend; microseconds from the exchange's begin on the
/// compute stream): the interior kernel done, the faces packed, the ghosts delivered (copied
/// to the peer, or staged and uploaded, and every neighbour's signal in), and the exterior
/// kernel done; and the host's time in finish(), which waits for the packing and the
/// neighbours. Profiling synchronizes at each exchange's end, so time only the profile
/// itself with it on.
struct HaloProfile {
  long exchanges = 0;
  double interior_us = 0, packed_us = 0, delivered_us = 0, done_us = 0, host_finish_us = 0;
  /// The exterior kernel's share: from the later of interior and delivery to done.
  double exterior_us = 0;
};
/// @brief How stencils do their exterior (boundary) pass, from LATKE_DSLASH_EXTERIOR: 0
/// ("whole": the boundary sites whole, every hop, after the exchange), 1 ("partial":
/// the interior pass sums every site's on-rank hops, the exterior adds the hops from the
/// faces, faces.h), 2 ("overlap": whole, on the halo stream as soon as the faces are in,
/// concurrent with the interior, see HaloExchange::begin) or -1 (unset or "auto": the
/// autotuner chooses per kernel, local lattice and grid, see choose_policy). All give the same
/// sums up to rounding order.
int exterior_pass_choice();

/// @brief The fastest of the policies `names` of a halo-exchanging stencil: time(i) runs
/// policy i a few times and returns milliseconds on this rank; the slowest rank's time
/// decides, so every rank chooses the same. Kept under key in the tune cache (and
/// LATKE_RESOURCE_PATH's file, which so records the policy); a key every rank has already is
/// not timed again. Collective.
int choose_policy(const Lattice& lat, const std::string& key, const std::vector<std::string>& names,
                  const std::function<double(int)>& time);
/// The policies chosen by choose_policy in this process, in order: (key, name of the policy).
const std::vector<std::pair<std::string, std::string>>& chosen_policies();

/// @brief Start (clearing the sums) or stop profiling every HaloExchange of this process.
void set_halo_profiling(bool on);
/// The sums since profiling was last started.
HaloProfile halo_profile();

class HaloExchange {
 public:
  /// @param site_bytes bytes per face site of payload; layout within a face is the caller's.
  /// @param depth slices per face: each face holds depth x face_volume_cb(mu) sites.
  HaloExchange(const Lattice& lat, Backend backend, std::size_t site_bytes, int depth = 1);
  /// @param face_bytes bytes of each face per dimension (used where the lattice is split; 0:
  ///        not exchanged): for payloads that are not whole face sites (the generator's
  ///        extended slices, one dimension per exchange).
  HaloExchange(const Lattice& lat, Backend backend, const std::array<std::size_t, 4>& face_bytes);
  ~HaloExchange();
  HaloExchange(const HaloExchange&) = delete;
  HaloExchange& operator=(const HaloExchange&) = delete;

  /// Face region that rank sends in dimension mu: side 0 = its x_mu = 0 face (to the rank
  /// behind), side 1 = its x_mu = L-1 face (to the rank ahead). Valid from begin() to
  /// finish() of one exchange: with device signals it is the neighbour's receive buffer.
  void* send_face(int mu, int side) const {
    return device_signals_ && pack_remote_ ? remote_[set_][mu][side] : send_[mu][side].data();
  }
  /// Face region received in dimension mu from the rank ahead (dir = +1: their x_mu = 0
  /// face, the forward neighbours of my last slice) or behind (dir = -1). Valid from
  /// begin() to end() of one exchange (the sets alternate).
  void* recv_face(int mu, int dir) const { return recv_[set_][mu][dir > 0].data(); }
  std::size_t face_bytes(int mu) const { return face_bytes_[mu]; }
  /// Bytes one exchange sends: both faces of every dimension exchanged.
  std::size_t bytes_sent() const { return 2 * (face_bytes_[0] + face_bytes_[1] + face_bytes_[2] + face_bytes_[3]); }
  /// Whether dimension mu is exchanged: split over ranks, with faces of some bytes (a caller
  /// may exchange only some of the split dimensions, giving the others no bytes).
  bool active(int mu) const { return face_bytes_[mu] > 0; }

  /// @param exterior_on_comm the boundary pass of this exchange runs on exterior_stream() =
  ///        the comm stream, which finish() makes wait for the ghosts (the compute stream does
  ///        not wait for them), and end() joins it back to the compute stream: the pass then
  ///        overlaps the interior kernel, so the two must write disjoint sites.
  /// @param after_compute the packing waits for the compute stream's work so far (false: the
  ///        caller has ordered it, e.g. a further exchange of one refresh on the comm stream).
  void begin(bool exterior_on_comm = false, bool after_compute = true);
  void finish();
  void end();
  /// Where the boundary pass of the current exchange is launched (see begin).
  Stream exterior_stream() const { return exterior_on_comm_ ? comm_stream() : compute_stream(); }

  bool cuda_aware() const { return cuda_aware_; }
  /// Scratch memory of the exchange's backend, at least `bytes` (kept and grown): what a
  /// stencil keeps between its interior and exterior passes, on the compute stream.
  void* scratch(std::size_t bytes);
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
  Event compute_ready_, ghosts_ready_, exterior_done_;
  bool exterior_on_comm_ = false;
  std::array<Event, 2> consumed_;
  std::array<bool, 2> pending_{false, false};
  std::array<std::array<bool, 2>, 4> p2p_out_{}, p2p_in_{};  // [mu][side] / [mu][from ahead]
  std::array<std::array<std::array<void*, 2>, 4>, 2> remote_{};  // peer's receive buffers [set][mu][side]
  std::vector<MPI_Request> ready_;                             // peers' "buffer free" messages
  struct Timing;  // events of one profiled exchange (halo.cpp)
  std::unique_ptr<Timing> timing_;
  Buffer scratch_;
  double finish_host_us_ = 0;
  // Device-signalled exchanges: per incoming link [mu][from ahead] the "delivered" flags of the
  // two sets, per outgoing link [mu][side] the "buffer free" flag (this rank's memory, written
  // by the neighbour), and the neighbours' flags as opened here.
  bool device_signals_ = false, pack_remote_ = false;
  unsigned seq_ = 0;
  std::array<std::array<Buffer, 2>, 4> sig_in_, sig_out_;
  std::array<std::array<void*, 2>, 4> remote_sig_in_{}, remote_sig_out_{};
  // IPC events: per outgoing peer link [mu][side] the event this rank records after its copy,
  // per incoming one [mu][from ahead] the sender's event as opened here (cudaEvent_t).
  bool ipc_events_ = false;
  std::array<std::array<void*, 2>, 4> ipc_sent_{}, ipc_arrived_{};
  void setup_peer_to_peer();
  void setup_device_signals();
  void setup_ipc_events();
};

}  // namespace latke
