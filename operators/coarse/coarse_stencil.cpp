// The coarse operator's stencil (coarse_operator.h): the kernels of one field and of a set
// (a team per site streaming the blocks for sets of at most 16; FP32 and tensor-core tf32x3 for
// larger ones), their halo exchange, and apply, apply_split, apply_set and the even-odd maps built
// on them. Compiled by nvcc in CUDA builds.
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <sstream>
#include <type_traits>
#include <vector>

#include "operators/coarse/coarse_blocks.h"
#include "operators/coarse/coarse_operator.h"
#include "operators/coarse/probe_classes.h"
#include "src/core/error.h"
#include "src/core/faces.h"
#include "src/core/indexing.h"
#include "src/core/launch.h"
#include "src/core/launch_team.h"
#include "src/core/log.h"
#include "src/core/mma.h"
#include "src/core/policy.h"
#include "src/core/tune.h"

namespace latke::mg {

namespace {

LATKE_HOST_DEVICE LATKE_INLINE int face_position(const LocalGeometry& g, int mu, const int (&c)[4]) {
  int idx = 0;
  for (int nu = 3; nu >= 0; --nu)
    if (nu != mu) idx = idx * g.L[nu] + c[nu];
  return idx >> 1;
}

/// The stencil out(x) = a sum_{d<8} L_d(x) in(x + hop_d) + b L_8(x) in(x) + c z(x), with
/// Gamma_5 on both sides for the dagger, in two passes so that the small coarse levels keep
/// the device busy: one thread per (site, block, column segment, R consecutive rows) computes
/// those rows of that block times its input over the segment's columns (the parts: the 8 hops
/// when hopping, then the site block when it is there), then one thread per (site, row) adds
/// the parts. A block is column-major, so a thread's R rows of one column are one aligned word
/// of 2R reals (16 bytes in half with R = 4): a load feeds R complex multiply-adds instead of
/// one, which makes the kernel bound by the bytes of the blocks rather than by the rate at
/// which it issues loads. The columns are split into `split` segments on small levels
/// (column_split): there a thread per (site, block, rows) leaves the device too few threads,
/// each waiting on a chain of N loads, to keep enough of them in flight.
template <typename SL, typename SV, int R>
struct StencilPartsKernel {
  using T = typename compute_type<SL>::type;  // float arithmetic for single and half blocks
  using Word = Vector<SL, 2 * R>;
  BlockView<SL> links;
  RealArray<SV> in_q, in_p;
  const SV* ghost[4][2];  ///< [mu][0: from behind, 1: from ahead], face sites x 2n reals
  FaceGeometry faces;
  Complex<T>* parts;  ///< [site][part][segment][row]
  int parity, n, n_parts;
  int split = 1;  ///< column segments (divides n)
  bool hop, dagger;
  /// 0: every part; 1: the parts that read no ghost (while the faces travel); 2: only those
  /// that read one (after they are in).
  int pass = 0;

  /// The input of one column: a ghost site's 2n reals or a site of a field (whose words
  /// hold at least the two reals of a complex number: 2n is a multiple of 4).
  struct GhostInput {
    const SV* g;
    LATKE_HOST_DEVICE LATKE_INLINE Vector<SV, 2> operator()(int col) const {
      return Vector<SV, 2>{{g[2 * col], g[2 * col + 1]}};
    }
  };
  struct FieldInput {
    RealArray<SV> a;
    int x;
    LATKE_HOST_DEVICE LATKE_INLINE Vector<SV, 2> operator()(int col) const {
      return *reinterpret_cast<const Vector<SV, 2>*>(a.data + a.offset(2 * col, x));
    }
  };

  template <typename Input>
  LATKE_HOST_DEVICE LATKE_INLINE void rows(long blk, int row0, int col0, int col1, const Input& in,
                                           Complex<T> (&acc)[R]) const {
    const SL* base = links.data + 2 * (blk * n * n + row0);
    for (int col = col0; col < col1; ++col) {
      const Vector<SV, 2> v = in(col);
      const T sg = dagger && col >= n / 2 ? T(-1) : T(1);
      const Complex<T> u(static_cast<T>(v.v[0]) * sg, static_cast<T>(v.v[1]) * sg);
      const Word w = *reinterpret_cast<const Word*>(base + 2L * col * n);
      LATKE_UNROLL for (int r = 0; r < R; ++r) {
        T re, im;
        if constexpr (sizeof(SL) == 2) {
          re = static_cast<T>(from_fixed(w.v[2 * r]));
          im = static_cast<T>(from_fixed(w.v[2 * r + 1]));
        } else {
          re = static_cast<T>(w.v[2 * r]);
          im = static_cast<T>(w.v[2 * r + 1]);
        }
        acc[r] = mac(acc[r], Complex<T>(re, im), u);
      }
    }
    if constexpr (sizeof(SL) == 2) {  // half: the block's scale once, after the sums
      const T s = static_cast<T>(links.scale[blk]) * (T(1) / T(fixed_max));
      LATKE_UNROLL for (int r = 0; r < R; ++r) acc[r] = acc[r] * s;
    }
  }

  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    const int groups = n / R, rest = idx / groups;
    const int row0 = (idx % groups) * R, seg = rest % split, part = (rest / split) % n_parts;
    const int x = rest / (split * n_parts), cols = n / split, col0 = seg * cols, col1 = col0 + cols;
    Complex<T> acc[R];
    if (hop && part < 8) {
      const int mu = part >> 1, back = part & 1;
      int cc[4];
      faces.geom.coords(x, parity, cc);
      const int* L = faces.geom.L;
      const long blk = links.block(parity, x, part);
      const bool edge = back ? cc[mu] == 0 : cc[mu] == L[mu] - 1;
      const bool from_ghost = ((faces.comm_mask >> mu) & 1) && edge;
      if (pass != 0 && from_ghost != (pass == 2)) return;
      if (from_ghost) {
        rows(blk, row0, col0, col1,
             GhostInput{ghost[mu][back ? 0 : 1] + static_cast<long>(face_position(faces.geom, mu, cc)) * 2 * n}, acc);
      } else {
        int y[4] = {cc[0], cc[1], cc[2], cc[3]};
        y[mu] = back ? (cc[mu] == 0 ? L[mu] - 1 : cc[mu] - 1) : (cc[mu] == L[mu] - 1 ? 0 : cc[mu] + 1);
        rows(blk, row0, col0, col1, FieldInput{in_q, faces.geom.full_index(y) >> 1}, acc);
      }
    } else {
      if (pass == 2) return;
      rows(links.block(parity, x, 8), row0, col0, col1, FieldInput{in_p, x}, acc);
    }
    Complex<T>* out = parts + ((static_cast<long>(x) * n_parts + part) * split + seg) * n + row0;
    LATKE_UNROLL for (int r = 0; r < R; ++r) out[r] = acc[r];
  }
};

template <typename SV, typename T>
struct StencilCombineKernel {
  RealArray<SV> out, z;
  const Complex<T>* parts;
  int n, n_parts, split = 1;
  bool hop, site, xpay, dagger;
  T a, b, c;
  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    const int row = idx % n, x = idx / n;
    const Complex<T>* p = parts + static_cast<long>(x) * n_parts * split * n + row;
    Complex<T> h, s;
    const int n_hop = hop ? 8 : 0;
    for (int k = 0; k < n_hop * split; ++k) h += p[k * n];
    if (site)
      for (int k = n_hop * split; k < (n_hop + 1) * split; ++k) s += p[k * n];
    Complex<T> r = a * h + b * s;
    if (dagger && row >= n / 2) r = -r;
    if (xpay) r += c * Complex<T>(z.template get<T>(2 * row, x), z.template get<T>(2 * row + 1, x));
    out.set(2 * row, x, r.re);
    out.set(2 * row + 1, x, r.im);
  }
};

/// The parts of the full operator split for the next level's Galerkin product (apply_split):
/// with aggregates of extents `block`, site(x) = L_8 in(x) + the hops that stay in x's
/// aggregate, face[mu](x) = the forward hop in mu on the aggregate's last slice plus the
/// backward hop on its first slice (the slices differ: extents are at least 2).
template <typename SV, typename T>
struct SplitCombineKernel {
  RealArray<SV> site, face[4];
  const Complex<T>* parts;
  LocalGeometry geom;
  int block[4];
  int parity, n;
  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    const int row = idx % n, x = idx / n;
    int c[4];
    geom.coords(x, parity, c);
    const Complex<T>* p = parts + static_cast<long>(x) * CoarseOperator::n_blocks * n + row;
    Complex<T> s = p[8 * n];
    for (int mu = 0; mu < 4; ++mu) {
      const int within = c[mu] % block[mu];
      const Complex<T> fwd = p[2 * mu * n], bwd = p[(2 * mu + 1) * n];
      Complex<T> f;
      if (within == block[mu] - 1)
        f += fwd;
      else
        s += fwd;
      if (within == 0)
        f += bwd;
      else
        s += bwd;
      face[mu].set(2 * row, x, f.re);
      face[mu].set(2 * row + 1, x, f.im);
    }
    site.set(2 * row, x, s.re);
    site.set(2 * row + 1, x, s.im);
  }
};

