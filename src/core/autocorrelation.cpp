// Time-series statistics (autocorrelation.h).
#include "src/core/autocorrelation.h"

#include <algorithm>
#include <cmath>

#include "src/core/error.h"

namespace latke {

SeriesStats analyze_series(const std::vector<double>& x, double window_factor) {
  SeriesStats s;
  s.n = x.size();
  require(s.n >= 2, "a time series needs at least 2 measurements, got ", s.n);
  const double n = static_cast<double>(s.n);
  double m = 0;
  for (double v : x) m += v;
  m /= n;
  s.mean = m;
  auto gamma = [&](std::size_t t) {
    double g = 0;
    for (std::size_t i = 0; i + t < s.n; ++i) g += (x[i] - m) * (x[i + t] - m);
    return g / static_cast<double>(s.n - t);
  };
  const double g0 = gamma(0);
  s.naive_error = std::sqrt(g0 / n);
  s.tau_int = 0.5;
  s.window = 0;
  if (g0 > 0) {
    double tau = 0.5;
    const std::size_t max_window = s.n / 2;
    std::size_t w = 1;
    for (; w <= max_window; ++w) {
      tau += gamma(w) / g0;
      if (static_cast<double>(w) >= window_factor * tau) break;
    }
    s.tau_int = std::max(tau, 0.5);
    s.window = static_cast<int>(std::min(w, max_window));
  }
  s.tau_int_error = s.tau_int * std::sqrt(2.0 * (2.0 * s.window + 1.0) / n);
  s.error = std::sqrt(2.0 * s.tau_int * g0 / n);
  for (std::size_t b = 1; s.n / b >= 16; b *= 2) {
    const std::size_t blocks = s.n / b;
    std::vector<double> means(blocks, 0.0);
    double mm = 0;
    for (std::size_t k = 0; k < blocks; ++k) {
      for (std::size_t i = 0; i < b; ++i) means[k] += x[k * b + i];
      means[k] /= static_cast<double>(b);
      mm += means[k];
    }
    mm /= static_cast<double>(blocks);
    double var = 0;
    for (double v : means) var += (v - mm) * (v - mm);
    var /= static_cast<double>(blocks - 1);
    s.binned.emplace_back(static_cast<int>(b), std::sqrt(var / static_cast<double>(blocks)));
  }
  s.conservative_error = std::max(s.error, s.binned.empty() ? 0.0 : s.binned.back().second);
  return s;
}

}  // namespace latke
