#include "src/fields/precision.h"

#include "src/core/error.h"

namespace latke {

const char* to_string(Precision p) {
  switch (p) {
    case Precision::double_: return "double";
    case Precision::single: return "single";
    default: return "half";
  }
}

Precision parse_precision(const std::string& name) {
  if (name == "double") return Precision::double_;
  if (name == "single") return Precision::single;
  if (name == "half") return Precision::half;
  fail("unknown precision '", name, "': expected double, single or half");
}

std::size_t real_bytes(Precision p) {
  switch (p) {
    case Precision::double_: return 8;
    case Precision::single: return 4;
    default: return 2;
  }
}

const char* to_string(Reconstruct r) { return r == Reconstruct::r12 ? "12" : "18"; }

Reconstruct parse_reconstruct(const std::string& name) {
  if (name == "18") return Reconstruct::r18;
  if (name == "12") return Reconstruct::r12;
  fail("unknown reconstruct '", name, "': expected 18 or 12");
}

}  // namespace latke