/// The 8 hops of site x (output parity `parity`) of a set stencil: f(d, g, y) with g the
/// neighbour's first field in the received face (site_reals = count x 2N reals per face site)
/// where hop d crosses a split dimension, else g null and y the neighbour's checkerboard index.
template <typename SV, typename F>
LATKE_HOST_DEVICE LATKE_INLINE void for_each_set_hop(const FaceGeometry& faces, const SV* const (&ghost)[4][2], int x,
                                                     int parity, long site_reals, F&& f) {
  int cc[4];
  faces.geom.coords(x, parity, cc);
  const int* L = faces.geom.L;
  for (int d = 0; d < 8; ++d) {
    const int mu = d >> 1, back = d & 1;
    const bool edge = back ? cc[mu] == 0 : cc[mu] == L[mu] - 1;
    if (((faces.comm_mask >> mu) & 1) && edge) {
      f(d, ghost[mu][back ? 0 : 1] + static_cast<long>(face_position(faces.geom, mu, cc)) * site_reals, 0);
    } else {
      int y[4] = {cc[0], cc[1], cc[2], cc[3]};
      y[mu] = back ? (cc[mu] == 0 ? L[mu] - 1 : cc[mu] - 1) : (cc[mu] == L[mu] - 1 ? 0 : cc[mu] + 1);
      f(d, static_cast<const SV*>(nullptr), faces.geom.full_index(y) >> 1);
    }
  }
}

/// 16 bytes from global to shared memory without passing through registers (cp.async, from
/// compute capability 8.0: the copy runs while the thread goes on; async_wait makes it
/// visible), a plain copy on the host and on older devices.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define LATKE_CP_ASYNC 1
#endif
LATKE_HOST_DEVICE LATKE_INLINE void async_copy16(void* dst, const void* src) {
#ifdef LATKE_CP_ASYNC
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src));
#else
  memcpy(dst, src, 16);
#endif
}
/// Closes this thread's group of async_copy16 calls.
LATKE_HOST_DEVICE LATKE_INLINE void async_commit() {
#ifdef LATKE_CP_ASYNC
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
/// Waits until at most `pending` of this thread's latest groups are still in flight.
template <int pending>
LATKE_HOST_DEVICE LATKE_INLINE void async_wait() {
#ifdef LATKE_CP_ASYNC
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending));
#endif
}

/// The set stencil (SetStencilKernel's sums) for single-precision vectors by one team per
/// output site. The team copies each of the site's blocks (as stored: FP32 or half) and that
/// hop's input columns of every field into shared memory with asynchronous copies, the next
/// block's while it multiplies the current one (two buffers), and each thread multiplies its
/// R = 2 rows of F fields from shared memory, each word it reads feeding R or F products; the
/// sums stay in shared memory between blocks. So each block is read once for the set, streamed
/// while the arithmetic runs, where a thread of SetStencilKernel or MmaSetStencilKernel waits
/// on a chain of its own loads. Items (row pair, F fields) are fields fastest, so a warp reads
/// few distinct block words. Input words: RealArray words of 4 reals (lv 2).
template <typename SL, int F>
struct TeamSetStencilKernel {
  static constexpr int team = 128, R = 2;  ///< threads; rows per item
  using C = Complex<float>;
  using F4 = Vector<float, 4>;
  BlockView<SL> links;
  RealArray<float> in_q, in_p, z, out;  ///< field 0 of each set, at the block of its parity
  long stride, out_stride;              ///< of the inputs' sets and of out's (SetStencilKernel)
  const float* ghost[4][2];
  FaceGeometry faces;
  int parity, n, count;
  bool hop, site, xpay;
  float a, c;

  LATKE_HOST_DEVICE static int padded(int count) { return (count + F - 1) / F * F; }
  LATKE_HOST_DEVICE static int items(int n, int count) { return n / R * (padded(count) / F); }
  /// Bytes of one block as stored, and of one buffer: the block and its input columns (16-byte
  /// words [j][field]: columns 2j and 2j + 1).
  LATKE_HOST_DEVICE static std::size_t block_bytes(int n) { return 2 * sizeof(SL) * static_cast<std::size_t>(n) * n; }
  LATKE_HOST_DEVICE static std::size_t buffer_bytes(int n, int count) {
    return block_bytes(n) + sizeof(C) * static_cast<std::size_t>(n) * padded(count);
  }
  /// Shared bytes: two buffers and the sums ([row][field]).
  static std::size_t bytes(int n, int count) {
    return 2 * buffer_bytes(n, count) + sizeof(C) * static_cast<std::size_t>(n) * padded(count);
  }

