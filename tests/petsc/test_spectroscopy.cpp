// Meson correlators (MatLatkeMesonCorrelators, spectroscopy/mesons.h) against what they must be:
// on the free field, the lattice momentum sum of the Wilson propagator, computed here from the
// gamma matrices of conventions.h alone; the gamma_5-hermiticity identity C_pi(t) = sum |S|^2;
// invariance under a random gauge transformation of the links; real diagonal channels; bad
// input; a propagator written to an HDF5 file and read back bit for bit; link and quark
// smearing. On 1 rank and on 2 (the lattice split in t, or in z), with the same expectations.
#include <gtest/gtest.h>
#include <petscksp.h>
#if defined(LATKE_HAVE_HDF5_VIEWER)
#include <petscviewerhdf5.h>
#endif

#include <Eigen/Dense>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "latke/conventions.h"
#include "latke/latke.h"
#include "petsc/mat_shell.h"
#include "src/core/error.h"
#include "src/fields/link_smearing.h"

namespace {

using cplx = std::complex<double>;
using cvec = std::vector<cplx>;
using Spin = Eigen::Matrix4cd;
const PetscInt dims[4] = {4, 4, 4, 8};
const std::array<int, 4> D = {4, 4, 4, 8};
constexpr int T = 8;
constexpr int n_channels = 7;

#define ASSERT_PETSC(call) ASSERT_EQ((call), 0) << #call

int world_size() {
  int n = 1;
  MPI_Comm_size(PETSC_COMM_WORLD, &n);
  return n;
}

/// 2 ranks: the lattice split in t, or with -test_split_z in z (where smearing exchanges ghosts).
const PetscInt* grid() {
  static const PetscInt one[4] = {1, 1, 1, 1}, two[4] = {1, 1, 1, 2}, two_z[4] = {1, 1, 2, 1};
  PetscBool z = PETSC_FALSE;
  PetscOptionsHasName(nullptr, nullptr, "-test_split_z", &z);
  return world_size() == 1 ? one : z ? two_z : two;
}

Spin spin_matrix(const latke::SpinMatrix& m) {
  Spin s;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) s(r, c) = cplx(m[r][c].re, m[r][c].im);
  return s;
}
Spin gamma(int mu) { return spin_matrix(latke::gamma_matrix(mu)); }
Spin g5() { return spin_matrix(latke::gamma5_matrix()); }

/// (sink, source) gamma pairs of each channel, in LatkeMesonChannel's order.
std::vector<std::vector<std::pair<Spin, Spin>>> channel_gammas() {
  std::vector<std::vector<std::pair<Spin, Spin>>> ch(n_channels);
  const Spin g4g5 = gamma(3) * g5();
  ch[LATKE_MESON_PION] = {{g5(), g5()}};
  ch[LATKE_MESON_PION_A4] = {{g4g5, g4g5}};
  ch[LATKE_MESON_A4_PION] = {{g4g5, g5()}};
  ch[LATKE_MESON_A0] = {{Spin::Identity(), Spin::Identity()}};
  for (int i = 0; i < 3; ++i) {
    ch[LATKE_MESON_RHO].push_back({gamma(i), gamma(i)});
    ch[LATKE_MESON_A1].push_back({gamma(i) * g5(), gamma(i) * g5()});
    const Spin gjk = gamma((i + 1) % 3) * gamma((i + 2) % 3);
    ch[LATKE_MESON_B1].push_back({gjk, gjk});
  }
  return ch;
}

/// -1/n sum over the channel's pairs of Tr[G S Gbar g5 R^dag g5] for one site's 12x12 S and R
/// (row 3 s + c, column 3 s0 + c0; R = S but in momentum space), Gbar = g4 G^dag g4.
cplx site_term(const std::vector<std::pair<Spin, Spin>>& pairs, const Eigen::MatrixXcd& S, const Eigen::MatrixXcd& R) {
  cplx sum = 0;
  const Eigen::MatrixXcd id3 = Eigen::MatrixXcd::Identity(3, 3);
  auto kron = [&](const Spin& s) {
    Eigen::MatrixXcd k(12, 12);
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 4; ++b) k.block(3 * a, 3 * b, 3, 3) = s(a, b) * id3;
    return k;
  };
  for (const auto& [snk, src] : pairs) {
    const Spin bar = gamma(3) * src.adjoint() * gamma(3);
    sum += (kron(snk) * S * kron(bar) * kron(g5()) * R.adjoint() * kron(g5())).trace();
  }
  return -sum / static_cast<double>(pairs.size());
}

Mat wilson(LatkeGauge g, double kappa, double csw) {
  LatkeWilsonCloverParams p;
  LatkeWilsonCloverParamsDefault(&p);
  p.kappa = kappa;
  p.csw = csw;
  Mat A = nullptr;
  EXPECT_EQ(MatCreateLatkeWilsonClover(g, LATKE_OPERATOR_EVEN_ODD, &p, nullptr, &A), 0);
  return A;
}

/// The 12 solutions for the sources that `source` sets (column j: spin j / 3, colour j % 3), each
/// solved to 1e-12 in double.
std::vector<Vec> solve_columns(Mat A, const std::function<PetscErrorCode(Vec b, int j)>& source) {
  std::vector<Vec> cols(12);
  Vec b, bh, xh;
  EXPECT_EQ(MatLatkeCreateFullVecs(A, nullptr, &b), 0);
  EXPECT_EQ(MatCreateVecs(A, &xh, &bh), 0);
  LatkeSolverParams p;
  LatkeSolverParamsDefault(&p);
  p.type = LATKE_SOLVER_BICGSTAB;
  p.sloppy = LATKE_PRECISION_DOUBLE;
  p.tol = 1e-12;
  for (int j = 0; j < 12; ++j) {
    EXPECT_EQ(MatLatkeCreateFullVecs(A, &cols[j], nullptr), 0);
    EXPECT_EQ(source(b, j), 0);
    EXPECT_EQ(MatLatkePrepareSource(A, b, bh), 0);
    EXPECT_EQ(VecSet(xh, 0.0), 0);
    LatkeSolverStats st;
    EXPECT_EQ(MatLatkeSolve(A, bh, xh, &p, nullptr, &st), 0);
    EXPECT_TRUE(st.converged) << "column " << j << ": residual " << st.true_residual;
    EXPECT_EQ(MatLatkeReconstruct(A, xh, b, cols[j]), 0);
  }
  VecDestroy(&b);
  VecDestroy(&bh);
  VecDestroy(&xh);
  return cols;
}

/// The 12 columns of the point-source propagator at `site`.
std::vector<Vec> propagator(Mat A, const PetscInt site[4]) {
  return solve_columns(A, [&](Vec b, int j) { return LatkeVecSetPointSource(A, b, site, j / 3, j % 3); });
}

void destroy(std::vector<Vec>& cols) {
  for (Vec& v : cols) VecDestroy(&v);
}

std::vector<cplx> correlators(Mat A, const std::vector<Vec>& cols, PetscInt t0) {
  std::vector<LatkeMesonChannel> ch;
  for (int k = 0; k < n_channels; ++k) ch.push_back(static_cast<LatkeMesonChannel>(k));
  std::vector<PetscScalar> c(n_channels * T);
  EXPECT_EQ(MatLatkeMesonCorrelators(A, cols.data(), t0, n_channels, ch.data(), c.data()), 0);
  return std::vector<cplx>(c.begin(), c.end());
}

/// Every channel at the given momenta, by call(momentum count, flat momenta, channel count,
/// channels, output): result[m][k T + t] (as correlators()).
template <typename Call>
std::vector<std::vector<cplx>> every_channel_at(const std::vector<std::array<int, 3>>& momenta, Call call) {
  std::vector<LatkeMesonChannel> ch;
  for (int k = 0; k < n_channels; ++k) ch.push_back(static_cast<LatkeMesonChannel>(k));
  const PetscInt nm = static_cast<PetscInt>(momenta.size());
  std::vector<PetscInt> mom;
  for (const auto& n : momenta) mom.insert(mom.end(), n.begin(), n.end());
  std::vector<PetscScalar> c(static_cast<std::size_t>(n_channels) * nm * T);
  EXPECT_EQ(call(nm, mom.data(), static_cast<PetscInt>(n_channels), ch.data(), c.data()), 0);
  std::vector<std::vector<cplx>> out(nm, std::vector<cplx>(n_channels * T));
  for (PetscInt m = 0; m < nm; ++m)
    for (int k = 0; k < n_channels; ++k)
      for (int t = 0; t < T; ++t) out[m][k * T + t] = c[(k * nm + m) * T + t];
  return out;
}

/// Every channel at the given momenta (MatLatkeMesonCorrelatorsMomenta).
std::vector<std::vector<cplx>> correlators_at(Mat A, const std::vector<Vec>& cols, const PetscInt site[4],
                                              const std::vector<std::array<int, 3>>& momenta) {
  return every_channel_at(momenta, [&](PetscInt nm, const PetscInt* mom, PetscInt n, const LatkeMesonChannel* ch,
                                       PetscScalar* c) {
    return MatLatkeMesonCorrelatorsMomenta(A, cols.data(), site, nm, mom, n, ch, c);
  });
}

/// max_t |a(t) - b(t)| / max_t |b(t)| over one channel.
double channel_error(const std::vector<cplx>& a, const std::vector<cplx>& b, int k) {
  double d = 0, n = 0;
  for (int t = 0; t < T; ++t) {
    d = std::max(d, std::abs(a[k * T + t] - b[k * T + t]));
    n = std::max(n, std::abs(b[k * T + t]));
  }
  return d / n;
}

const latke::Lattice& lattice_of(Mat A) { return *latke::petsc::context_of(A).op->lattice(); }

// ---- the free field ------------------------------------------------------------------------

