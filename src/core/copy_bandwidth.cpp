#include "src/core/copy_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "src/core/memory.h"

namespace latke {

double measure_copy_bandwidth(Backend b, std::size_t bytes, int reps) {
  Buffer src(memory_for(b), bytes), dst(memory_for(b), bytes);
  zero_bytes(src.data(), bytes, memory_for(b), compute_stream());
  std::vector<double> ms;
  for (int r = -2; r < reps; ++r) {
    double t = 0;
    if (b == Backend::cuda) {
      Event e0, e1;
      e0.record(compute_stream());
      copy_bytes(dst.data(), src.data(), bytes, compute_stream());
      e1.record(compute_stream());
      t = Event::elapsed_ms(e0, e1);
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      std::memcpy(dst.data(), src.data(), bytes);
      t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    if (r >= 0) ms.push_back(t);
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return 2.0 * bytes / (ms[ms.size() / 2] * 1e-3) / 1e9;
}

}  // namespace latke