  LATKE_HOST_DEVICE void operator()(const Team& t) const {
    const int x = t.index, cp = padded(count), groups = cp / F, n_items = items(n, count), words = n / 2;
    const std::size_t bb = block_bytes(n), buf = buffer_bytes(n, count);
    unsigned char* base = t.shared();
    C* acc = reinterpret_cast<C*>(base + 2 * buf);  // [row][field]
    // Each thread touches the sums of its own items only (the same mapping throughout); the
    // padded fields' inputs are zero in both buffers (never copied into).
    t.for_each(n_items, [&](int it) {
      const int k0 = (it % groups) * F, r0 = (it / groups) * R;
      LATKE_UNROLL for (int r = 0; r < R; ++r) {
        LATKE_UNROLL for (int f = 0; f < F; ++f) acc[(r0 + r) * cp + k0 + f] = C(0, 0);
      }
    });
    t.for_each(2 * words * (cp - count), [&](int i) {
      const int b = i / (words * (cp - count)), rest = i % (words * (cp - count));
      F4* xs = reinterpret_cast<F4*>(base + b * buf + bb);
      xs[(rest / (cp - count)) * cp + count + rest % (cp - count)] = F4{{0.f, 0.f, 0.f, 0.f}};
    });
    // The site's blocks in order, the 8 hops (when hop) and the site term (when site), each
    // with its input (a neighbour site of in_q, a face site, or x of in_p) and weight, worked
    // out per step (an array of them went to local memory).
    int cc[4];
    faces.geom.coords(x, parity, cc);
    const int first = hop ? 0 : 8, ns = (hop ? 8 : 0) + (site ? 1 : 0);
    struct Step {
      long blk;
      const float* in;  ///< field 0's word of columns 0, 1 at the input site (a face site's first field)
      long k_step;      ///< reals from field k to k + 1 there
      long word;        ///< reals from one word (2 columns) to the next: 4 on a face site, a word plane in a field
    };
    auto step = [&](int s) {
      const int d = first + s;
      Step st{links.block(parity, x, d), nullptr, stride, 0};
      if (d == 8) {
        st.in = in_p.data + in_p.offset(0, x);
        st.word = 4L * in_p.stride;
        return st;
      }
      const int* L = faces.geom.L;
      const int mu = d >> 1, back = d & 1;
      const bool edge = back ? cc[mu] == 0 : cc[mu] == L[mu] - 1;
      if (((faces.comm_mask >> mu) & 1) && edge) {  // as for_each_set_hop
        st.in = ghost[mu][back ? 0 : 1] + static_cast<long>(face_position(faces.geom, mu, cc)) * count * 2 * n;
        st.k_step = 2 * n;
        st.word = 4;
      } else {
        int y[4] = {cc[0], cc[1], cc[2], cc[3]};
        y[mu] = back ? (cc[mu] == 0 ? L[mu] - 1 : cc[mu] - 1) : (cc[mu] == L[mu] - 1 ? 0 : cc[mu] + 1);
        st.in = in_q.data + in_q.offset(0, faces.geom.full_index(y) >> 1);
        st.word = 4L * in_q.stride;
      }
      return st;
    };
    // Starts the copies of step s into buffer s % 2.
    auto issue = [&](int s) {
      const Step st = step(s);
      unsigned char* bp = base + (s & 1) * buf;
      const unsigned char* src = reinterpret_cast<const unsigned char*>(links.data + 2 * st.blk * n * n);
      t.for_each(static_cast<int>(bb / 16), [&](int i) { async_copy16(bp + 16 * i, src + 16 * i); });
      F4* xs = reinterpret_cast<F4*>(bp + bb);
      t.for_each(count * words, [&](int i) {  // word j: columns 2j and 2j + 1 of field k
        const int k = i % count, j = i / count;
        async_copy16(xs + j * cp + k, st.in + k * st.k_step + j * st.word);
      });
      async_commit();
    };
    if (ns > 0) issue(0);
    for (int s = 0; s < ns; ++s) {
      if (s + 1 < ns) {
        issue(s + 1);
        async_wait<1>();
      } else {
        async_wait<0>();
      }
      t.sync();  // step s's buffer is in for every thread
      const unsigned char* bp = base + (s & 1) * buf;
      const F4* xs = reinterpret_cast<const F4*>(bp + bb);
      float scale = first + s < 8 ? a : 1.0f;
      if constexpr (sizeof(SL) == 2) scale *= links.scale[links.block(parity, x, first + s)] * (1.0f / fixed_max);
      t.for_each(n_items, [&](int it) {
        const int k0 = (it % groups) * F, r0 = (it / groups) * R;
        C sum[R][F];
        LATKE_UNROLL for (int r = 0; r < R; ++r) LATKE_UNROLL for (int f = 0; f < F; ++f) sum[r][f] = C(0, 0);
        for (int j = 0; j < words; ++j) {
          C b[2][R];  // rows r0, r0 + 1 of columns 2j, 2j + 1
          LATKE_UNROLL for (int h = 0; h < 2; ++h) {
            if constexpr (sizeof(SL) == 2) {
              const Vector<unsigned, 2> q = *reinterpret_cast<const Vector<unsigned, 2>*>(
                  reinterpret_cast<const SL*>(bp) + 2 * ((2 * j + h) * n + r0));
              LATKE_UNROLL for (int r = 0; r < R; ++r) from_fixed2(q.v[r], b[h][r].re, b[h][r].im);
            } else {
              const F4 v =
                  *reinterpret_cast<const F4*>(reinterpret_cast<const float*>(bp) + 2 * ((2 * j + h) * n + r0));
              b[h][0] = C(v.v[0], v.v[1]);
              b[h][1] = C(v.v[2], v.v[3]);
            }
          }
          LATKE_UNROLL for (int f = 0; f < F; ++f) {
            const F4 v = xs[j * cp + k0 + f];
            const C u[2] = {C(v.v[0], v.v[1]), C(v.v[2], v.v[3])};
            LATKE_UNROLL for (int h = 0; h < 2; ++h) LATKE_UNROLL for (int r = 0; r < R; ++r) {
              C& o = sum[r][f];
              o.re += b[h][r].re * u[h].re;  // one product per statement: fused multiply-adds
              o.re -= b[h][r].im * u[h].im;
              o.im += b[h][r].re * u[h].im;
              o.im += b[h][r].im * u[h].re;
            }
          }
        }
        LATKE_UNROLL for (int r = 0; r < R; ++r) {
          LATKE_UNROLL for (int f = 0; f < F; ++f) acc[(r0 + r) * cp + k0 + f] += scale * sum[r][f];
        }
      });
      t.sync();  // every thread is done with buffer s % 2 before step s + 2's copies
    }
    t.for_each(n_items, [&](int it) {
      const int k0 = (it % groups) * F, r0 = (it / groups) * R;
      LATKE_UNROLL for (int f = 0; f < F; ++f) {
        const int k = k0 + f;
        if (k >= count) break;
        const C v0 = acc[r0 * cp + k], v1 = acc[(r0 + 1) * cp + k];
        F4 v{{v0.re, v0.im, v1.re, v1.im}};  // rows r0, r0 + 1: one word
        if (xpay) {
          const F4 w = *reinterpret_cast<const F4*>(z.data + k * stride + z.offset(2 * r0, x));
          LATKE_UNROLL for (int i = 0; i < 4; ++i) v.v[i] += c * w.v[i];
        }
        *reinterpret_cast<F4*>(out.data + k * out_stride + out.offset(2 * r0, x)) = v;
      }
    });
  }
};

/// The stencil over a set of fields (CoarseOperator::apply_set): out_k(x) = a sum_{d<8}
/// L_d(x) in_q,k(x + hop_d) + L_8(x) in_p,k(x) + c z_k(x) for the fields k of a set, in one
/// pass. One thread per (site, R consecutive rows, KT consecutive fields; KT = 1 or 2) loops over the nine
/// blocks and their columns: each word of a block it loads (R rows of one column) feeds R x KT
/// complex multiply-adds, and the threads of one site's other fields, in the same warp or the
/// next, find the same words in cache. So the blocks, which are the bytes of the one-field
/// stencil, are read about once for the whole set. Field k of a set starts `stride` reals after
/// field k - 1 (make_set); ghost sites hold every field: [face site][k][2n reals].
template <typename SL, typename SV, int R, int KT>
struct SetStencilKernel {
  using T = typename compute_type<SL>::type;
  using Word = Vector<SL, 2 * R>;
  BlockView<SL> links;
  RealArray<SV> in_q, in_p, z, out;  ///< field 0 of each set, at the block of its parity
  long stride;                       ///< of the inputs' sets (in_q, in_p, z)
  long out_stride;                   ///< of out's set (full fields' sets written one parity at a time, or parity sets)
  const SV* ghost[4][2];
  FaceGeometry faces;
  int parity, n, count;
  bool hop, site, xpay;
  T a, c;

  /// acc += L_blk in_k for the fields k0 .. k0 + kn - 1; in(k, col) is field k's components
  /// col and col + 1 (col even: one 16-byte word of a single-precision field), so that one load
  /// feeds two columns.
  template <typename Input>
  LATKE_HOST_DEVICE LATKE_INLINE void block(long blk, int row0, int k0, int kn, const Input& in,
                                            Complex<T> (&acc)[KT][R]) const {
    const SL* base = links.data + 2 * (blk * n * n + row0);
    auto sum = [&](Complex<T>(&dst)[KT][R]) {
      for (int col = 0; col < n; col += 2) {
        const Word w0 = *reinterpret_cast<const Word*>(base + 2L * col * n);
        const Word w1 = *reinterpret_cast<const Word*>(base + 2L * (col + 1) * n);
        Complex<T> m0[R], m1[R];
        LATKE_UNROLL for (int r = 0; r < R; ++r) {
          if constexpr (sizeof(SL) == 2) {
            m0[r] = Complex<T>(static_cast<T>(from_fixed(w0.v[2 * r])), static_cast<T>(from_fixed(w0.v[2 * r + 1])));
            m1[r] = Complex<T>(static_cast<T>(from_fixed(w1.v[2 * r])), static_cast<T>(from_fixed(w1.v[2 * r + 1])));
          } else {
            m0[r] = Complex<T>(static_cast<T>(w0.v[2 * r]), static_cast<T>(w0.v[2 * r + 1]));
            m1[r] = Complex<T>(static_cast<T>(w1.v[2 * r]), static_cast<T>(w1.v[2 * r + 1]));
          }
        }
        LATKE_UNROLL for (int j = 0; j < KT; ++j) {
          if (j < kn) {
            const Vector<SV, 4> v = in(k0 + j, col);
            const Complex<T> u0(static_cast<T>(v.v[0]), static_cast<T>(v.v[1]));
            const Complex<T> u1(static_cast<T>(v.v[2]), static_cast<T>(v.v[3]));
            LATKE_UNROLL for (int r = 0; r < R; ++r) dst[j][r] += m0[r] * u0 + m1[r] * u1;
          }
        }
      }
    };
    if constexpr (sizeof(SL) == 2) {  // half: each block's own scale, after its sums
      Complex<T> t[KT][R];
      sum(t);
      const T s = static_cast<T>(links.scale[blk]) * (T(1) / T(fixed_max));
      LATKE_UNROLL for (int j = 0; j < KT; ++j) LATKE_UNROLL for (int r = 0; r < R; ++r) acc[j][r] += t[j][r] * s;
    } else {
      sum(acc);
    }
  }