// With unit links, M(p) = (4 + m) - sum_mu cos p_mu + i sum_mu gamma_mu sin p_mu (plane waves
// e^{ipx}; p_4 = (2n+1) pi / T antiperiodic, p_i = 2 pi n / L), M_kappa = 2 kappa M, and with
// S(xvec, t) = (1/V3) sum_qvec e^{i qvec.xvec} St(qvec, t), St(qvec, t) = (1/T) sum_q4 e^{i q4 t}
// M_kappa(q)^-1 (colour-diagonal), the sum over xvec of e^{-i P.xvec} f(S) S^dag picks q = k - P:
// C(t, P) = (1/V3) sum_kvec f(St(kvec + P, t)) St(kvec, t)^dag.
/// St(k, t) for every spatial momentum: [(n lexicographic in xyz) * T + t], 12 x 12 spin-colour.
std::vector<Eigen::MatrixXcd> free_momentum_propagator(double kappa) {
  const double m = 1 / (2 * kappa) - 4;
  const int V3 = D[0] * D[1] * D[2];
  std::vector<Eigen::MatrixXcd> st(static_cast<std::size_t>(V3) * T);
  for (int n0 = 0; n0 < D[0]; ++n0)
    for (int n1 = 0; n1 < D[1]; ++n1)
      for (int n2 = 0; n2 < D[2]; ++n2) {
        const double p[3] = {2 * M_PI * n0 / D[0], 2 * M_PI * n1 / D[1], 2 * M_PI * n2 / D[2]};
        for (int t = 0; t < T; ++t) {
          Spin sp = Spin::Zero();
          for (int n3 = 0; n3 < T; ++n3) {
            const double p4 = M_PI * (2 * n3 + 1) / T;
            const double pp[4] = {p[0], p[1], p[2], p4};
            Spin M = Spin::Identity() * cplx(4 + m, 0);
            for (int mu = 0; mu < 4; ++mu)
              M += -std::cos(pp[mu]) * Spin::Identity() + cplx(0, std::sin(pp[mu])) * gamma(mu);
            sp += std::exp(cplx(0, p4 * t)) * (2 * kappa * M).inverse() / static_cast<double>(T);
          }
          Eigen::MatrixXcd S = Eigen::MatrixXcd::Zero(12, 12);
          for (int a = 0; a < 4; ++a)
            for (int b = 0; b < 4; ++b)
              for (int col = 0; col < 3; ++col) S(3 * a + col, 3 * b + col) = sp(a, b);
          st[static_cast<std::size_t>((n2 * D[1] + n1) * D[0] + n0) * T + t] = S;
        }
      }
  return st;
}

/// With two hopping parameters (the quark's kappa, the antiquark's kappa_b) the momentum sum
/// takes St_kappa(k + P) and St_kappa_b(k).
std::vector<cplx> free_field_correlators(double kappa, const std::array<int, 3>& P = {0, 0, 0},
                                         double kappa_b = 0) {
  const auto ch = channel_gammas();
  const int V3 = D[0] * D[1] * D[2];
  const std::vector<Eigen::MatrixXcd> st = free_momentum_propagator(kappa);
  const std::vector<Eigen::MatrixXcd> sb = kappa_b > 0 ? free_momentum_propagator(kappa_b) : st;
  std::vector<cplx> c(n_channels * T, 0.0);
  for (int n0 = 0; n0 < D[0]; ++n0)
    for (int n1 = 0; n1 < D[1]; ++n1)
      for (int n2 = 0; n2 < D[2]; ++n2) {
        const int k = (n2 * D[1] + n1) * D[0] + n0;
        const int kp = (((n2 + P[2]) % D[2] + D[2]) % D[2] * D[1] + ((n1 + P[1]) % D[1] + D[1]) % D[1]) * D[0] +
                       ((n0 + P[0]) % D[0] + D[0]) % D[0];
        for (int t = 0; t < T; ++t)
          for (int j = 0; j < n_channels; ++j)
            c[j * T + t] +=
                site_term(ch[j], st[static_cast<std::size_t>(kp) * T + t], sb[static_cast<std::size_t>(k) * T + t]) /
                static_cast<double>(V3);
      }
  return c;
}

TEST(Mesons, FreeFieldCorrelatorsAreTheMomentumSumOfTheWilsonPropagator) {
  LatkeGauge g;
  ASSERT_PETSC(LatkeGaugeCreateRandom(PETSC_COMM_WORLD, dims, grid(), 1, 0.0, &g));  // unit links
  const double kappa = 0.115;
  Mat A = wilson(g, kappa, 1.0);
  const PetscInt site[4] = {1, 2, 3, 5};  // the source's slice, t0 = 5: t counted from it, across the boundary
  std::vector<Vec> cols = propagator(A, site);
  const std::vector<cplx> got = correlators(A, cols, site[3]);
  const std::vector<cplx> want = free_field_correlators(kappa);
  for (int k = 0; k < n_channels; ++k) {
    const char* name = nullptr;
    ASSERT_PETSC(LatkeMesonChannelGetName(static_cast<LatkeMesonChannel>(k), &name));
    EXPECT_LT(channel_error(got, want, k), 1e-9) << name << ": C(0) " << got[k * T] << " against " << want[k * T];
  }
  EXPECT_GT(got[0].real(), 0);  // the pion is positive
  destroy(cols);
  MatDestroy(&A);
  LatkeGaugeDestroy(&g);
}

// At momentum P the free-field correlators are the momentum sum with one propagator shifted by
// P; the phases are taken relative to the source site, which is off the origin here. P = 0 gives
// MatLatkeMesonCorrelators' numbers bit for bit.
TEST(Mesons, FreeFieldCorrelatorsAtMomentumAreTheShiftedMomentumSum) {
  LatkeGauge g;
  ASSERT_PETSC(LatkeGaugeCreateRandom(PETSC_COMM_WORLD, dims, grid(), 1, 0.0, &g));  // unit links
  const double kappa = 0.115;
  Mat A = wilson(g, kappa, 1.0);
  const PetscInt site[4] = {3, 1, 2, 6};
  std::vector<Vec> cols = propagator(A, site);
  const std::vector<std::array<int, 3>> momenta = {{0, 0, 0}, {1, 0, 0}, {0, -1, 1}, {1, 1, 1}, {2, 0, -1}};
  const auto got = correlators_at(A, cols, site, momenta);
  const std::vector<cplx> zero = correlators(A, cols, site[3]);
  for (int i = 0; i < n_channels * T; ++i) EXPECT_EQ(got[0][i], zero[i]) << "p = 0, entry " << i;
  for (std::size_t m = 1; m < momenta.size(); ++m) {
    const std::vector<cplx> want = free_field_correlators(kappa, momenta[m]);
    for (int k = 0; k < n_channels; ++k)
      EXPECT_LT(channel_error(got[m], want, k), 1e-9)
          << "n = " << momenta[m][0] << "," << momenta[m][1] << "," << momenta[m][2] << " channel " << k << ": C(0) "
          << got[m][k * T] << " against " << want[k * T];
  }
  destroy(cols);
  MatDestroy(&A);
  LatkeGaugeDestroy(&g);
}

/// Every channel of the meson of two propagators (quark qa, antiquark qb) at the momenta.
std::vector<std::vector<cplx>> pair_correlators(Mat A, const std::vector<Vec>& qa, const std::vector<Vec>& qb,
                                                const PetscInt site[4],
                                                const std::vector<std::array<int, 3>>& momenta) {
  return every_channel_at(momenta, [&](PetscInt nm, const PetscInt* mom, PetscInt n, const LatkeMesonChannel* ch,
                                       PetscScalar* c) {
    return MatLatkeMesonCorrelatorsPair(A, qa.data(), qb.data(), site, nm, mom, n, ch, c);
  });
}

// Two hopping parameters: on the free field the momentum sum of the two propagators, at rest and
// at a momentum; one propagator twice is the degenerate contraction bit for bit.
TEST(Mesons, TwoQuarkMassesOnTheFreeFieldAndDegenerateBitForBit) {
  LatkeGauge g;
  ASSERT_PETSC(LatkeGaugeCreateRandom(PETSC_COMM_WORLD, dims, grid(), 1, 0.0, &g));  // unit links
  const double ka = 0.115, kb = 0.105;
  Mat A = wilson(g, ka, 1.0), B = wilson(g, kb, 1.0);
  const PetscInt site[4] = {2, 0, 1, 6};
  std::vector<Vec> sa = propagator(A, site), sb = propagator(B, site);
  const std::vector<std::array<int, 3>> momenta = {{0, 0, 0}, {1, -1, 0}};
  const auto got = pair_correlators(A, sa, sb, site, momenta);
  for (std::size_t m = 0; m < momenta.size(); ++m) {
    const std::vector<cplx> want = free_field_correlators(ka, momenta[m], kb);
    for (int k = 0; k < n_channels; ++k)
      EXPECT_LT(channel_error(got[m], want, k), 1e-9) << "momentum " << m << " channel " << k;
  }
  const auto same = pair_correlators(A, sa, sa, site, momenta);
  const auto single = correlators_at(A, sa, site, momenta);
  for (std::size_t m = 0; m < momenta.size(); ++m)
    for (int i = 0; i < n_channels * T; ++i) EXPECT_EQ(same[m][i], single[m][i]) << "momentum " << m << " entry " << i;
  destroy(sa);
  destroy(sb);
  MatDestroy(&A);
  MatDestroy(&B);
  LatkeGaugeDestroy(&g);
}

// ---- interacting fields --------------------------------------------------------------------

/// A reproducible SU(3) matrix: Gram-Schmidt on two Gaussian rows, the third their conjugate
/// cross product.
Eigen::Matrix3cd random_su3(std::mt19937_64& rng) {
  std::normal_distribution<double> n;
  Eigen::Matrix3cd u;
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c) u(r, c) = cplx(n(rng), n(rng));
  u.row(0).normalize();
  const cplx overlap = u.row(0).dot(u.row(1));  // sum conj(row 0) row 1
  u.row(1) -= overlap * u.row(0);
  u.row(1).normalize();
  for (int c = 0; c < 3; ++c) {
    const int a = (c + 1) % 3, b = (c + 2) % 3;
    u(2, c) = std::conj(u(0, a) * u(1, b) - u(0, b) * u(1, a));
  }
  return u;
}

/// Global links, lexicographic, per site U_x, U_y, U_z, U_t (3x3 row-major).
cvec random_links(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const long vol = static_cast<long>(D[0]) * D[1] * D[2] * D[3];
  cvec links(vol * 36);
  for (long s = 0; s < vol; ++s)
    for (int mu = 0; mu < 4; ++mu) {
      const Eigen::Matrix3cd u = random_su3(rng);
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) links[(s * 4 + mu) * 9 + r * 3 + c] = u(r, c);
    }
  return links;
}

/// U'_mu(x) = g(x) U_mu(x) g(x + mu)^dag for random g (periodic neighbours).
cvec gauge_transform(const cvec& links, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const long vol = static_cast<long>(D[0]) * D[1] * D[2] * D[3];
  std::vector<Eigen::Matrix3cd> g(vol);
  for (auto& m : g) m = random_su3(rng);
  cvec out(links.size());
  for (long s = 0; s < vol; ++s) {
    std::array<int, 4> c{static_cast<int>(s % D[0]), static_cast<int>(s / D[0] % D[1]),
                         static_cast<int>(s / (D[0] * D[1]) % D[2]), static_cast<int>(s / (D[0] * D[1] * D[2]))};
    for (int mu = 0; mu < 4; ++mu) {
      std::array<int, 4> f = c;
      f[mu] = (f[mu] + 1) % D[mu];
      Eigen::Matrix3cd u;
      for (int r = 0; r < 3; ++r)
        for (int k = 0; k < 3; ++k) u(r, k) = links[(s * 4 + mu) * 9 + r * 3 + k];
      const Eigen::Matrix3cd v = g[s] * u * g[latke::lex_site(f, D)].adjoint();
      for (int r = 0; r < 3; ++r)
        for (int k = 0; k < 3; ++k) out[(s * 4 + mu) * 9 + r * 3 + k] = v(r, k);
    }
  }
  return out;
}

