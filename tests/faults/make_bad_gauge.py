#!/usr/bin/env python3
"""make_bad_gauge.py DIR: NERSC gauge files (4x4x4x4, 3x3 links, IEEE64BIG) for the fault
tests, each with a correct CHECKSUM so that only the check of the links themselves can
refuse them (struct only, no numpy):

  unit.nersc   the unit gauge (PLAQUETTE 1, LINK_TRACE 1): a good file
  nan.nersc    the unit gauge with entry [0][1] of U_2 at site (x,y,z,t) = (1,2,3,3) NaN; no
               PLAQUETTE or LINK_TRACE line (as in issue 36). t = 3 is on rank 1 of -latke_grid 1,1,1,2
  twice.nersc  every link 2 x 1 (not SU(3)); PLAQUETTE 16 and LINK_TRACE 2, as its links give
  zero.nersc   every link 0; PLAQUETTE 0 and LINK_TRACE 0, as its links give
"""
import math
import os
import struct
import sys

DIMS = (4, 4, 4, 4)


def links(value_of):
    """The data: sites x fastest, per site mu = 0..3, per link 9 complex entries (re, im)."""
    out = []
    X, Y, Z, T = DIMS
    for t in range(T):
        for z in range(Z):
            for y in range(Y):
                for x in range(X):
                    for mu in range(4):
                        for k in range(9):
                            out.extend(value_of((x, y, z, t), mu, k // 3, k % 3))
    return struct.pack(">%dd" % len(out), *out)


def write(path, data, plaquette=None, link_trace=None):
    words = struct.unpack(">%dI" % (len(data) // 4), data)
    checksum = sum(words) & 0xFFFFFFFF
    h = ["BEGIN_HEADER", "HDR_VERSION = 1.0", "DATATYPE = 4D_SU3_GAUGE_3x3", "STORAGE_FORMAT = 1.0"]
    h += ["DIMENSION_%d = %d" % (d + 1, n) for d, n in enumerate(DIMS)]
    if link_trace is not None:
        h.append("LINK_TRACE = %r" % link_trace)
    if plaquette is not None:
        h.append("PLAQUETTE = %r" % plaquette)
    h += ["BOUNDARY_%d = PERIODIC" % (d + 1) for d in range(4)]
    h += ["CHECKSUM = %x" % checksum, "ENSEMBLE_ID = latke-faults", "SEQUENCE_NUMBER = 0",
          "FLOATING_POINT = IEEE64BIG", "END_HEADER"]
    with open(path, "wb") as f:
        f.write(("\n".join(h) + "\n").encode("ascii"))
        f.write(data)


def unit(scale):
    return lambda site, mu, r, c: (scale if r == c else 0.0, 0.0)


def unit_with_nan(site, mu, r, c):
    if site == (1, 2, 3, 3) and mu == 2 and (r, c) == (0, 1):
        return (math.nan, 0.0)
    return unit(1.0)(site, mu, r, c)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_bad_gauge.py DIR")
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    write(os.path.join(d, "unit.nersc"), links(unit(1.0)), 1.0, 1.0)
    write(os.path.join(d, "nan.nersc"), links(unit_with_nan))
    write(os.path.join(d, "twice.nersc"), links(unit(2.0)), 16.0, 2.0)
    write(os.path.join(d, "zero.nersc"), links(unit(0.0)), 0.0, 0.0)


if __name__ == "__main__":
    main()