  struct GhostInput {
    const SV* g;  ///< the face site's first field
    int n2;
    LATKE_HOST_DEVICE LATKE_INLINE Vector<SV, 4> operator()(int k, int col) const {
      return *reinterpret_cast<const Vector<SV, 4>*>(g + static_cast<long>(k) * n2 + 2 * col);
    }
  };
  struct FieldInput {
    RealArray<SV> a;
    long stride;
    int x;
    LATKE_HOST_DEVICE LATKE_INLINE Vector<SV, 4> operator()(int k, int col) const {
      return *reinterpret_cast<const Vector<SV, 4>*>(a.data + k * stride + a.offset(2 * col, x));
    }
  };

  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    const int groups = n / R, chunks = (count + KT - 1) / KT;
    const int row0 = (idx % groups) * R, k0 = ((idx / groups) % chunks) * KT, x = idx / (groups * chunks);
    const int kn = count - k0 < KT ? count - k0 : KT;
    Complex<T> acc[KT][R];
    if (hop) {
      for_each_set_hop(faces, ghost, x, parity, static_cast<long>(count) * 2 * n, [&](int d, const SV* g, int y) {
        const long blk = links.block(parity, x, d);
        if (g)
          block(blk, row0, k0, kn, GhostInput{g, 2 * n}, acc);
        else
          block(blk, row0, k0, kn, FieldInput{in_q, stride, y}, acc);
      });
      LATKE_UNROLL for (int j = 0; j < KT; ++j) LATKE_UNROLL for (int r = 0; r < R; ++r) acc[j][r] = acc[j][r] * a;
    }
    if (site) block(links.block(parity, x, 8), row0, k0, kn, FieldInput{in_p, stride, x}, acc);
    LATKE_UNROLL for (int j = 0; j < KT; ++j) {
      if (j < kn) {
        const long off = (k0 + j) * stride;
        LATKE_UNROLL for (int r = 0; r < R; ++r) {
          Complex<T> v = acc[j][r];
          const int row = row0 + r;
          if (xpay) {
            const SV* zp = z.data + off;
            v += c * Complex<T>(static_cast<T>(zp[z.offset(2 * row, x)]), static_cast<T>(zp[z.offset(2 * row + 1, x)]));
          }
          SV* op = out.data + (k0 + j) * out_stride;
          op[out.offset(2 * row, x)] = static_cast<SV>(v.re);
          op[out.offset(2 * row + 1, x)] = static_cast<SV>(v.im);
        }
      }
    }
  }
};

/// SetStencilKernel's sums on tensor cores (single blocks and vectors, N a multiple of 16):
/// a block times the set is a complex (N x N) by (N x count) product, done as TF32 m16n8k8
/// products (latke/core/mma.h), re = Lr Xr - Li Xi and im = Lr Xi + Li Xr, by one warp per
/// (site, 16 rows, 32 fields). Each real product is three TF32 products of split operands,
/// which keep nearly FP32's accuracy: with one (10 bits) the setup's BiCGstab stalled near
/// 10^-3 and the hierarchy lost (docs/multigrid.md). The warp reads its rows of each block
/// once for its 32 fields, as SetStencilKernel's threads do through the cache, but multiplies
/// on tensor cores, where SetStencilKernel is bound by its FP32 issue. The fields of a warp's
/// last tile past `count` read zeros and write nothing.
struct MmaSetStencilKernel {
  static constexpr int tiles = 4;  ///< 8-field tiles per warp
  using F4 = Vector<float, 4>;
  BlockView<float> links;
  RealArray<float> in_q, in_p, z, out;  ///< field 0 of each set, at the block of its parity
  long stride, out_stride;              ///< of the inputs' sets and of out's (SetStencilKernel)
  const float* ghost[4][2];
  FaceGeometry faces;
  int parity, n, count, chunks;  ///< chunks: warps per (site, 16 rows), 32 fields each
  bool hop, site, xpay;
  float a, c;

  /// Columns 2t and 2t + 1 of a field at a site: one 16-byte word of 4 reals.
  struct GhostInput {
    const float* g;  ///< the face site's first field
    int n2;
    LATKE_HOST_DEVICE LATKE_INLINE F4 operator()(int f, int col) const {
      return *reinterpret_cast<const F4*>(g + static_cast<long>(f) * n2 + 2 * col);
    }
  };
  struct FieldInput {
    RealArray<float> a;
    long stride;
    int x;
    LATKE_HOST_DEVICE LATKE_INLINE F4 operator()(int f, int col) const {
      return *reinterpret_cast<const F4*>(a.data + f * stride + a.offset(2 * col, x));
    }
  };

  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    constexpr int L = LATKE_WARP_LANES;
    const int m_tiles = n / 16;
    if (L > 1 && (idx & 31)) return;  // the host does a warp's 32 lanes in its first lane's call
    const int task = idx >> 5;
    const int chunk = task % chunks, m0 = 16 * ((task / chunks) % m_tiles), x = task / (chunks * m_tiles);
    const int f0 = 32 * chunk, nt = (count - f0 + 7) / 8 < tiles ? (count - f0 + 7) / 8 : tiles;
    mma::FragC<L> re[tiles], im[tiles];
    LATKE_UNROLL for (int j = 0; j < tiles; ++j) for (int l = 0; l < L; ++l) LATKE_UNROLL for (int r = 0; r < 4; ++r) {
      re[j].v[l][r] = 0;
      im[j].v[l][r] = 0;
    }
    // re, im += L_blk in over the warp's rows and fields. The product's k index runs over the
    // columns k0 .. k0 + 7 in the order k0, k0 + 2, .., k0 + 6, k0 + 1, k0 + 3, .., k0 + 7, so
    // that the two of a lane's B fragment (k = t, t + 4) are one word of its field; its rows
    // g and g + 8 are the block's rows m0 + 2g and m0 + 2g + 1, so that a lane's A fragment is
    // two words of the block (column-major) and its C fragment two words of the output.
    auto product = [&](long blk, const auto& in) {
      const float* base = links.data + 2 * blk * n * n;
#ifdef __CUDA_ARCH__
#pragma unroll 1  // unrolled, the columns' loads take registers and the kernel ran slower
#endif
      for (int k0 = 0; k0 < n; k0 += 8) {
        mma::FragA<L> ar, ai, ar_lo, ai_lo;
        for (int l = 0; l < L; ++l) {
          const int lane = mma::lane_of(l, idx), g = lane >> 2, t = lane & 3;
          LATKE_UNROLL for (int h = 0; h < 2; ++h) {  // a[2h], a[2h + 1]: rows m0 + 2g, m0 + 2g + 1 of one column
            const F4 w = *reinterpret_cast<const F4*>(base + 2 * ((k0 + 2 * t + h) * n + m0 + 2 * g));
            LATKE_UNROLL for (int i = 0; i < 2; ++i) {
              mma::split(w.v[2 * i], ar.v[l][2 * h + i], ar_lo.v[l][2 * h + i]);
              mma::split(w.v[2 * i + 1], ai.v[l][2 * h + i], ai_lo.v[l][2 * h + i]);
            }
          }
        }
        LATKE_UNROLL for (int j = 0; j < tiles; ++j) {
          if (j >= nt) break;
          mma::FragB<L> xr, xi, nxi, xr_lo, xi_lo, nxi_lo;
          for (int l = 0; l < L; ++l) {
            const int lane = mma::lane_of(l, idx), g = lane >> 2, t = lane & 3, f = f0 + 8 * j + g;
            const F4 w = f < count ? in(f, k0 + 2 * t) : F4{{0.f, 0.f, 0.f, 0.f}};
            LATKE_UNROLL for (int r = 0; r < 2; ++r) {
              mma::split(w.v[2 * r], xr.v[l][r], xr_lo.v[l][r]);
              mma::split(w.v[2 * r + 1], xi.v[l][r], xi_lo.v[l][r]);
              nxi.v[l][r] = -xi.v[l][r];
              nxi_lo.v[l][r] = -xi_lo.v[l][r];
            }
          }
          mma::mma3(re[j], ar, ar_lo, xr, xr_lo);
          mma::mma3(re[j], ai, ai_lo, nxi, nxi_lo);
          mma::mma3(im[j], ar, ar_lo, xi, xi_lo);
          mma::mma3(im[j], ai, ai_lo, xr, xr_lo);
        }
      }
    };
    if (hop) {
      for_each_set_hop(faces, ghost, x, parity, static_cast<long>(count) * 2 * n, [&](int d, const float* g, int y) {
        const long blk = links.block(parity, x, d);
        if (g)
          product(blk, GhostInput{g, 2 * n});
        else
          product(blk, FieldInput{in_q, stride, y});
      });
      LATKE_UNROLL for (int j = 0; j < tiles; ++j) for (int l = 0; l < L; ++l)
          LATKE_UNROLL for (int r = 0; r < 4; ++r) {
        re[j].v[l][r] *= a;
        im[j].v[l][r] *= a;
      }
    }
    if (site) product(links.block(parity, x, 8), FieldInput{in_p, stride, x});
    LATKE_UNROLL for (int j = 0; j < tiles; ++j) {
      if (j >= nt) break;
      for (int l = 0; l < L; ++l) {
        const int lane = mma::lane_of(l, idx), g = lane >> 2, t = lane & 3, row = m0 + 2 * g;
        LATKE_UNROLL for (int e = 0; e < 2; ++e) {  // c[e] (row m0 + 2g) and c[e + 2] (m0 + 2g + 1): one word
          const int f = f0 + 8 * j + 2 * t + e;
          if (f >= count) continue;
          F4 v{{re[j].v[l][e], im[j].v[l][e], re[j].v[l][e + 2], im[j].v[l][e + 2]}};
          if (xpay) {
            const F4 w = *reinterpret_cast<const F4*>(z.data + f * stride + z.offset(2 * row, x));
            LATKE_UNROLL for (int i = 0; i < 4; ++i) v.v[i] += c * w.v[i];
          }
          *reinterpret_cast<F4*>(out.data + f * out_stride + out.offset(2 * row, x)) = v;
        }
      }
    }
  }
};