/// This rank's part of a global lexicographic array of `per_site` numbers per site.
cvec local_part(const latke::Lattice& lat, const cvec& global, int per_site) {
  cvec part(static_cast<std::size_t>(lat.volume()) * per_site);
  for (long s = 0; s < lat.volume(); ++s) {
    const latke::Coords c = lat.coords_of(s);
    long gs = 0;
    for (int mu = 3; mu >= 0; --mu) gs = gs * D[mu] + c[mu] + lat.offset()[mu];
    for (int k = 0; k < per_site; ++k) part[s * per_site + k] = global[gs * per_site + k];
  }
  return part;
}

/// A gauge from global links: this rank's part, by the lattice of a matrix on the same grid.
LatkeGauge gauge_from(const cvec& links) {
  LatkeGauge probe, g;
  EXPECT_EQ(LatkeGaugeCreateRandom(PETSC_COMM_WORLD, dims, grid(), 1, 0.0, &probe), 0);
  Mat P = wilson(probe, 0.1, 1.0);
  const cvec part = local_part(lattice_of(P), links, 36);
  EXPECT_EQ(LatkeGaugeCreateFromArray(PETSC_COMM_WORLD, dims, grid(), part.data(), &g), 0);
  MatDestroy(&P);
  LatkeGaugeDestroy(&probe);
  return g;
}

TEST(Mesons, CorrelatorsAreGaugeInvariantAndThePionIsTheSumOfSquares) {
  const cvec links = random_links(7);
  LatkeGauge g = gauge_from(links), h = gauge_from(gauge_transform(links, 8));
  const double kappa = 0.105, csw = 1.2;
  Mat A = wilson(g, kappa, csw), B = wilson(h, kappa, csw);
  const PetscInt site[4] = {2, 1, 0, 6};
  std::vector<Vec> sa = propagator(A, site), sb = propagator(B, site);
  const std::vector<cplx> ca = correlators(A, sa, site[3]), cb = correlators(B, sb, site[3]);
  for (int k = 0; k < n_channels; ++k) EXPECT_LT(channel_error(cb, ca, k), 1e-9) << "channel " << k;
  const std::array<int, 3> p = {1, 0, -1};  // and at a momentum (which the free field cannot tell from -p)
  const std::vector<cplx> pa = correlators_at(A, sa, site, {p})[0], pb = correlators_at(B, sb, site, {p})[0];
  for (int k = 0; k < n_channels; ++k) EXPECT_LT(channel_error(pb, pa, k), 1e-9) << "channel " << k << " at p";
  // The propagators themselves differ (the transformation moved them), so the test can fail.
  PetscReal na = 0, nd = 0;
  Vec d;
  ASSERT_PETSC(VecDuplicate(sa[4], &d));
  ASSERT_PETSC(VecWAXPY(d, -1.0, sa[4], sb[4]));
  ASSERT_PETSC(VecNorm(d, NORM_2, &nd));
  ASSERT_PETSC(VecNorm(sa[4], NORM_2, &na));
  EXPECT_GT(nd, 0.1 * na);
  VecDestroy(&d);
  // gamma_5-hermiticity: C_pi(t) = sum_x |S(x)|^2, summed here from the lexicographic columns.
  const latke::Lattice& lat = lattice_of(A);
  // At momentum p, C_pi(t, p) = sum_x e^{-i p.(x - x0)} |S(x)|^2.
  std::vector<double> sq(T, 0.0), all(T);
  std::vector<cplx> sqp(T, 0.0), allp(T);
  std::vector<PetscScalar> lex(static_cast<std::size_t>(lat.volume()) * 12);
  for (Vec v : sa) {
    ASSERT_PETSC(LatkeVecGetLexicographic(A, v, lex.data()));
    for (long s = 0; s < lat.volume(); ++s) {
      const latke::Coords c = lat.coords_of(s);
      const int t = c[3] + lat.offset()[3];
      double turns = 0;
      for (int i = 0; i < 3; ++i) turns += static_cast<double>(p[i] * (c[i] + lat.offset()[i] - site[i])) / D[i];
      double n2 = 0;
      for (int k = 0; k < 12; ++k) n2 += std::norm(cplx(lex[s * 12 + k]));
      sq[(t - site[3] + T) % T] += n2;
      sqp[(t - site[3] + T) % T] += std::polar(n2, -2 * M_PI * turns);
    }
  }
  MPI_Allreduce(sq.data(), all.data(), T, MPI_DOUBLE, MPI_SUM, PETSC_COMM_WORLD);
  MPI_Allreduce(sqp.data(), allp.data(), T, MPI_C_DOUBLE_COMPLEX, MPI_SUM, PETSC_COMM_WORLD);
  for (int t = 0; t < T; ++t) {
    EXPECT_NEAR(ca[LATKE_MESON_PION * T + t].real(), all[t], 1e-12 * all[0]) << "t = " << t;
    EXPECT_LT(std::abs(pa[LATKE_MESON_PION * T + t] - allp[t]), 1e-12 * all[0]) << "t = " << t << " at p";
    // Channels with one gamma structure at both ends are real on every configuration.
    for (int k :
         {LATKE_MESON_PION, LATKE_MESON_PION_A4, LATKE_MESON_RHO, LATKE_MESON_A0, LATKE_MESON_A1, LATKE_MESON_B1})
      EXPECT_LT(std::abs(ca[k * T + t].imag()), 1e-12 * std::abs(ca[k * T]) + 1e-300) << "channel " << k;
  }
  destroy(sa);
  destroy(sb);
  MatDestroy(&A);
  MatDestroy(&B);
  LatkeGaugeDestroy(&g);
  LatkeGaugeDestroy(&h);
}

// ---- the nucleon ------------------------------------------------------------------------------

/// C_+ and C_- (corr[k n_mom T + m T + t]) of MatLatkeNucleonCorrelators.
std::vector<cplx> nucleon(Mat A, const std::vector<Vec>& cols, const PetscInt site[4],
                          const std::vector<std::array<int, 3>>& momenta) {
  std::vector<PetscInt> mom;
  for (const auto& n : momenta) mom.insert(mom.end(), n.begin(), n.end());
  const PetscInt nm = static_cast<PetscInt>(momenta.size());
  std::vector<PetscScalar> c(2 * nm * T);
  EXPECT_EQ(MatLatkeNucleonCorrelators(A, cols.data(), site, nm, mom.data(), c.data()), 0);
  return std::vector<cplx>(c.begin(), c.end());
}

/// The nucleon written out from Wick's theorem, index by index, on the host: per site
///   G_{g g'} = sum eps_abc eps_a'b'c' Gamma_{al be} Gbar_{be' al'}
///              (S^{aa'}_{al al'} S^{bb'}_{be be'} S^{cc'}_{g g'} - S^{ac'}_{al g'} S^{bb'}_{be be'} S^{ca'}_{g al'}),
/// Gamma = C g5, C = g2 g4, Gbar = g4 Gamma^dag g4; C_+- = sum_x e^{-ip.(x - x0)} Tr[(1 +- g4)/2 G], times
/// -1 where the sink is before the source's slice (three antiperiodic quarks across the boundary).
/// The spin matrix G of one site's (or one slice sum's) propagator, S(s, c, s0, c0), by Wick's theorem
/// index by index (nucleon_by_wick).
Spin wick_nucleon(const std::function<cplx(int, int, int, int)>& S) {
  const Spin C = gamma(1) * gamma(3);
  for (int mu = 0; mu < 4; ++mu)  // the charge conjugation of this basis
    EXPECT_LT((C * gamma(mu) * C.inverse() + gamma(mu).transpose()).norm(), 1e-14) << "mu = " << mu;
  const Spin G5 = C * g5(), Gbar = gamma(3) * G5.adjoint() * gamma(3);
  const int eps[6][4] = {{0, 1, 2, 1}, {1, 2, 0, 1}, {2, 0, 1, 1}, {0, 2, 1, -1}, {2, 1, 0, -1}, {1, 0, 2, -1}};
  Spin G = Spin::Zero();
  for (const auto& e : eps)
    for (const auto& f : eps) {
      const int a = e[0], b = e[1], c = e[2], ap = f[0], bp = f[1], cp = f[2];
      for (int al = 0; al < 4; ++al)
        for (int be = 0; be < 4; ++be) {
          if (G5(al, be) == 0.0) continue;
          for (int bep = 0; bep < 4; ++bep)
            for (int alp = 0; alp < 4; ++alp) {
              if (Gbar(bep, alp) == 0.0) continue;
              const cplx w = double(e[3] * f[3]) * G5(al, be) * Gbar(bep, alp) * S(be, b, bep, bp);
              for (int g = 0; g < 4; ++g)
                for (int gp = 0; gp < 4; ++gp)
                  G(g, gp) += w * (S(al, a, alp, ap) * S(g, c, gp, cp) - S(al, a, gp, cp) * S(g, c, alp, ap));
            }
        }
    }
  return G;
}

std::vector<cplx> nucleon_by_wick(Mat A, const std::vector<Vec>& cols, const PetscInt site[4],
                                  const std::vector<std::array<int, 3>>& momenta) {
  const Spin P[2] = {(Spin::Identity() + gamma(3)) / 2.0, (Spin::Identity() - gamma(3)) / 2.0};
  const latke::Lattice& lat = lattice_of(A);
  const std::size_t nm = momenta.size();
  std::vector<std::vector<PetscScalar>> lex(12, std::vector<PetscScalar>(static_cast<std::size_t>(lat.volume()) * 12));
  for (int j = 0; j < 12; ++j) EXPECT_EQ(LatkeVecGetLexicographic(A, cols[j], lex[j].data()), 0);
  std::vector<cplx> local(2 * nm * T, 0.0), all(2 * nm * T);
  for (long x = 0; x < lat.volume(); ++x) {
    const Spin G =
        wick_nucleon([&](int s, int c, int s0, int c0) { return cplx(lex[3 * s0 + c0][x * 12 + 3 * s + c]); });
    const latke::Coords xc = lat.coords_of(x);
    const int t = xc[3] + lat.offset()[3];
    const double wrap = t < site[3] ? -1.0 : 1.0;
    for (std::size_t m = 0; m < nm; ++m) {
      double turns = 0;
      for (int i = 0; i < 3; ++i) turns += double(momenta[m][i] * (xc[i] + lat.offset()[i] - site[i])) / D[i];
      const cplx phase = std::polar(wrap, -2 * M_PI * turns);
      for (int k = 0; k < 2; ++k) local[(k * nm + m) * T + (t - site[3] + T) % T] += phase * (P[k] * G).trace();
    }
  }
  MPI_Allreduce(local.data(), all.data(), static_cast<int>(all.size()), MPI_C_DOUBLE_COMPLEX, MPI_SUM,
                PETSC_COMM_WORLD);
  return all;
}

