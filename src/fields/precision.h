// Storage precisions and link reconstruction, and their names on the command line.
#pragma once

#include <cstddef>
#include <string>

namespace latke {

/// How a field stores its reals: IEEE double, IEEE single, or half = 16-bit fixed point
/// scaled by a norm (per site for spinors and clover blocks, per field for links).
enum class Precision { double_, single, half };

/// Gauge link storage: 18 reals, or 12 (the first two rows; the third is rebuilt as the
/// complex conjugate of their cross product, exact for SU(3)).
enum class Reconstruct { r18 = 18, r12 = 12 };

const char* to_string(Precision p);
/// @brief "double", "single" or "half"; anything else is an error naming the value.
Precision parse_precision(const std::string& name);
/// @brief Bytes per stored real.
std::size_t real_bytes(Precision p);

const char* to_string(Reconstruct r);
/// @brief "18" or "12"; anything else is an error naming the value.
Reconstruct parse_reconstruct(const std::string& name);

/// Storage type for each precision.
template <Precision P> struct storage;
template <> struct storage<Precision::double_> { using type = double; };
template <> struct storage<Precision::single> { using type = float; };
template <> struct storage<Precision::half> { using type = short; };

/// Arithmetic type used with a storage type: double for double, float otherwise.
template <typename Store> struct compute_type { using type = float; };
template <> struct compute_type<double> { using type = double; };

/// Call f(Store{}) with the storage type of precision p.
template <typename F>
decltype(auto) dispatch_precision(Precision p, F&& f) {
  switch (p) {
    case Precision::double_: return f(double{});
    case Precision::single: return f(float{});
    default: return f(short{});
  }
}

}  // namespace latke