/// Whether MmaSetStencilKernel takes blocks of N = n rows (whole 16-row tiles): what
/// set_math() checks before it chooses tf32x3, and run_set_stencil before it launches it.
bool fits_tensor_cores(int n) { return n % 16 == 0; }

/// Copies the face sites of the input parity into the send buffers, whole sites of each of
/// `count` fields (field k `stride` reals after field 0): [face site][k][2n reals].
template <typename SV>
struct PackKernel {
  RealArray<SV> in;  ///< field 0
  long stride;
  SV* send[4][2];
  FaceGeometry faces;
  int parity, n2, count;
  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    int mu, side, c[4];
    if (!faces.face_site(idx, parity, mu, side, c)) return;
    const int x = faces.geom.full_index(c) >> 1;
    SV* dst = send[mu][side] + static_cast<long>(face_position(faces.geom, mu, c)) * count * n2;
    for (int k = 0; k < count; ++k)
      for (int r = 0; r < n2; ++r) dst[k * n2 + r] = in.data[k * stride + in.offset(r, x)];
  }
};

}  // namespace

SetMath parse_set_math(const std::string& name, const std::string& what) {
  for (SetMath m : {SetMath::automatic, SetMath::fp32, SetMath::tf32x3})
    if (name == to_string(m)) return m;
  fail(what, " '", name, "': expected automatic, fp32 or tf32x3");
}

const char* to_string(SetMath m) {
  switch (m) {
    case SetMath::automatic:
      return "automatic";
    case SetMath::fp32:
      return "fp32";
    case SetMath::tf32x3:
      return "tf32x3";
  }
  return "?";
}

void CoarseOperator::set_math(SetMath m) {
  const bool mma = precision_ == Precision::single && fits_tensor_cores(n());
  // automatic: tensor cores where a set of 32 gives the device at least 1024 warps; below
  // that a warp's chain of dependent products is not hidden and FP32 is faster (levels 1 and
  // 2 of 32^3x64, 12288 and 1024 warps, gain; level 3, 64 warps, loses: docs/multigrid.md).
  const bool busy = static_cast<long>(lattice_->volume_cb()) * (n() / 16) >= 1024;
  if (!mma)
    set_math_ = SetMath::fp32;
  else if (m == SetMath::automatic)
    set_math_ = backend_ == Backend::cuda && busy ? SetMath::tf32x3 : SetMath::fp32;
  else
    set_math_ = m;
}

namespace {

/// For a stencil of output parity `parity`: when there is an exchange to do (a halo, hops and
/// a partitioned direction), starts it with in_q's face sites of `count` fields (field k
/// `stride` reals after field 0) and points ghost[mu][0: from behind, 1: from ahead] at the
/// received faces; otherwise clears ghost. Returns whether it started one (end it after the
/// stencil's launch with halo->end()). With finish, waits for the faces too (else the caller
/// calls halo->finish() before launching what reads the ghosts).
template <typename SV>
bool begin_exchange(const Lattice& lat, Backend be, HaloExchange* halo, const FaceGeometry& faces,
                    const RealArray<SV>* in_q, long stride, int count, int parity, int n, const SV* (&ghost)[4][2],
                    bool finish = true) {
  for (int mu = 0; mu < 4; ++mu) ghost[mu][0] = ghost[mu][1] = nullptr;
  if (!halo || !in_q || !faces.comm_mask) return false;
  halo->begin();
  PackKernel<SV> pack;
  pack.in = *in_q;
  pack.stride = stride;
  pack.faces = faces;
  pack.parity = 1 - parity;
  pack.n2 = 2 * n;
  pack.count = count;
  for (int mu = 0; mu < 4; ++mu)
    for (int side = 0; side < 2; ++side) {
      pack.send[mu][side] = lat.partitioned(mu) ? static_cast<SV*>(halo->send_face(mu, side)) : nullptr;
      ghost[mu][side] = lat.partitioned(mu) ? static_cast<const SV*>(halo->recv_face(mu, side ? +1 : -1)) : nullptr;
    }
  launch(be, pack, {faces.face_begin[4]}, comm_stream(), false);
  if (finish) halo->finish();
  return true;
}

/// The first pass for one output parity: the block products L_d in_q(nbr) (d < 8, when in_q)
/// and L_8 in_p (when in_p) over `split` segments of the columns into `parts` (volume_cb x
/// n_parts x split x n complex numbers), after the halo exchange of in_q's faces. Returns the
/// parts per site, n_parts.
template <typename SL, typename SV, int R>
int stencil_parts(const Lattice& lat, Backend be, HaloExchange* halo, BlockView<SL> links, const RealArray<SV>* in_q,
                  const RealArray<SV>* in_p, int parity, int n, bool dagger, int split, void* parts) {
  for (const RealArray<SV>* f : {in_q, in_p})
    require(!f || f->lv >= 1, "coarse operator: a field's words split complex numbers");
  StencilPartsKernel<SL, SV, R> k;
  k.links = links;
  if (in_q) k.in_q = *in_q;
  if (in_p) k.in_p = *in_p;
  k.faces = face_geometry(lat);
  k.parts = static_cast<Complex<typename compute_type<SL>::type>*>(parts);
  k.parity = parity;
  k.n = n;
  k.hop = in_q != nullptr;
  k.n_parts = (k.hop ? 8 : 0) + (in_p ? 1 : 0);
  k.dagger = dagger;
  k.split = split;
  const int threads = lat.volume_cb() * k.n_parts * split * (n / R);
  if (begin_exchange(lat, be, halo, k.faces, in_q, 0, 1, parity, n, k.ghost, false)) {
    // Overlapped with the exchange: the parts that read no ghost are computed while the faces
    // travel, the others once they are in (coarse levels are small: the second launch's
    // threads that have nothing to do return at once).
    k.pass = 1;
    launch(be, k, {threads}, compute_stream(), false);
    halo->finish();
    k.pass = 2;
    launch(be, k, {threads}, compute_stream(), false);
    halo->end();
  } else {
    launch(be, k, {threads}, compute_stream(), false);
  }
  return k.n_parts;
}

/// f(std::integral_constant<int, R>) with the stencil's rows per thread: 4 when they divide N
/// (N = 2 Nvec is even), else 2.
template <typename F>
void dispatch_rows(int n, F&& f) {
  if (n % 4 == 0)
    f(std::integral_constant<int, 4>{});
  else
    f(std::integral_constant<int, 2>{});
}

/// The most column segments a block of N = n columns may take: a power of two, at most `most`,
/// dividing n, each segment at least 8 columns (so that a thread's loads still each feed R
/// multiply-adds).
int most_segments(int n, int most) {
  int s = 1;
  while (2 * s <= most && n % (2 * s) == 0 && n / (2 * s) >= 8) s *= 2;
  return s;
}

}  // namespace

int column_split(long volume_cb, int n_parts, int n, int most) {
  // Segments double while the threads stay within about one full occupancy of a large GPU
  // (2^18: an H100's 132 SMs hold 270336): level 1 of 32^3x64 (8^3x16, N = 48) keeps one
  // segment, level 2 (4^3x8, N = 64) takes 8 for its hops and 4 for the full operator, and
  // level 3 (2^3x4) 8.
  const long threads = volume_cb * n_parts * (n / (n % 4 == 0 ? 4 : 2));
  int s = 1;
  while (2 * s <= most_segments(n, most) && threads * 2 * s <= (1L << 18)) s *= 2;
  return s;
}