double max_abs(const std::vector<cplx>& v) {
  double m = 0;
  for (cplx z : v) m = std::max(m, std::abs(z));
  return m;
}

TEST(Nucleon, MatchesWicksTheoremIndexByIndexAndIsGaugeInvariant) {
  const cvec links = random_links(31);
  LatkeGauge g = gauge_from(links), h = gauge_from(gauge_transform(links, 32));
  Mat A = wilson(g, 0.105, 1.2), B = wilson(h, 0.105, 1.2);
  const PetscInt site[4] = {1, 3, 2, 6};  // t0 = 6: sinks at t >= 2 lie across the time boundary
  const std::vector<std::array<int, 3>> momenta = {{0, 0, 0}, {1, 0, -1}};
  std::vector<Vec> sa = propagator(A, site), sb = propagator(B, site);
  const std::vector<cplx> got = nucleon(A, sa, site, momenta), want = nucleon_by_wick(A, sa, site, momenta);
  const double scale = max_abs(want);
  ASSERT_GT(scale, 0);
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_LT(std::abs(got[i] - want[i]), 1e-12 * scale) << "entry " << i << ": " << got[i] << " against " << want[i];
  const std::vector<cplx> moved = nucleon(B, sb, site, momenta);
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_LT(std::abs(moved[i] - got[i]), 1e-9 * scale) << "entry " << i;
  destroy(sa);
  destroy(sb);
  MatDestroy(&A);
  MatDestroy(&B);
  LatkeGaugeDestroy(&g);
  LatkeGaugeDestroy(&h);
}

// On the free field the correlator cannot depend on where the source is: the sign taken for
// sinks across the time boundary makes a source at t0 = 5 (most sinks across) agree with one at
// t0 = 1. The nucleon is positive forward, and its projections are real at rest.
TEST(Nucleon, FreeFieldIsTranslationInvariantAndPositiveForward) {
  LatkeGauge g;
  ASSERT_PETSC(LatkeGaugeCreateRandom(PETSC_COMM_WORLD, dims, grid(), 1, 0.0, &g));  // unit links
  Mat A = wilson(g, 0.115, 1.0);
  const PetscInt s1[4] = {0, 1, 2, 1}, s5[4] = {3, 1, 0, 5};
  const std::vector<std::array<int, 3>> momenta = {{0, 0, 0}, {0, 1, 0}};
  std::vector<Vec> c1 = propagator(A, s1), c5 = propagator(A, s5);
  const std::vector<cplx> n1 = nucleon(A, c1, s1, momenta), n5 = nucleon(A, c5, s5, momenta);
  const double scale = max_abs(n1);
  for (std::size_t i = 0; i < n1.size(); ++i) EXPECT_LT(std::abs(n5[i] - n1[i]), 1e-9 * scale) << "entry " << i;
  for (int t = 0; t < T / 2; ++t) {
    EXPECT_GT(n1[t].real(), 0) << "C_+(" << t << ")";
    EXPECT_LT(std::abs(n1[t].imag()), 1e-12 * scale);
  }
  // The negative-parity projection is the nucleon backwards, with the boundary's sign.
  for (int t = 1; t < T; ++t) EXPECT_NEAR(n1[2 * T + t].real(), -n1[T - t].real(), 1e-12 * scale) << "C_-(" << t << ")";
  destroy(c1);
  destroy(c5);
  MatDestroy(&A);
  LatkeGaugeDestroy(&g);
}

// ---- gauge fixing -------------------------------------------------------------------------

/// The global links (lexicographic, conventions.h layout) of a gauge on the test grid, on every rank.
cvec global_links(LatkeGauge g) {
  Mat P = wilson(g, 0.1, 1.0);
  const latke::Lattice& lat = lattice_of(P);
  cvec part(static_cast<std::size_t>(lat.volume()) * 36), all(static_cast<std::size_t>(D[0]) * D[1] * D[2] * D[3] * 36);
  EXPECT_EQ(LatkeGaugeGetLinks(g, reinterpret_cast<PetscScalar*>(part.data())), 0);
  cvec mine(all.size(), 0.0);
  for (long s = 0; s < lat.volume(); ++s) {
    const latke::Coords c = lat.coords_of(s);
    long gs = 0;
    for (int mu = 3; mu >= 0; --mu) gs = gs * D[mu] + c[mu] + lat.offset()[mu];
    for (int k = 0; k < 36; ++k) mine[gs * 36 + k] = part[s * 36 + k];
  }
  MPI_Allreduce(mine.data(), all.data(), static_cast<int>(all.size()), MPI_C_DOUBLE_COMPLEX, MPI_SUM, PETSC_COMM_WORLD);
  MatDestroy(&P);
  return all;
}

Eigen::Matrix3cd link(const cvec& links, const std::array<int, 4>& x, int mu) {
  const long s = latke::lex_site(x, D);
  Eigen::Matrix3cd u;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) u(r, c) = links[(s * 4 + mu) * 9 + r * 3 + c];
  return u;
}

std::array<int, 4> site_of(long s) {
  return {static_cast<int>(s % D[0]), static_cast<int>(s / D[0] % D[1]), static_cast<int>(s / (D[0] * D[1]) % D[2]),
          static_cast<int>(s / (D[0] * D[1] * D[2]))};
}

/// theta = (1/3V) sum_x tr[Delta Delta^dag], Delta = sum_mu<ndir [A_mu(x) - A_mu(x-mu)], A = traceless
/// part of (U - U^dag)/2i; and the functional (1/3 ndir V) sum Re tr U: computed here from the links.
std::pair<double, double> divergence(const cvec& links, int ndir) {
  const long vol = static_cast<long>(D[0]) * D[1] * D[2] * D[3];
  auto A = [](const Eigen::Matrix3cd& u) {
    Eigen::Matrix3cd a = (u - u.adjoint()) / cplx(0, 2);
    return Eigen::Matrix3cd(a - a.trace() / 3.0 * Eigen::Matrix3cd::Identity());
  };
  double theta = 0, f = 0;
  for (long s = 0; s < vol; ++s) {
    const std::array<int, 4> x = site_of(s);
    Eigen::Matrix3cd delta = Eigen::Matrix3cd::Zero();
    for (int mu = 0; mu < ndir; ++mu) {
      std::array<int, 4> b = x;
      b[mu] = (b[mu] + D[mu] - 1) % D[mu];
      delta += A(link(links, x, mu)) - A(link(links, b, mu));
      f += link(links, x, mu).trace().real();
    }
    theta += (delta * delta.adjoint()).trace().real();
  }
  return {theta / (3.0 * vol), f / (3.0 * ndir * vol)};
}

/// A quenched configuration at beta 6.0, 30 sweeps from unit links (seed `seed`).
LatkeGauge thermalized(PetscInt seed) {
  LatkeGauge cold = nullptr, hot = nullptr;
  EXPECT_EQ(LatkeGaugeCreateRandom(PETSC_COMM_WORLD, dims, grid(), 1, 0.0, &cold), 0);
  EXPECT_EQ(LatkeGaugeCreateEvolved(cold, 6.0, seed, 30, &hot), 0);
  LatkeGaugeDestroy(&cold);
  return hot;
}

cvec unit_links() {
  cvec u(static_cast<std::size_t>(D[0]) * D[1] * D[2] * D[3] * 36, 0.0);
  for (std::size_t s = 0; s < u.size() / 36; ++s)
    for (int mu = 0; mu < 4; ++mu)
      for (int r = 0; r < 3; ++r) u[(s * 4 + mu) * 9 + r * 4] = 1.0;
  return u;
}

/// Both methods: the Fourier transforms run across split directions too.
std::vector<LatkeGaugeFixMethod> methods_for(LatkeGauge, LatkeGaugeFix) {
  return {LATKE_GAUGE_FIX_FOURIER, LATKE_GAUGE_FIX_OVERRELAX};
}

// A pure gauge g(x) g(x+mu)^dag is fixed back to unit links (Landau), or to unit spatial links and
// time links constant on each slice (Coulomb): the maximum of the functional is known exactly.
// By each method.
TEST(GaugeFixing, PureGaugeIsFixedToUnitLinks) {
  LatkeGauge pure = gauge_from(gauge_transform(unit_links(), 41));
  for (LatkeGaugeFix type : {LATKE_GAUGE_FIX_LANDAU, LATKE_GAUGE_FIX_COULOMB})
    for (LatkeGaugeFixMethod method : methods_for(pure, type)) {
      LatkeGauge fixed = nullptr;
      LatkeGaugeFixInfo info;
      ASSERT_PETSC(
          LatkeGaugeCreateGaugeFixed(pure, type, method, 1e-14, 5000, PETSC_DEFAULT, PETSC_DEFAULT, &fixed, &info));
      EXPECT_EQ(info.method, method);
      EXPECT_TRUE(info.converged) << "theta " << info.theta << " after " << info.iterations;
      EXPECT_NEAR(info.functional, 1.0, 1e-10);
      const cvec u = global_links(fixed);
      const long vol = static_cast<long>(D[0]) * D[1] * D[2] * D[3];
      for (long s = 0; s < vol; ++s) {
        const std::array<int, 4> x = site_of(s);
        for (int mu = 0; mu < 3; ++mu)
          ASSERT_LT((link(u, x, mu) - Eigen::Matrix3cd::Identity()).norm(), 1e-6)
              << "type " << type << " method " << method << " mu " << mu;
        const std::array<int, 4> x0 = {0, 0, 0, x[3]};
        if (type == LATKE_GAUGE_FIX_LANDAU)
          ASSERT_LT((link(u, x, 3) - Eigen::Matrix3cd::Identity()).norm(), 1e-6) << "method " << method;
        else
          ASSERT_LT((link(u, x, 3) - link(u, x0, 3)).norm(), 1e-6) << "method " << method;  // one matrix per slice
      }
      LatkeGaugeDestroy(&fixed);
    }
  LatkeGaugeDestroy(&pure);
}

