// PETSc log events for Latke's work, so that -log_view shows where the time goes: the whole
// operator (LatkeMatMult), the hopping kernels (LatkeDslash), clover applications
// (LatkeClover), waiting for halos (LatkeHalo), host<->device staging of vectors
// (LatkeStage, with PETSc's CPU->GPU / GPU->CPU copy counters) and the multigrid
// preconditioner's phases (LatkeMG*). While PETSc logging is
// active, an event that timed GPU work synchronizes the compute stream at its end, so its
// time is the kernels' and not the launches'; without -log_view nothing is synchronized.
// Flops of GPU work are GPU flops where PETSc has a device (-log_view's GPU columns); with
// -log_view_gpu_time such an event also adds the GPU time its kernels took (CUDA events on
// Latke's compute stream) to PETSc's GPU time, which -log_view then reports per event.
// In CUDA builds every event is also an NVTX range of the same name (with or without
// -log_view), so that nsys shows it and `ncu --nvtx --nvtx-include LatkeMGApply/` profiles
// only the kernels inside it.
#pragma once

namespace latke {

enum class LogEvent {
  mat_mult,
  dslash,
  clover,
  halo,
  stage,
  mg_setup,    ///< LatkeMGSetup: the whole multigrid setup
  mg_apply,    ///< LatkeMGApply: one multigrid cycle from the fine level
  mg_smooth0,  ///< LatkeMGSmooth0..3: the smoother of level 0..3
  mg_smooth1,
  mg_smooth2,
  mg_smooth3,
  mg_transfer,       ///< LatkeMGTransfer: prolongation and restriction
  mg_coarse_op,      ///< LatkeMGCoarseOp: coarse-operator applications (with their flops)
  mg_coarse_solve,   ///< LatkeMGCoarseSolve: the coarsest level's solves
  mg_null_vectors,   ///< LatkeMGNullVectors: the setup's inverse iterations (inside LatkeMGSetup)
  mg_galerkin,       ///< LatkeMGGalerkin: assembling the coarse operators (inside LatkeMGSetup)
  mg_gather,         ///< LatkeMGGather: all-gathering an agglomerated level's right-hand side (inside LatkeMGTransfer)
  operator_build,    ///< LatkeOpBuild: building a Wilson-clover operator (links, clover terms)
  link_upload,       ///< LatkeLinkUpload: converting and uploading links (inside LatkeOpBuild)
  schwarz_blocks,    ///< LatkeSchwarzBlocks: block solves with the blocks on chip (one kernel per application)
  gauge_io,          ///< LatkeGaugeIO: reading or writing a gauge configuration file (checks included)
  gauge_update,      ///< LatkeGaugeUpdate: heat-bath and over-relaxation sweeps of the generator
  contract,          ///< LatkeContract: meson and nucleon correlators from propagator columns
  gcr_ortho,         ///< LatkeGcrOrtho: GCR's Gram-Schmidt, residual update and solution update (GcrCycle)
  gcr_deflate,       ///< LatkeGcrDeflate: GCR's deflated restarts (the kept directions and the projection on them)
  smear,             ///< LatkeSmear: link smearing and quark smearing steps
  gauge_fix,         ///< LatkeGaugeFix: gauge fixing sweeps, their measurements and the links' transformation
  schwarz_boundary,  ///< LatkeSchwarzBoundary: SAP's residual update across block boundaries (one hop, the colour's
                     ///< faces exchanged)
  count_
};

/// @brief Register Latke's events with PETSc (idempotent; PETSc must be initialized).
void register_log_events();
/// @brief Whether LogScope synchronizes the device at its end (PETSc logging is on: -log_view),
/// so that work inside it cannot be recorded as a CUDA graph.
bool log_synchronizes();

/// Times one event from construction to destruction and logs its flops.
class LogScope {
 public:
  /// @param gpu_work the event covers kernels queued on the compute stream.
  explicit LogScope(LogEvent e, double flops = 0, bool gpu_work = true);
  ~LogScope();
  LogScope(const LogScope&) = delete;
  LogScope& operator=(const LogScope&) = delete;

 private:
  int event_;
  bool gpu_work_;
  bool gpu_timed_ = false;
};

/// Staging copies between host vectors and device fields since the start of the process.
struct StagingCounters {
  long copies_to_device = 0, copies_to_host = 0;
  double bytes_to_device = 0, bytes_to_host = 0;
};
/// @brief Record one staging copy (and tell PETSc's copy counters).
void count_staging(bool to_device, double bytes);
/// @brief The staging copies counted so far on this rank.
StagingCounters staging_counters();

}  // namespace latke