namespace {

/// The column segments of one stencil form (n_parts parts per site of N = n columns) on lat:
/// where tuning is on (CUDA, ps.tune and LATKE_TUNE unset or 1) each power of two up to
/// most_segments is timed by run(split) at this form's first call on a local lattice and
/// process grid (every rank of lat's communicator at the same call; the slowest rank's time
/// decides, and the tune cache keeps the choice), otherwise, and for a call that is not
/// repeatable (its output one of its inputs), column_split's rule. After the first call, one
/// lookup.
template <typename SL, typename SV, typename Run>
int stencil_split(const Lattice& lat, Backend be, int n_parts, int n, const PartsScratch& ps, bool repeatable,
                  const Run& run) {
  if (!ps.tune || be != Backend::cuda || !tuning_enabled()) return column_split(lat.volume_cb(), n_parts, n, ps.most);
  const int most = most_segments(n, ps.most);
  if (most == 1) return 1;
  static std::map<std::array<int, 3>, PolicyChoice> choices;  // by (n, n_parts, most); SL and SV are the instance's
  PolicyChoice& choice = choices[{n, n_parts, most}];
  if (const int i = choice.known(lat); i >= 0) return 1 << i;  // candidate i is 2^i segments
  // A call whose output is one of its inputs would read its own result on a repeat: not timed.
  if (!repeatable) return column_split(lat.volume_cb(), n_parts, n, ps.most);
  std::vector<std::string> names;
  for (int s = 1; s <= most; s *= 2) names.push_back(std::to_string(s) + (s == 1 ? " segment" : " segments"));
  const int i = choice.get(
      lat,
      [&] {
        std::ostringstream key;
        key << "coarse_stencil_segments " << sizeof(SL) << "B blocks " << sizeof(SV) << "B vectors N " << n << " parts "
            << n_parts << " at most " << most;
        return key.str();
      },
      names,
      [&](int c) {
        for (int k = 0; k < 2; ++k) run(1 << c);  // warm-up: the kernels tune their block size here
        return time_per_call(be, 10, [&] { run(1 << c); });
      });
  return 1 << i;
}

/// One output parity: out_p = a sum L_d in_q(nbr) + b L_8 in_p + c z_p, its blocks' columns in
/// the segments stencil_split chooses, the parts in ps's buffer.
template <typename SL, typename SV>
void run_stencil(const Lattice& lat, Backend be, HaloExchange* halo, BlockView<SL> links, const RealArray<SV>& out,
                 const RealArray<SV>* in_q, const RealArray<SV>* in_p, const RealArray<SV>* z, int parity, int n,
                 double a, double b, double c, bool dagger, const PartsScratch& ps) {
  using T = typename compute_type<SL>::type;
  auto run = [&](int split) {
    void* parts =
        ps.get(static_cast<std::size_t>(lat.volume_cb()) * CoarseOperator::n_blocks * split * n * sizeof(Complex<T>));
    int n_parts = 0;
    dispatch_rows(n, [&](auto r) {
      n_parts =
          stencil_parts<SL, SV, decltype(r)::value>(lat, be, halo, links, in_q, in_p, parity, n, dagger, split, parts);
    });
    StencilCombineKernel<SV, T> cmb;
    cmb.out = out;
    if (z) cmb.z = *z;
    cmb.parts = static_cast<const Complex<T>*>(parts);
    cmb.n = n;
    cmb.n_parts = n_parts;
    cmb.split = split;
    cmb.hop = in_q != nullptr;
    cmb.site = in_p != nullptr;
    cmb.xpay = z != nullptr;
    cmb.dagger = dagger;
    cmb.a = a;
    cmb.b = b;
    cmb.c = c;
    launch(be, cmb, {lat.volume_cb() * n}, compute_stream(), false);
  };
  const auto aliases = [&](const RealArray<SV>* f) { return f && f->data == out.data; };
  const bool repeatable = !aliases(in_q) && !aliases(in_p) && !aliases(z);
  run(stencil_split<SL, SV>(lat, be, (in_q ? 8 : 0) + (in_p ? 1 : 0), n, ps, repeatable, run));
}

/// One output parity of the set stencil (SetStencilKernel): out_k = a sum L_d in_q,k(nbr) +
/// L_8 in_p,k + c z_k for the `count` fields of the sets, after the halo exchange of in_q's
/// faces (all fields in one message per face). The inputs' fields are `stride` reals apart,
/// out's `out_stride` apart (0: stride), so that a set of one parity can be read from, or
/// written into, a set of full fields.
template <typename SL, typename SV>
void run_set_stencil(const Lattice& lat, Backend be, HaloExchange* halo, BlockView<SL> links, const RealArray<SV>& out,
                     const RealArray<SV>* in_q, const RealArray<SV>* in_p, const RealArray<SV>* z, long stride,
                     int count, int parity, int n, double a, double c, SetMath math, long out_stride = 0) {
  // The arguments every set kernel takes.
  auto fill = [&](auto& k) {
    k.links = links;
    k.out = out;
    if (in_q) k.in_q = *in_q;
    if (in_p) k.in_p = *in_p;
    if (z) k.z = *z;
    k.stride = stride;
    k.out_stride = out_stride > 0 ? out_stride : stride;
    k.faces = face_geometry(lat);
    k.parity = parity;
    k.count = count;
    k.hop = in_q != nullptr;
    k.site = in_p != nullptr;
    k.xpay = z != nullptr;
    k.a = static_cast<decltype(k.a)>(a);
    k.c = static_cast<decltype(k.c)>(c);
  };
  // go() launches k, after the exchange of in_q's faces into k's ghosts.
  auto exchanged = [&](auto& k, auto&& go) {
    const bool exchange = begin_exchange(lat, be, halo, k.faces, in_q, stride, count, parity, n, k.ghost);
    go();
    if (exchange) halo->end();
  };
  auto run = [&](auto k, int threads) {
    fill(k);
    exchanged(k, [&] { launch(be, k, {threads}, compute_stream(), false); });
  };
  // Sets of at most 16 single-precision fields (a propagator's columns in the cycles) by the
  // team kernel, single or half blocks, whatever `math` says: it streams the blocks where the
  // kernels below wait on their loads (docs/multigrid.md). Larger sets (the setup's 32) below.
  if constexpr (std::is_same_v<SV, float> && !std::is_same_v<SL, double>) {
    if (count <= 16 && out.lv == 2 && n % 2 == 0) {
      auto with_f = [&](auto fc) {
        constexpr int Fk = decltype(fc)::value;
        using K = TeamSetStencilKernel<SL, Fk>;
        const std::size_t bytes = K::bytes(n, count);
        if (K::items(n, count) > K::team || bytes > team_shared_limit(be)) return false;
        K k;
        k.n = n;
        fill(k);
        exchanged(k, [&] { launch_teams(be, k, lat.volume_cb(), K::team, bytes, 0); });
        return true;
      };
      // The fewest fields per thread that leave no item without a thread (N at most 64).
      if (with_f(std::integral_constant<int, 2>{}) || with_f(std::integral_constant<int, 3>{}) ||
          with_f(std::integral_constant<int, 4>{}))
        return;
    }
  }
  if constexpr (std::is_same_v<SL, float> && std::is_same_v<SV, float>) {
    if (math == SetMath::tf32x3 && fits_tensor_cores(n)) {
      MmaSetStencilKernel k;
      k.n = n;
      k.chunks = (count + 31) / 32;
      run(k, lat.volume_cb() * (n / 16) * k.chunks * 32);
      return;
    }
  }
  // Fields per thread: fewer fields per thread means more threads and fewer registers, which
  // wins until the threads run out. So 2 where that still leaves about two threads per
  // resident slot of a large GPU (level 1 of 32^3x64), else 1 (the small levels).
  const long groups = n / (n % 4 == 0 ? 4 : 2);
  const bool two = static_cast<long>(lat.volume_cb()) * groups * ((count + 1) / 2) >= (1L << 19);
  auto with_kt = [&](auto ktc) {
    constexpr int KT = decltype(ktc)::value;
    dispatch_rows(n, [&](auto rows) {
      constexpr int R = decltype(rows)::value;
      SetStencilKernel<SL, SV, R, KT> k;
      k.n = n;
      run(k, lat.volume_cb() * ((count + KT - 1) / KT) * (n / R));
    });
  };
  if (two)
    with_kt(std::integral_constant<int, 2>{});
  else
    with_kt(std::integral_constant<int, 1>{});
}

}  // namespace