// On a thermalised configuration: theta below the tolerance, measured here from the links
// themselves; gauge invariants unchanged; the functional grown; the time links transformed too.
TEST(GaugeFixing, ThermalizedLinksReachTheGaugeAndKeepTheirPlaquette) {
  LatkeGauge hot = thermalized(3);
  // far from any gauge: a random transformation of it
  LatkeGauge g = gauge_from(gauge_transform(global_links(hot), 42));
  const cvec before = global_links(g);
  PetscReal plaq = 0, plaq_fixed = 0;
  ASSERT_PETSC(LatkeGaugeGetPlaquette(g, &plaq));
  for (LatkeGaugeFix type : {LATKE_GAUGE_FIX_COULOMB, LATKE_GAUGE_FIX_LANDAU})
    for (LatkeGaugeFixMethod method : methods_for(g, type)) {
      const int ndir = type == LATKE_GAUGE_FIX_COULOMB ? 3 : 4;
      LatkeGauge fixed = nullptr;
      LatkeGaugeFixInfo info;
      ASSERT_PETSC(
          LatkeGaugeCreateGaugeFixed(g, type, method, 1e-12, 20000, PETSC_DEFAULT, PETSC_DEFAULT, &fixed, &info));
      EXPECT_EQ(info.method, method);
      EXPECT_TRUE(info.converged) << "theta " << info.theta << " after " << info.iterations << " method " << method;
      const cvec after = global_links(fixed);
      const auto [theta, f] = divergence(after, ndir);
      EXPECT_LT(theta, 1e-12);
      EXPECT_NEAR(f, info.functional, 1e-12);
      EXPECT_NEAR(theta, info.theta, 1e-13);
      EXPECT_GT(f, divergence(before, ndir).second + 0.1);
      EXPECT_GT(divergence(before, ndir).first, 1e-2);  // the start was far from the gauge
      ASSERT_PETSC(LatkeGaugeGetPlaquette(fixed, &plaq_fixed));
      EXPECT_NEAR(plaq_fixed, plaq, 1e-12);
      // Polyakov-type invariant of the time links: tr of the product along t at one spatial site
      Eigen::Matrix3cd pa = Eigen::Matrix3cd::Identity(), pb = pa;
      for (int t = 0; t < T; ++t) {
        pa = pa * link(before, {1, 2, 3, t}, 3);
        pb = pb * link(after, {1, 2, 3, t}, 3);
      }
      EXPECT_LT(std::abs(pa.trace() - pb.trace()), 1e-12);
      LatkeGaugeDestroy(&fixed);
    }
  LatkeGaugeDestroy(&g);
  LatkeGaugeDestroy(&hot);
}

TEST(GaugeFixing, NotConvergingIsAnErrorUnlessAskedAndBadParametersAreNamed) {
  LatkeGauge g = gauge_from(random_links(43)), fixed = nullptr;
  LatkeGaugeFixInfo info;
  PetscPushErrorHandler(PetscReturnErrorHandler, nullptr);
  const LatkeGaugeFix C = LATKE_GAUGE_FIX_COULOMB;
  const LatkeGaugeFixMethod A = LATKE_GAUGE_FIX_AUTO, O = LATKE_GAUGE_FIX_OVERRELAX;
  const PetscReal def = PETSC_DEFAULT;
  EXPECT_NE(LatkeGaugeCreateGaugeFixed(g, C, A, 1e-12, 2, def, def, &fixed, nullptr), 0);
  EXPECT_EQ(fixed, nullptr);
  EXPECT_NE(LatkeGaugeCreateGaugeFixed(g, C, O, 1e-12, 100, 2.0, def, &fixed, &info), 0);  // omega
  EXPECT_NE(LatkeGaugeCreateGaugeFixed(g, C, A, 1e-12, 100, def, 2.0, &fixed, &info), 0);  // alpha
  EXPECT_NE(LatkeGaugeCreateGaugeFixed(g, C, A, 1e-12, 100, def, 0.0, &fixed, &info), 0);  // alpha
  EXPECT_NE(LatkeGaugeCreateGaugeFixed(g, C, A, 0.0, 100, def, def, &fixed, &info), 0);    // tol
  EXPECT_NE(LatkeGaugeCreateGaugeFixed(g, static_cast<LatkeGaugeFix>(9), A, 1e-12, 100, def, def, &fixed, &info), 0);
  EXPECT_NE(LatkeGaugeCreateGaugeFixed(g, C, static_cast<LatkeGaugeFixMethod>(9), 1e-12, 100, def, def, &fixed, &info),
            0);
  PetscPopErrorHandler();
  for (LatkeGaugeFixMethod method : methods_for(g, C)) {
    ASSERT_PETSC(LatkeGaugeCreateGaugeFixed(g, C, method, 1e-12, 2, def, def, &fixed, &info));
    EXPECT_FALSE(info.converged);
    EXPECT_EQ(info.iterations, 2);
    EXPECT_GT(info.theta, 1e-12);
    LatkeGaugeDestroy(&fixed);
  }
  LatkeGaugeDestroy(&g);
}

// ---- wall sources and sinks ------------------------------------------------------------------

std::vector<Vec> wall_propagator(Mat A, PetscInt t0) {
  return solve_columns(A, [&](Vec b, int j) { return LatkeVecSetWallSource(A, b, t0, j / 3, j % 3); });
}

std::vector<cplx> wall_sink(Mat A, const std::vector<Vec>& cols, PetscInt t0) {
  std::vector<LatkeMesonChannel> ch;
  for (int k = 0; k < n_channels; ++k) ch.push_back(static_cast<LatkeMesonChannel>(k));
  std::vector<PetscScalar> c(n_channels * T);
  EXPECT_EQ(MatLatkeMesonCorrelatorsWallSink(A, cols.data(), t0, n_channels, ch.data(), c.data()), 0);
  return std::vector<cplx>(c.begin(), c.end());
}

// The wall sink against the columns summed over each slice here and contracted by site_term.
TEST(WallSources, WallSinkIsTheContractionOfTheSliceSums) {
  LatkeGauge g = gauge_from(random_links(51));
  Mat A = wilson(g, 0.105, 1.2);
  const PetscInt t0 = 3;
  std::vector<Vec> cols = wall_propagator(A, t0);
  const std::vector<cplx> got = wall_sink(A, cols, t0);
  const latke::Lattice& lat = lattice_of(A);
  std::vector<cplx> local(static_cast<std::size_t>(T) * 144, 0.0), sums(local.size());
  std::vector<PetscScalar> lex(static_cast<std::size_t>(lat.volume()) * 12);
  for (int j = 0; j < 12; ++j) {
    ASSERT_PETSC(LatkeVecGetLexicographic(A, cols[j], lex.data()));
    for (long x = 0; x < lat.volume(); ++x) {
      const int t = lat.coords_of(x)[3] + lat.offset()[3];
      for (int r = 0; r < 12; ++r) local[(static_cast<std::size_t>(t) * 12 + r) * 12 + j] += cplx(lex[x * 12 + r]);
    }
  }
  MPI_Allreduce(local.data(), sums.data(), static_cast<int>(sums.size()), MPI_C_DOUBLE_COMPLEX, MPI_SUM,
                PETSC_COMM_WORLD);
  const auto ch = channel_gammas();
  std::vector<cplx> want(n_channels * T);
  for (int t = 0; t < T; ++t) {
    Eigen::MatrixXcd Sw(12, 12);
    for (int r = 0; r < 12; ++r)
      for (int j = 0; j < 12; ++j) Sw(r, j) = sums[(static_cast<std::size_t>((t0 + t) % T) * 12 + r) * 12 + j];
    for (int k = 0; k < n_channels; ++k) want[k * T + t] = site_term(ch[k], Sw, Sw);
  }
  for (int k = 0; k < n_channels; ++k) EXPECT_LT(channel_error(got, want, k), 1e-12) << "channel " << k;
  EXPECT_GT(got[LATKE_MESON_PION * T + 1].real(), 0);
  // The nucleon at the wall sink: Wick's theorem on the slice sums, -1 for sinks across the boundary.
  std::vector<PetscScalar> nw(2 * T);
  ASSERT_PETSC(MatLatkeNucleonCorrelatorsWallSink(A, cols.data(), t0, nw.data()));
  const Spin P[2] = {(Spin::Identity() + gamma(3)) / 2.0, (Spin::Identity() - gamma(3)) / 2.0};
  double scale = 0;
  std::vector<cplx> nwant(2 * T);
  for (int t = 0; t < T; ++t) {
    const int tg = (t0 + t) % T;
    const Spin G = wick_nucleon([&](int s, int c, int s0, int c0) {
      return sums[(static_cast<std::size_t>(tg) * 12 + 3 * s + c) * 12 + 3 * s0 + c0];
    });
    for (int k = 0; k < 2; ++k) {
      nwant[k * T + t] = (tg < t0 ? -1.0 : 1.0) * (P[k] * G).trace();
      scale = std::max(scale, std::abs(nwant[k * T + t]));
    }
  }
  ASSERT_GT(scale, 0);
  for (int i = 0; i < 2 * T; ++i) EXPECT_LT(std::abs(cplx(nw[i]) - nwant[i]), 1e-12 * scale) << "entry " << i;
  destroy(cols);
  MatDestroy(&A);
  LatkeGaugeDestroy(&g);
}

// Gauge-fixed wall sources: a configuration and a random gauge transformation of it, each fixed to
// the Coulomb gauge, reach the same maximum of the functional and give the same wall-point and
// wall-wall correlators (Coulomb gauge leaves only a transformation constant on each slice, which
// the traces do not see); unfixed, they differ. At theta < 1e-15 a link is still about
// sqrt(theta) / lambda_min(Faddeev-Popov) from the maximum, so the fixed correlators agree to a few
// 1e-7 (how close depends on the configuration and the backend's rounding), three orders of
// magnitude below the gauge dependence of the unfixed ones (at least a few 1e-3 in the pion).
TEST(WallSources, CoulombGaugeFixedWallCorrelatorsDoNotDependOnTheStartingGauge) {
  LatkeGauge hot = thermalized(5);
  LatkeGauge moved = gauge_from(gauge_transform(global_links(hot), 53));
  const PetscInt t0 = 2;
  std::vector<std::vector<cplx>> wp, ww, nn;
  std::vector<double> functional;
  for (LatkeGauge g : {hot, moved}) {
    for (bool fix : {false, true}) {
      LatkeGauge use = g, fixed = nullptr;
      if (fix) {
        LatkeGaugeFixInfo info;
        ASSERT_PETSC(LatkeGaugeCreateGaugeFixed(g, LATKE_GAUGE_FIX_COULOMB, LATKE_GAUGE_FIX_AUTO, 1e-15, 20000,
                                                PETSC_DEFAULT, PETSC_DEFAULT, &fixed, &info));
        EXPECT_TRUE(info.converged) << "theta " << info.theta << " after " << info.iterations;
        functional.push_back(info.functional);
        use = fixed;
      }
      Mat A = wilson(use, 0.11, 1.0);
      std::vector<Vec> cols = wall_propagator(A, t0);
      wp.push_back(correlators(A, cols, t0));
      ww.push_back(wall_sink(A, cols, t0));
      std::vector<PetscScalar> n(2 * T);
      ASSERT_PETSC(MatLatkeNucleonCorrelatorsWallSink(A, cols.data(), t0, n.data()));
      nn.emplace_back(n.begin(), n.end());
      destroy(cols);
      MatDestroy(&A);
      LatkeGaugeDestroy(&fixed);
    }
  }
  // [0] hot, [1] hot fixed, [2] moved, [3] moved fixed
  ASSERT_EQ(functional.size(), 2u);
  EXPECT_NEAR(functional[1], functional[0], 1e-12);  // one maximum, not two Gribov copies
  for (int k = 0; k < n_channels; ++k) {
    EXPECT_LT(channel_error(wp[3], wp[1], k), 1e-6) << "wall-point channel " << k;
    EXPECT_LT(channel_error(ww[3], ww[1], k), 1e-6) << "wall-wall channel " << k;
  }
  for (int k = 0; k < 2; ++k) EXPECT_LT(channel_error(nn[3], nn[1], k), 1e-6) << "wall-wall nucleon " << k;
  EXPECT_GT(channel_error(wp[2], wp[0], LATKE_MESON_PION), 1e-3);  // unfixed: gauge dependent
  EXPECT_GT(channel_error(ww[2], ww[0], LATKE_MESON_PION), 1e-3);
  LatkeGaugeDestroy(&moved);
  LatkeGaugeDestroy(&hot);
}

