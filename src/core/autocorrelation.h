// The mean of a Monte Carlo time series and its error, with autocorrelations taken into
// account two ways:
//   Gamma method: Gamma(t) = <(x_i - m)(x_{i+t} - m)>, rho(t) = Gamma(t) / Gamma(0),
//     tau_int(W) = 1/2 + sum_{t=1..W} rho(t), W the smallest window with W >= c tau_int(W)
//     (Madras-Sokal automatic windowing, c = 6 by default); error = sqrt(2 tau_int Gamma(0) / n),
//     error of tau_int ~ tau_int sqrt(2 (2W + 1) / n).
//   Binning: the standard error of the means of consecutive blocks of B measurements, for
//     B = 1, 2, 4, ... while at least 16 blocks remain; it grows with B until B is several
//     tau_int and then levels off (this is also the jackknife error of the mean).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace latke {

struct SeriesStats {
  std::size_t n = 0;
  double mean = 0;
  double naive_error = 0;  ///< sqrt(Gamma(0) / n): as if the measurements were independent
  double tau_int = 0.5;    ///< integrated autocorrelation time, in measurements
  double tau_int_error = 0;
  int window = 0;
  double error = 0;                            ///< Gamma-method error of the mean
  std::vector<std::pair<int, double>> binned;  ///< (block size, error of the mean)
  /// The larger of `error` and the binned error at the largest block size: the one to quote.
  double conservative_error = 0;
};

/// @brief Mean, errors and autocorrelation of x (at least 2 measurements).
SeriesStats analyze_series(const std::vector<double>& x, double window_factor = 6.0);

}  // namespace latke