void CoarseOperator::require_full_blocks(const char* what) const {
  require(links_.data.data() != nullptr, "coarse operator (", what,
          "): this copy holds only the even-odd blocks (a smoother's half copy); the full operator needs the others");
}

void CoarseOperator::apply(ColorSpinorField& out, const ColorSpinorField& in, bool dagger) {
  require(!assembly_.data.data(), "coarse operator applied before finalize");
  require_full_blocks("apply");
  const LogScope log(LogEvent::mg_coarse_op, flops(false), true);
  require_field(out, "apply", true);
  require_field(in, "apply", true);
  require(out.precision() == in.precision(), "coarse operator: input and output precisions differ");
  dispatch_vector(in.precision(), [&](auto sv) {
    using SV = decltype(sv);
    const int hv = sizeof(SV) == 8 ? 0 : 1;
    HaloExchange* halo = halo_for(hv, sizeof(SV));
    dispatch_precision(precision_, [&](auto sl) {
      using SL = decltype(sl);
      const BlockView<SL> lv = view<SL>(links_.data, links_.scale, n(), lattice_->volume_cb());
      for (int p = 0; p < 2; ++p) {
        const RealArray<SV> q = real_array<SV>(in, 1 - p), s = real_array<SV>(in, p);
        run_stencil<SL, SV>(*lattice_, backend_, halo, lv, real_array<SV>(out, p), &q, &s, nullptr, p, n(), 1.0, 1.0,
                            0.0, dagger, parts());
      }
    });
  });
}

void CoarseOperator::apply_split(ColorSpinorField& site, ColorSpinorField* const faces[4], const ColorSpinorField& in,
                                 const Coords& block) {
  require(!assembly_.data.data(), "coarse operator applied before finalize");
  require_full_blocks("apply_split");
  const LogScope log(LogEvent::mg_coarse_op, flops(false), true);
  require_field(in, "apply_split", true);
  require_field(site, "apply_split", true);
  for (int mu = 0; mu < 4; ++mu) {
    require_field(*faces[mu], "apply_split", true);
    require(faces[mu]->precision() == in.precision(), "coarse operator (apply_split): precisions differ");
    require(block[mu] >= 2 && lattice_->local()[mu] % block[mu] == 0,
            "coarse operator (apply_split): aggregate extent ", block[mu], " in dimension ", mu,
            " does not divide the local extent ", lattice_->local()[mu]);
  }
  require(site.precision() == in.precision(), "coarse operator (apply_split): precisions differ");
  dispatch_vector(in.precision(), [&](auto sv) {
    using SV = decltype(sv);
    HaloExchange* halo = halo_for(sizeof(SV) == 8 ? 0 : 1, sizeof(SV));
    dispatch_precision(precision_, [&](auto sl) {
      using SL = decltype(sl);
      using T = typename compute_type<SL>::type;
      const BlockView<SL> lv = view<SL>(links_.data, links_.scale, n(), lattice_->volume_cb());
      const std::size_t parts_bytes =
          static_cast<std::size_t>(lattice_->volume_cb()) * n_blocks * n() * sizeof(Complex<T>);
      for (int p = 0; p < 2; ++p) {
        const RealArray<SV> q = real_array<SV>(in, 1 - p), s = real_array<SV>(in, p);
        dispatch_rows(n(), [&](auto r) {  // whole columns: SplitCombineKernel reads one part per block
          stencil_parts<SL, SV, decltype(r)::value>(*lattice_, backend_, halo, lv, &q, &s, p, n(), false, 1,
                                                    parts().get(parts_bytes));
        });
        SplitCombineKernel<SV, T> k;
        k.site = real_array<SV>(site, p);
        for (int mu = 0; mu < 4; ++mu) {
          k.face[mu] = real_array<SV>(*faces[mu], p);
          k.block[mu] = block[mu];
        }
        k.parts = static_cast<const Complex<T>*>(parts().get(parts_bytes));
        k.geom = LocalGeometry::of(*lattice_);
        k.parity = p;
        k.n = n();
        launch(backend_, k, {lattice_->volume_cb() * n()}, compute_stream(), false);
      }
    });
  });
}

void CoarseOperator::require_set(const std::vector<ColorSpinorField>& set, const char* what, bool full) const {
  require(!set.empty(), "coarse operator (", what, "): an empty set of fields");
  require_field(set[0], what, full);
  require(set[0].precision() == Precision::single, "coarse operator (", what, "): a set of ",
          to_string(set[0].precision()), " fields; expected single precision");
  require(is_set(set), "coarse operator (", what, "): the fields are not a set made by make_set");
}

void CoarseOperator::apply_set(std::vector<ColorSpinorField>& out, const std::vector<ColorSpinorField>& in) {
  require(!assembly_.data.data(), "coarse operator applied before finalize");
  require(!in.empty() && out.size() == in.size(), "coarse operator (apply_set): sets of ", in.size(), " and ",
          out.size(), " fields; expected equal, non-empty sets");
  const bool full = in[0].n_parity() == 2;
  require(full || even_odd_, "coarse operator: the even-odd form was not prepared (finalize(true))");
  if (full) require_full_blocks("apply_set");
  require_set(in, "apply_set", full);
  require_set(out, "apply_set", full);
  require(out[0].param().subset == in[0].param().subset, "coarse operator (apply_set): the sets differ in parity");
  const int count = static_cast<int>(in.size());
  const LogScope log(LogEvent::mg_coarse_op, count * flops(!full), true);
  const long stride = static_cast<long>(in[0].n_parity()) * lattice_->volume_cb() * 2 * n();
  HaloExchange* halo = set_halo(count);
  dispatch_precision(precision_, [&](auto sl) {
    using SL = decltype(sl);
    if (full) {
      const BlockView<SL> lv = view<SL>(links_.data, links_.scale, n(), lattice_->volume_cb());
      for (int p = 0; p < 2; ++p) {
        const RealArray<float> q = real_array<float>(in[0], 1 - p), s = real_array<float>(in[0], p);
        run_set_stencil<SL, float>(*lattice_, backend_, halo, lv, real_array<float>(out[0], p), &q, &s, nullptr, stride,
                                   count, p, n(), 1.0, 0.0, set_math_);
      }
      return;
    }
    // Mhat_pp = 1 - Yhat_pq Yhat_qp, through a set of parity-q fields.
    const int p = in[0].block_parity(0), q = 1 - p;
    const Subset sq = q == 0 ? Subset::even : Subset::odd;
    if (set_scratch_.size() != in.size() || set_scratch_[0].param().subset != sq)
      set_scratch_ = ColorSpinorField::make_set(lattice_, field_param(Precision::single, sq), count);
    const BlockView<SL> hv = view<SL>(hat_.data, hat_.scale, n(), lattice_->volume_cb());
    const RealArray<float> ip = real_array<float>(in[0], 0), t = real_array<float>(set_scratch_[0], 0);
    run_set_stencil<SL, float>(*lattice_, backend_, halo, hv, t, &ip, nullptr, nullptr, stride, count, q, n(), 1.0, 0.0,
                               set_math_);
    run_set_stencil<SL, float>(*lattice_, backend_, halo, hv, real_array<float>(out[0], 0), &t, nullptr, &ip, stride,
                               count, p, n(), -1.0, 1.0, set_math_);
  });
}

HaloExchange* CoarseOperator::set_halo(int count) {
  if (lattice_->size() > 1 && (!set_halo_ || set_halo_count_ != count)) {
    set_halo_ = std::make_unique<HaloExchange>(*lattice_, backend_, count * 2 * n() * sizeof(float));
    set_halo_count_ = count;
  }
  return set_halo_.get();
}

HaloExchange* CoarseOperator::halo_for(int slot, std::size_t real_bytes) {
  if (!halo_[slot] && lattice_->size() > 1)
    halo_[slot] = std::make_unique<HaloExchange>(*lattice_, backend_, 2 * n() * real_bytes);
  return halo_[slot].get();
}