// Two hopping parameters on random links: gauge invariant, and exchanging quark and antiquark
// conjugates the pion, sum_x Tr[S_2 S_1^dag] = conj(sum_x Tr[S_1 S_2^dag]).
TEST(Mesons, TwoQuarkMassesAreGaugeInvariantAndConjugateUnderExchange) {
  const cvec links = random_links(61);
  LatkeGauge g = gauge_from(links), h = gauge_from(gauge_transform(links, 62));
  const PetscInt site[4] = {1, 1, 2, 3};
  const std::vector<std::array<int, 3>> rest = {{0, 0, 0}};
  std::vector<std::vector<cplx>> c;
  std::vector<cplx> swapped;
  for (LatkeGauge u : {g, h}) {
    Mat A = wilson(u, 0.105, 1.2), B = wilson(u, 0.095, 1.2);
    std::vector<Vec> sa = propagator(A, site), sb = propagator(B, site);
    c.push_back(pair_correlators(A, sa, sb, site, rest)[0]);
    if (u == g) swapped = pair_correlators(A, sb, sa, site, rest)[0];
    destroy(sa);
    destroy(sb);
    MatDestroy(&A);
    MatDestroy(&B);
  }
  for (int k = 0; k < n_channels; ++k) EXPECT_LT(channel_error(c[1], c[0], k), 1e-9) << "channel " << k;
  for (int t = 0; t < T; ++t)
    EXPECT_LT(std::abs(swapped[LATKE_MESON_PION * T + t] - std::conj(c[0][LATKE_MESON_PION * T + t])),
              1e-12 * std::abs(c[0][LATKE_MESON_PION * T]))
        << "t = " << t;
  LatkeGaugeDestroy(&g);
  LatkeGaugeDestroy(&h);
}

// The one-end trick: spin-colour diluted noise on one time slice, its 12 solutions contracted
// like a propagator's columns, averages over the noise to the sum of the slice's point-source
// correlators. The mean over seeds must agree with that sum within its statistical error.
TEST(Mesons, DilutedNoiseOnASliceAveragesItsPointSources) {
  LatkeGauge g = gauge_from(random_links(21));
  Mat A = wilson(g, 0.1, 1.0);
  const PetscInt t0 = 3;
  std::vector<cplx> exact(n_channels * T, 0.0);
  for (PetscInt y = 0; y < D[0] * D[1] * D[2]; ++y) {
    const PetscInt site[4] = {y % D[0], y / D[0] % D[1], y / (D[0] * D[1]), t0};
    std::vector<Vec> s = propagator(A, site);
    const std::vector<cplx> c = correlators(A, s, t0);
    for (std::size_t i = 0; i < c.size(); ++i) exact[i] += c[i];
    destroy(s);
  }
  constexpr int seeds = 16;
  std::vector<double> sum(n_channels * T, 0.0), sum2(n_channels * T, 0.0);
  for (int k = 0; k < seeds; ++k) {
    std::vector<Vec> s = solve_columns(A, [&](Vec b, int j) {
      return LatkeVecSetDilutedNoiseSource(A, b, LATKE_NOISE_Z4, 100 + k, t0, j / 3, j % 3);
    });
    const std::vector<cplx> c = correlators(A, s, t0);
    for (std::size_t i = 0; i < c.size(); ++i) {
      sum[i] += c[i].real();
      sum2[i] += c[i].real() * c[i].real();
    }
    destroy(s);
  }
  for (int ch : {LATKE_MESON_PION, LATKE_MESON_RHO, LATKE_MESON_A0}) {
    double spread = 0;
    for (int t = 0; t < T; ++t) {
      const int i = ch * T + t;
      const double mean = sum[i] / seeds, var = (sum2[i] / seeds - mean * mean) / (seeds - 1);
      const double err = std::sqrt(std::max(var, 0.0));
      spread = std::max(spread, err);
      EXPECT_LT(std::abs(mean - exact[i].real()), 5 * err + 1e-9 * std::abs(exact[ch * T].real()))
          << "channel " << ch << " t " << t << ": " << mean << " +- " << err << " against " << exact[i].real();
    }
    EXPECT_GT(spread, 0) << "channel " << ch << ": no noise at all";
  }
  // The noise is the same for the 12 dilutions, and only on the slice.
  Vec b0, b5;
  ASSERT_PETSC(MatLatkeCreateFullVecs(A, &b0, &b5));
  ASSERT_PETSC(LatkeVecSetDilutedNoiseSource(A, b0, LATKE_NOISE_Z2, 7, t0, 0, 0));
  ASSERT_PETSC(LatkeVecSetDilutedNoiseSource(A, b5, LATKE_NOISE_Z2, 7, t0, 1, 2));
  const latke::Lattice& lat = lattice_of(A);
  std::vector<PetscScalar> l0(lat.volume() * 12), l5(lat.volume() * 12);
  ASSERT_PETSC(LatkeVecGetLexicographic(A, b0, l0.data()));
  ASSERT_PETSC(LatkeVecGetLexicographic(A, b5, l5.data()));
  for (long i = 0; i < lat.volume(); ++i) {
    const bool on = lat.coords_of(i)[3] + lat.offset()[3] == t0;
    EXPECT_EQ(std::abs(cplx(l0[i * 12])), on ? 1.0 : 0.0);
    EXPECT_EQ(cplx(l0[i * 12]), cplx(l5[i * 12 + 5]));
  }
  PetscPushErrorHandler(PetscReturnErrorHandler, nullptr);
  EXPECT_NE(LatkeVecSetDilutedNoiseSource(A, b0, LATKE_NOISE_Z2, 7, T, 0, 0), 0);
  PetscPopErrorHandler();
  VecDestroy(&b0);
  VecDestroy(&b5);
  MatDestroy(&A);
  LatkeGaugeDestroy(&g);
}

#if defined(LATKE_HAVE_HDF5_VIEWER)
TEST(Propagators, WrittenToHdf5AndReadBackAreBitIdentical) {
  LatkeGauge g = gauge_from(random_links(11));
  Mat A = wilson(g, 0.11, 1.0);
  const PetscInt site[4] = {0, 3, 1, 2};
  std::vector<Vec> s = propagator(A, site), back(12);
  const char* path = "spectroscopy_propagator.h5";
  PetscViewer v;
  ASSERT_PETSC(PetscViewerHDF5Open(PETSC_COMM_WORLD, path, FILE_MODE_WRITE, &v));
  ASSERT_PETSC(PetscViewerHDF5PushGroup(v, "/config_0/kappa_0"));
  ASSERT_PETSC(LatkePropagatorView(A, s.data(), v));
  ASSERT_PETSC(PetscViewerHDF5PopGroup(v));
  ASSERT_PETSC(PetscViewerDestroy(&v));
  for (Vec& x : back) ASSERT_PETSC(MatLatkeCreateFullVecs(A, &x, nullptr));
  ASSERT_PETSC(PetscViewerHDF5Open(PETSC_COMM_WORLD, path, FILE_MODE_READ, &v));
  ASSERT_PETSC(PetscViewerHDF5PushGroup(v, "/config_0/kappa_0"));
  ASSERT_PETSC(LatkePropagatorLoad(A, back.data(), v));
  ASSERT_PETSC(PetscViewerHDF5PopGroup(v));
  // A group the file does not have is an error, not zeros.
  ASSERT_PETSC(PetscViewerHDF5PushGroup(v, "/config_1/kappa_0"));
  PetscPushErrorHandler(PetscReturnErrorHandler, nullptr);
  EXPECT_NE(LatkePropagatorLoad(A, back.data(), v), 0);
  PetscPopErrorHandler();
  ASSERT_PETSC(PetscViewerDestroy(&v));
  for (int j = 0; j < 12; ++j) {
    PetscInt n = 0;
    const PetscScalar *a, *b;
    ASSERT_PETSC(VecGetLocalSize(s[j], &n));
    ASSERT_PETSC(VecGetArrayRead(s[j], &a));
    ASSERT_PETSC(VecGetArrayRead(back[j], &b));
    EXPECT_EQ(std::memcmp(a, b, sizeof(PetscScalar) * n), 0) << "column " << j;
    ASSERT_PETSC(VecRestoreArrayRead(s[j], &a));
    ASSERT_PETSC(VecRestoreArrayRead(back[j], &b));
  }
  PetscReal norm = 0;
  ASSERT_PETSC(VecNorm(back[5], NORM_2, &norm));
  EXPECT_GT(norm, 0);  // a solution, not zeros
  int rank = 0;
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  if (rank == 0) std::remove(path);
  destroy(s);
  destroy(back);
  MatDestroy(&A);
  LatkeGaugeDestroy(&g);
}
#endif

// ---- smearing ------------------------------------------------------------------------------

using M3 = Eigen::Matrix3cd;

long neighbour(long s, int mu, int step) {
  std::array<int, 4> c{static_cast<int>(s % D[0]), static_cast<int>(s / D[0] % D[1]),
                       static_cast<int>(s / (D[0] * D[1]) % D[2]), static_cast<int>(s / (D[0] * D[1] * D[2]))};
  c[mu] = (c[mu] + step + D[mu]) % D[mu];
  return latke::lex_site(c, D);
}

M3 link(const cvec& links, long s, int mu) {
  M3 u;
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 3; ++k) u(r, k) = links[(s * 4 + mu) * 9 + r * 3 + k];
  return u;
}