void CoarseOperator::apply_schur(ColorSpinorField& out, const ColorSpinorField& in) {
  require(even_odd_, "coarse operator: the even-odd form was not prepared (finalize(true))");
  const LogScope log(LogEvent::mg_coarse_op, flops(true), true);
  require_field(out, "apply_schur", false);
  require_field(in, "apply_schur", false);
  require(out.param().subset == in.param().subset && out.precision() == in.precision(),
          "coarse operator (apply_schur): input and output differ in parity or precision");
  const int p = in.block_parity(0), q = 1 - p;
  dispatch_vector(in.precision(), [&](auto sv) {
    using SV = decltype(sv);
    const int hv = sizeof(SV) == 8 ? 0 : 1;
    HaloExchange* halo = halo_for(hv, sizeof(SV));
    ColorSpinorField& tmp = scratch(hv, in.precision(), q == 0 ? Subset::even : Subset::odd);
    dispatch_precision(precision_, [&](auto sl) {
      using SL = decltype(sl);
      const BlockView<SL> hv_ = view<SL>(hat_.data, hat_.scale, n(), lattice_->volume_cb());
      const RealArray<SV> ip = real_array<SV>(in, 0), t = real_array<SV>(tmp, 0);
      run_stencil<SL, SV>(*lattice_, backend_, halo, hv_, t, &ip, nullptr, nullptr, q, n(), 1.0, 0.0, 0.0, false,
                          parts());
      run_stencil<SL, SV>(*lattice_, backend_, halo, hv_, real_array<SV>(out, 0), &t, nullptr, &ip, p, n(), -1.0, 0.0,
                          1.0, false, parts());
    });
  });
}

void CoarseOperator::prepare_source(ColorSpinorField& bhat, const ColorSpinorField& b) {
  require(even_odd_, "coarse operator: the even-odd form was not prepared (finalize(true))");
  require_field(bhat, "prepare_source", false);
  require_field(b, "prepare_source", true);
  const int p = bhat.block_parity(0), q = 1 - p;
  dispatch_vector(b.precision(), [&](auto sv) {
    using SV = decltype(sv);
    const int hv = sizeof(SV) == 8 ? 0 : 1;
    ColorSpinorField& t = scratch(hv, b.precision(), Subset::full);
    HaloExchange* halo = halo_for(hv, sizeof(SV));
    dispatch_precision(precision_, [&](auto sl) {
      using SL = decltype(sl);
      const BlockView<SL> hv_ = view<SL>(hat_.data, hat_.scale, n(), lattice_->volume_cb());
      for (int r = 0; r < 2; ++r) {  // t = X^-1 b
        const RealArray<SV> br = real_array<SV>(b, r);
        run_stencil<SL, SV>(*lattice_, backend_, nullptr, hv_, real_array<SV>(t, r), nullptr, &br, nullptr, r, n(), 0.0,
                            1.0, 0.0, false, parts());
      }
      const RealArray<SV> tq = real_array<SV>(t, q), tp = real_array<SV>(t, p);
      run_stencil<SL, SV>(*lattice_, backend_, halo, hv_, real_array<SV>(bhat, 0), &tq, nullptr, &tp, p, n(), -1.0, 0.0,
                          1.0, false, parts());
    });
  });
}

void CoarseOperator::reconstruct(ColorSpinorField& x, const ColorSpinorField& x_p, const ColorSpinorField& b) {
  require(even_odd_, "coarse operator: the even-odd form was not prepared (finalize(true))");
  require_field(x, "reconstruct", true);
  require_field(x_p, "reconstruct", false);
  require_field(b, "reconstruct", true);
  const int p = x_p.block_parity(0), q = 1 - p;
  ColorSpinorField xp = x.parity(p), xq = x.parity(q);
  xp.copy_from(x_p);
  dispatch_vector(b.precision(), [&](auto sv) {
    using SV = decltype(sv);
    const int hv = sizeof(SV) == 8 ? 0 : 1;
    ColorSpinorField& t = scratch(hv, b.precision(), q == 0 ? Subset::even : Subset::odd);
    HaloExchange* halo = halo_for(hv, sizeof(SV));
    dispatch_precision(precision_, [&](auto sl) {
      using SL = decltype(sl);
      const BlockView<SL> hv_ = view<SL>(hat_.data, hat_.scale, n(), lattice_->volume_cb());
      const RealArray<SV> bq = real_array<SV>(b, q), tt = real_array<SV>(t, 0), xpa = real_array<SV>(x_p, 0);
      run_stencil<SL, SV>(*lattice_, backend_, nullptr, hv_, tt, nullptr, &bq, nullptr, q, n(), 0.0, 1.0, 0.0, false,
                          parts());
      run_stencil<SL, SV>(*lattice_, backend_, halo, hv_, real_array<SV>(xq, 0), &xpa, nullptr, &tt, q, n(), -1.0, 0.0,
                          1.0, false, parts());
    });
  });
}

void CoarseOperator::prepare_source_set(std::vector<ColorSpinorField>& bhat, const std::vector<ColorSpinorField>& b) {
  require(even_odd_, "coarse operator: the even-odd form was not prepared (finalize(true))");
  require(!b.empty() && bhat.size() == b.size(), "coarse operator (prepare_source_set): sets of ", b.size(), " and ",
          bhat.size(), " fields; expected equal, non-empty sets");
  require_set(b, "prepare_source_set", true);
  require_set(bhat, "prepare_source_set", false);
  const int count = static_cast<int>(b.size()), p = bhat[0].block_parity(0), q = 1 - p;
  if (set_full_scratch_.size() != b.size())
    set_full_scratch_ = ColorSpinorField::make_set(lattice_, field_param(Precision::single, Subset::full), count);
  const long full = 2L * lattice_->volume_cb() * 2 * n(), one = full / 2;
  HaloExchange* halo = set_halo(count);
  dispatch_precision(precision_, [&](auto sl) {
    using SL = decltype(sl);
    const BlockView<SL> hv = view<SL>(hat_.data, hat_.scale, n(), lattice_->volume_cb());
    for (int r = 0; r < 2; ++r) {  // t = X^-1 b, both parities
      const RealArray<float> br = real_array<float>(b[0], r);
      run_set_stencil<SL, float>(*lattice_, backend_, nullptr, hv, real_array<float>(set_full_scratch_[0], r), nullptr,
                                 &br, nullptr, full, count, r, n(), 1.0, 0.0, set_math_);
    }
    // bhat = t_p - Yhat_pq t_q, from the full set into the parity set.
    const RealArray<float> tq = real_array<float>(set_full_scratch_[0], q),
                           tp = real_array<float>(set_full_scratch_[0], p);
    run_set_stencil<SL, float>(*lattice_, backend_, halo, hv, real_array<float>(bhat[0], 0), &tq, nullptr, &tp, full,
                               count, p, n(), -1.0, 1.0, set_math_, one);
  });
}

void CoarseOperator::reconstruct_set(std::vector<ColorSpinorField>& x, const std::vector<ColorSpinorField>& x_p,
                                     const std::vector<ColorSpinorField>& b) {
  require(even_odd_, "coarse operator: the even-odd form was not prepared (finalize(true))");
  require(!b.empty() && x.size() == b.size() && x_p.size() == b.size(), "coarse operator (reconstruct_set): sets of ",
          x.size(), ", ", x_p.size(), " and ", b.size(), " fields; expected equal, non-empty sets");
  require_set(x, "reconstruct_set", true);
  require_set(x_p, "reconstruct_set", false);
  require_set(b, "reconstruct_set", true);
  const int count = static_cast<int>(b.size()), p = x_p[0].block_parity(0), q = 1 - p;
  for (int k = 0; k < count; ++k) x[k].parity(p).copy_from(x_p[k]);
  const Subset sq = q == 0 ? Subset::even : Subset::odd;
  if (set_scratch_.size() != b.size() || set_scratch_[0].param().subset != sq)
    set_scratch_ = ColorSpinorField::make_set(lattice_, field_param(Precision::single, sq), count);
  const long full = 2L * lattice_->volume_cb() * 2 * n(), one = full / 2;
  HaloExchange* halo = set_halo(count);
  dispatch_precision(precision_, [&](auto sl) {
    using SL = decltype(sl);
    const BlockView<SL> hv = view<SL>(hat_.data, hat_.scale, n(), lattice_->volume_cb());
    // t = X_qq^-1 b_q (the parity set), then x_q = t - Yhat_qp x_p into the full set.
    const RealArray<float> bq = real_array<float>(b[0], q), t = real_array<float>(set_scratch_[0], 0),
                           xp = real_array<float>(x_p[0], 0);
    run_set_stencil<SL, float>(*lattice_, backend_, nullptr, hv, t, nullptr, &bq, nullptr, full, count, q, n(), 1.0,
                               0.0, set_math_, one);
    run_set_stencil<SL, float>(*lattice_, backend_, halo, hv, real_array<float>(x[0], q), &xp, nullptr, &t, one, count,
                               q, n(), -1.0, 1.0, set_math_, full);
  });
}

}  // namespace latke::mg