/// The reference of link_smearing.h on the global links: the SU(3) projection by the SVD's
/// polar factor, stout's exponential by the eigenvectors of Q.
cvec reference_smeared_links(cvec links, LatkeLinkSmear type, int steps, double alpha, bool spatial) {
  const int nd = spatial ? 3 : 4;
  const long vol = static_cast<long>(D[0]) * D[1] * D[2] * D[3];
  for (int step = 0; step < steps; ++step) {
    cvec next = links;
    for (long s = 0; s < vol; ++s)
      for (int mu = 0; mu < nd; ++mu) {
        M3 S = M3::Zero();
        for (int nu = 0; nu < nd; ++nu) {
          if (nu == mu) continue;
          const long sn = neighbour(s, nu, -1);
          S += link(links, s, nu) * link(links, neighbour(s, nu, 1), mu) *
               link(links, neighbour(s, mu, 1), nu).adjoint();
          S += link(links, sn, nu).adjoint() * link(links, sn, mu) * link(links, neighbour(sn, mu, 1), nu);
        }
        const M3 U = link(links, s, mu);
        M3 W;
        if (type == LATKE_LINK_SMEAR_APE) {
          const M3 X = (1 - alpha) * U + alpha / (2 * (nd - 1)) * S;
          Eigen::JacobiSVD<M3> svd(X, Eigen::ComputeFullU | Eigen::ComputeFullV);
          W = svd.matrixU() * svd.matrixV().adjoint();
          W *= std::exp(cplx(0, -std::arg(W.determinant()) / 3));
        } else {
          const M3 Om = alpha * S * U.adjoint();
          const M3 A = Om.adjoint() - Om;
          const M3 Q = cplx(0, 0.5) * (A - A.trace() / 3.0 * M3::Identity());
          Eigen::SelfAdjointEigenSolver<M3> es(Q);
          M3 E = M3::Zero();
          for (int k = 0; k < 3; ++k) E(k, k) = std::exp(cplx(0, es.eigenvalues()(k)));
          W = es.eigenvectors() * E * es.eigenvectors().adjoint() * U;
        }
        for (int r = 0; r < 3; ++r)
          for (int k = 0; k < 3; ++k) next[(s * 4 + mu) * 9 + r * 3 + k] = W(r, k);
      }
    links = next;
  }
  return links;
}

cvec links_of(LatkeGauge g, const latke::Lattice& lat) {
  std::vector<PetscScalar> l(static_cast<std::size_t>(lat.volume()) * 36);
  EXPECT_EQ(LatkeGaugeGetLinks(g, l.data()), 0);
  return cvec(l.begin(), l.end());
}

double max_diff(const cvec& a, const cvec& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

// APE (spatial) and stout (all four directions) against the reference, on 1 rank and across the
// ranks' boundary in t: SU(3) links, the time links of spatial smearing untouched, and gauge
// covariance, smear(g U) = g smear(U).
TEST(Smearing, LinksMatchTheReferenceStaySu3AndTransformAsLinks) {
  const cvec links = random_links(31);
  LatkeGauge g = gauge_from(links);
  Mat P = wilson(g, 0.1, 1.0);
  const latke::Lattice& lat = lattice_of(P);
  struct Case {
    LatkeLinkSmear type;
    int steps;
    double alpha;
    PetscBool spatial;
  };
  for (const Case& c :
       {Case{LATKE_LINK_SMEAR_APE, 3, 0.5, PETSC_TRUE}, Case{LATKE_LINK_SMEAR_STOUT, 3, 0.15, PETSC_FALSE},
        Case{LATKE_LINK_SMEAR_APE, 2, 0.4, PETSC_FALSE}}) {
    SCOPED_TRACE(c.type == LATKE_LINK_SMEAR_APE ? "APE" : "stout");
    LatkeGauge sm = nullptr, smt = nullptr;
    ASSERT_PETSC(LatkeGaugeCreateSmeared(g, c.type, c.steps, c.alpha, c.spatial, &sm));
    const cvec got = links_of(sm, lat), before = local_part(lat, links, 36);
    const cvec want = local_part(lat, reference_smeared_links(links, c.type, c.steps, c.alpha, c.spatial), 36);
    EXPECT_LT(max_diff(got, want), 1e-12);
    EXPECT_GT(max_diff(got, before), 0.1);  // smearing moved the links
    double worst = 0;
    for (long s = 0; s < lat.volume(); ++s)
      for (int mu = 0; mu < 4; ++mu) {
        M3 u;
        for (int k = 0; k < 9; ++k) u(k / 3, k % 3) = got[(s * 4 + mu) * 9 + k];
        worst = std::max(worst, (u * u.adjoint() - M3::Identity()).cwiseAbs().maxCoeff());
        worst = std::max(worst, std::abs(u.determinant() - 1.0));
        if (c.spatial && mu == 3) {
          for (int k = 0; k < 9; ++k) EXPECT_EQ(got[(s * 4 + 3) * 9 + k], before[(s * 4 + 3) * 9 + k]);
        }
      }
    EXPECT_LT(worst, 1e-13);
    // Covariance: the smeared transformed links are the transformed smeared links.
    LatkeGauge h = gauge_from(gauge_transform(links, 32));
    ASSERT_PETSC(LatkeGaugeCreateSmeared(h, c.type, c.steps, c.alpha, c.spatial, &smt));
    const cvec global_sm = reference_smeared_links(links, c.type, c.steps, c.alpha, c.spatial);
    EXPECT_LT(max_diff(links_of(smt, lat), local_part(lat, gauge_transform(global_sm, 32), 36)), 1e-12);
    LatkeGaugeDestroy(&h);
    LatkeGaugeDestroy(&sm);
    LatkeGaugeDestroy(&smt);
  }
  // A link that is not finite gives smeared links that are not SU(3): an error, not a result.
  std::vector<latke::Complex<double>> bad(static_cast<std::size_t>(lat.volume()) * 36, {0.0, 0.0});
  const cvec mine = local_part(lat, links, 36);
  for (std::size_t k = 0; k < bad.size(); ++k) bad[k] = {mine[k].real(), mine[k].imag()};
  bad[5 * 36 + 4] = {std::nan(""), 0.0};
  latke::LinkSmearing ape;
  ape.type = latke::LinkSmearingType::ape;
  ape.steps = 1;
  ape.alpha = 0.5;
  EXPECT_THROW(latke::smear_links(lat, bad, ape, latke::petsc::context_of(P).op->backend()), latke::Error);
  LatkeGauge none = nullptr;
  PetscPushErrorHandler(PetscReturnErrorHandler, nullptr);
  EXPECT_NE(LatkeGaugeCreateSmeared(g, LATKE_LINK_SMEAR_APE, 2, 1.5, PETSC_TRUE, &none), 0);  // alpha out of range
  EXPECT_NE(LatkeGaugeCreateSmeared(g, LATKE_LINK_SMEAR_STOUT, -1, 0.1, PETSC_TRUE, &none), 0);
  PetscPopErrorHandler();
  EXPECT_EQ(none, nullptr);
  MatDestroy(&P);
  LatkeGaugeDestroy(&g);
}

/// The reference of quark_smearing.h on a global lexicographic field (12 numbers per site).
cvec reference_smeared_quark(const cvec& links, cvec psi, LatkeQuarkSmear type, int steps, double alpha) {
  const double b = type == LATKE_QUARK_SMEAR_WUPPERTAL ? alpha / (1 + 6 * alpha) : alpha * alpha / (4.0 * steps);
  const double a = type == LATKE_QUARK_SMEAR_WUPPERTAL ? 1 / (1 + 6 * alpha) : 1 - 6 * b;
  const long vol = static_cast<long>(D[0]) * D[1] * D[2] * D[3];
  using V3 = Eigen::Vector3cd;
  auto colour = [&](const cvec& f, long s, int sp) {
    return V3(f[s * 12 + 3 * sp], f[s * 12 + 3 * sp + 1], f[s * 12 + 3 * sp + 2]);
  };
  for (int step = 0; step < steps; ++step) {
    cvec next(psi.size());
    for (long s = 0; s < vol; ++s)
      for (int sp = 0; sp < 4; ++sp) {
        V3 h = V3::Zero();
        for (int i = 0; i < 3; ++i) {
          const long f = neighbour(s, i, 1), r = neighbour(s, i, -1);
          h += link(links, s, i) * colour(psi, f, sp) + link(links, r, i).adjoint() * colour(psi, r, sp);
        }
        const V3 o = a * colour(psi, s, sp) + b * h;
        for (int c = 0; c < 3; ++c) next[s * 12 + 3 * sp + c] = o(c);
      }
    psi = next;
  }
  return psi;
}

cvec lex_of(Mat A, Vec v) {
  const latke::Lattice& lat = lattice_of(A);
  std::vector<PetscScalar> l(static_cast<std::size_t>(lat.volume()) * 12);
  EXPECT_EQ(LatkeVecGetLexicographic(A, v, l.data()), 0);
  return cvec(l.begin(), l.end());
}

// Wuppertal and Gaussian smearing against the reference on random links and Z4 noise; on the
// free field, a smeared point source's plane-wave components are f(p)^N exactly.
TEST(Smearing, QuarkSmearingMatchesTheReferenceAndTheFreeField) {
  const cvec links = random_links(41);
  LatkeGauge g = gauge_from(links), unit = nullptr;
  ASSERT_PETSC(LatkeGaugeCreateRandom(PETSC_COMM_WORLD, dims, grid(), 1, 0.0, &unit));
  Mat A = wilson(g, 0.1, 1.0);
  const latke::Lattice& lat = lattice_of(A);
  Vec x;
  ASSERT_PETSC(MatLatkeCreateFullVecs(A, &x, nullptr));
  for (LatkeQuarkSmear type : {LATKE_QUARK_SMEAR_WUPPERTAL, LATKE_QUARK_SMEAR_GAUSSIAN}) {
    SCOPED_TRACE(type == LATKE_QUARK_SMEAR_WUPPERTAL ? "wuppertal" : "gaussian");
    const int steps = 5;
    const double alpha = type == LATKE_QUARK_SMEAR_WUPPERTAL ? 0.8 : 1.5;
    LatkeSmearer sm = nullptr;
    ASSERT_PETSC(MatLatkeSmearerCreate(A, g, type, steps, alpha, &sm));
    ASSERT_PETSC(LatkeVecSetNoiseSource(A, x, LATKE_NOISE_Z4, 5));
    // The noise's global field: every rank's part, gathered.
    const cvec before = lex_of(A, x);
    const long vol = static_cast<long>(D[0]) * D[1] * D[2] * D[3];
    cvec global(vol * 12, 0.0), sum(vol * 12);
    for (long s = 0; s < lat.volume(); ++s) {
      const latke::Coords c = lat.coords_of(s);
      long gs = 0;
      for (int mu = 3; mu >= 0; --mu) gs = gs * D[mu] + c[mu] + lat.offset()[mu];
      for (int k = 0; k < 12; ++k) global[gs * 12 + k] = before[s * 12 + k];
    }
    MPI_Allreduce(global.data(), sum.data(), static_cast<int>(2 * global.size()), MPI_DOUBLE, MPI_SUM,
                  PETSC_COMM_WORLD);
    ASSERT_PETSC(LatkeSmearerApply(sm, x, -1));
    const cvec want = local_part(lat, reference_smeared_quark(links, sum, type, steps, alpha), 12);
    EXPECT_LT(max_diff(lex_of(A, x), want), 1e-13);
    EXPECT_GT(max_diff(lex_of(A, x), before), 0.1);
    // One time slice (across the ranks' boundary on 2 ranks: slice 4 is the second rank's first):
    // that slice smeared, the others as they were.
    for (PetscInt ts : {PetscInt(4), PetscInt(7)}) {
      ASSERT_PETSC(LatkeVecSetNoiseSource(A, x, LATKE_NOISE_Z4, 5));
      ASSERT_PETSC(LatkeSmearerApply(sm, x, ts));
      const cvec got = lex_of(A, x);
      double d = 0;
      for (long s = 0; s < lat.volume(); ++s) {
        const bool on = lat.coords_of(s)[3] + lat.offset()[3] == ts;
        for (int k = 0; k < 12; ++k) d = std::max(d, std::abs(got[s * 12 + k] - (on ? want : before)[s * 12 + k]));
      }
      EXPECT_LT(d, 1e-13) << "slice " << ts;
    }
    LatkeSmearerDestroy(&sm);

    // Free field: a point source at y, smeared, is sum_p e^{ip(x-y)} f(p)^N / V3 on y's slice.
    ASSERT_PETSC(MatLatkeSmearerCreate(A, unit, type, steps, alpha, &sm));
    const PetscInt y[4] = {1, 3, 2, 5};
    ASSERT_PETSC(LatkeVecSetPointSource(A, x, y, 2, 1));
    ASSERT_PETSC(LatkeSmearerApply(sm, x, -1));
    const cvec psi = lex_of(A, x);
    const double b = type == LATKE_QUARK_SMEAR_WUPPERTAL ? alpha / (1 + 6 * alpha) : alpha * alpha / (4.0 * steps);
    const double a = type == LATKE_QUARK_SMEAR_WUPPERTAL ? 1 / (1 + 6 * alpha) : 1 - 6 * b;
    double worst = 0, off = 0;
    for (int n0 = 0; n0 < D[0]; ++n0)
      for (int n1 = 0; n1 < D[1]; ++n1)
        for (int n2 = 0; n2 < D[2]; ++n2) {
          const double p[3] = {2 * M_PI * n0 / D[0], 2 * M_PI * n1 / D[1], 2 * M_PI * n2 / D[2]};
          cplx ft = 0;
          for (long s = 0; s < lat.volume(); ++s) {
            const latke::Coords c = lat.coords_of(s);
            double ph = 0;
            for (int i = 0; i < 3; ++i) ph += p[i] * (c[i] + lat.offset()[i] - y[i]);
            if (c[3] + lat.offset()[3] == y[3]) ft += std::exp(cplx(0, -ph)) * psi[s * 12 + 3 * 2 + 1];
            for (int k = 0; k < 12; ++k)
              if (c[3] + lat.offset()[3] != y[3] || k != 7) off = std::max(off, std::abs(psi[s * 12 + k]));
          }
          cplx all = 0;
          MPI_Allreduce(&ft, &all, 2, MPI_DOUBLE, MPI_SUM, PETSC_COMM_WORLD);
          const double f = a + b * 2 * (std::cos(p[0]) + std::cos(p[1]) + std::cos(p[2]));
          worst = std::max(worst, std::abs(all - std::pow(f, steps)));
        }
    EXPECT_LT(worst, 1e-13);
    EXPECT_EQ(off, 0.0);  // other slices, spins and colours stay zero
    LatkeSmearerDestroy(&sm);
  }
  LatkeSmearer bad = nullptr;
  Vec half;
  ASSERT_PETSC(MatCreateVecs(A, &half, nullptr));
  ASSERT_PETSC(MatLatkeSmearerCreate(A, g, LATKE_QUARK_SMEAR_WUPPERTAL, 3, 1.0, &bad));
  PetscPushErrorHandler(PetscReturnErrorHandler, nullptr);
  EXPECT_NE(LatkeSmearerApply(bad, half, -1), 0);  // a parity vector
  EXPECT_NE(LatkeSmearerApply(bad, x, T), 0);      // a slice past the lattice
  LatkeSmearerDestroy(&bad);
  EXPECT_NE(MatLatkeSmearerCreate(A, g, LATKE_QUARK_SMEAR_WUPPERTAL, 3, -1.0, &bad), 0);
  PetscPopErrorHandler();
  EXPECT_EQ(bad, nullptr);
  VecDestroy(&half);
  VecDestroy(&x);
  MatDestroy(&A);
  LatkeGaugeDestroy(&g);
  LatkeGaugeDestroy(&unit);
}

// A smeared-source, smeared-sink propagator: correlators invariant under a gauge transformation,
// and C_pi(t) = sum |K S K|^2 (gamma_5-hermiticity holds for K M^-1 K).
TEST(Smearing, SmearedCorrelatorsAreGaugeInvariantAndThePionIsTheSumOfSquares) {
  const cvec links = random_links(51);
  LatkeGauge g = gauge_from(links), h = gauge_from(gauge_transform(links, 52));
  const double kappa = 0.105, csw = 1.2;
  const PetscInt site[4] = {1, 2, 3, 4};
  std::vector<cplx> c[2];
  std::vector<double> sq(T, 0.0), all(T);
  for (int k = 0; k < 2; ++k) {
    LatkeGauge u = k == 0 ? g : h, ape = nullptr;
    ASSERT_PETSC(LatkeGaugeCreateSmeared(u, LATKE_LINK_SMEAR_APE, 4, 0.5, PETSC_TRUE, &ape));
    Mat A = wilson(u, kappa, csw);
    LatkeSmearer sm = nullptr;
    ASSERT_PETSC(MatLatkeSmearerCreate(A, ape, LATKE_QUARK_SMEAR_WUPPERTAL, 6, 2.0, &sm));
    std::vector<Vec> cols = solve_columns(A, [&](Vec b, int j) {
      PetscErrorCode e = LatkeVecSetPointSource(A, b, site, j / 3, j % 3);
      return e ? e : LatkeSmearerApply(sm, b, site[3]);
    });
    for (Vec v : cols) ASSERT_PETSC(LatkeSmearerApply(sm, v, -1));
    c[k] = correlators(A, cols, site[3]);
    if (k == 0) {
      const latke::Lattice& lat = lattice_of(A);
      for (Vec v : cols) {
        const cvec l = lex_of(A, v);
        for (long s = 0; s < lat.volume(); ++s) {
          const int t = lat.coords_of(s)[3] + lat.offset()[3];
          for (int i = 0; i < 12; ++i) sq[(t - site[3] + T) % T] += std::norm(l[s * 12 + i]);
        }
      }
    }
    destroy(cols);
    LatkeSmearerDestroy(&sm);
    MatDestroy(&A);
    LatkeGaugeDestroy(&ape);
  }
  for (int k = 0; k < n_channels; ++k) EXPECT_LT(channel_error(c[1], c[0], k), 1e-9) << "channel " << k;
  MPI_Allreduce(sq.data(), all.data(), T, MPI_DOUBLE, MPI_SUM, PETSC_COMM_WORLD);
  for (int t = 0; t < T; ++t) EXPECT_NEAR(c[0][LATKE_MESON_PION * T + t].real(), all[t], 1e-12 * all[0]) << "t = " << t;
  LatkeGaugeDestroy(&g);
  LatkeGaugeDestroy(&h);
}

TEST(Mesons, BadInputIsNamed) {
  LatkeGauge g;
  ASSERT_PETSC(LatkeGaugeCreateRandom(PETSC_COMM_WORLD, dims, grid(), 1, 0.0, &g));
  Mat A = wilson(g, 0.1, 1.0);
  std::vector<Vec> cols(12);
  for (Vec& v : cols) ASSERT_PETSC(MatLatkeCreateFullVecs(A, &v, nullptr));
  LatkeMesonChannel pion = LATKE_MESON_PION, bad = static_cast<LatkeMesonChannel>(42);
  std::vector<PetscScalar> c(T);
  Vec half;
  ASSERT_PETSC(MatCreateVecs(A, &half, nullptr));
  PetscPushErrorHandler(PetscReturnErrorHandler, nullptr);
  EXPECT_NE(MatLatkeMesonCorrelators(A, cols.data(), T, 1, &pion, c.data()), 0);  // t0 past the lattice
  EXPECT_NE(MatLatkeMesonCorrelators(A, cols.data(), 0, 1, &bad, c.data()), 0);
  std::swap(cols[3], half);
  EXPECT_NE(MatLatkeMesonCorrelators(A, cols.data(), 0, 1, &pion, c.data()), 0);  // a parity vector
  std::swap(cols[3], half);
  const PetscInt site[4] = {0, 0, 0, 0}, outside[4] = {0, 4, 0, 0}, too_fast[3] = {0, 3, 0};
  EXPECT_NE(MatLatkeMesonCorrelatorsMomenta(A, cols.data(), outside, 1, too_fast, 1, &pion, c.data()), 0);
  EXPECT_NE(MatLatkeMesonCorrelatorsMomenta(A, cols.data(), site, 1, too_fast, 1, &pion, c.data()), 0);  // |n| > L/2
  EXPECT_NE(MatLatkeMesonCorrelatorsMomenta(A, cols.data(), site, 1, nullptr, 1, &pion, c.data()), 0);
  std::vector<PetscScalar> cn(2 * T);
  const PetscInt rest[3] = {0, 0, 0};
  EXPECT_NE(MatLatkeNucleonCorrelators(A, cols.data(), site, 0, rest, cn.data()), 0);  // no momentum
  EXPECT_NE(MatLatkeNucleonCorrelators(A, cols.data(), outside, 1, rest, cn.data()), 0);
  EXPECT_NE(MatLatkeNucleonCorrelators(A, cols.data(), site, 1, too_fast, cn.data()), 0);
  LatkeBaryonChannel bad_baryon = static_cast<LatkeBaryonChannel>(7);
  const char* name = nullptr;
  EXPECT_NE(LatkeBaryonChannelGetName(bad_baryon, &name), 0);
  {  // antiperiodic in space: a baryon's momenta would shift, so it is refused
    LatkeWilsonCloverParams p;
    LatkeWilsonCloverParamsDefault(&p);
    p.kappa = 0.1;
    p.boundary_phase[0] = -1.0;
    Mat Ap = nullptr;
    ASSERT_PETSC(MatCreateLatkeWilsonClover(g, LATKE_OPERATOR_EVEN_ODD, &p, nullptr, &Ap));
    EXPECT_NE(MatLatkeNucleonCorrelators(Ap, cols.data(), site, 1, rest, cn.data()), 0);
    MatDestroy(&Ap);
  }
  PetscPopErrorHandler();
  ASSERT_PETSC(LatkeBaryonChannelGetName(LATKE_BARYON_NUCLEON_MINUS, &name));
  EXPECT_STREQ(name, "nucleon_minus");
  EXPECT_EQ(MatLatkeNucleonCorrelators(A, cols.data(), site, 1, rest, cn.data()), 0);
  EXPECT_EQ(std::abs(cplx(cn[0])), 0.0);
  EXPECT_EQ(MatLatkeMesonCorrelators(A, cols.data(), 0, 1, &pion, c.data()), 0);
  EXPECT_EQ(std::abs(cplx(c[0])), 0.0);  // zero columns: zero correlator
  VecDestroy(&half);
  destroy(cols);
  MatDestroy(&A);
  LatkeGaugeDestroy(&g);
}

}  // namespace
