"""Reference values for drivegen's Savitzky-Golay filter.

Reads one JSON object from stdin:
  {"filter": [{"x": [...], "window", "polyorder", "deriv", "delta", "mode", "cval"}, ...],
   "coeffs": [{"window", "polyorder", "deriv", "delta", "pos"}, ...]}
and writes {"filter": [...], "coeffs_exact": [...], "coeffs_scipy": [...]} to stdout:
  - filter: scipy.signal.savgol_filter of each case;
  - coeffs_exact: the least-squares weights computed in exact rational arithmetic (the
    minimum-norm solution of A w = e_deriv * deriv! / delta**deriv, A[k][j] = (j - pos)**k),
    rounded to float once at the end;
  - coeffs_scipy: scipy.signal.savgol_coeffs(..., pos=pos, use="dot") for comparison.
Floats are written in repr form, so they round-trip exactly.
"""

import json
import math
import sys
from fractions import Fraction

import numpy as np
from scipy.signal import savgol_coeffs, savgol_filter


def exact_coeffs(window, polyorder, deriv, delta, pos):
    xs = [Fraction(j - pos) for j in range(window)]
    a = [[x**k for x in xs] for k in range(polyorder + 1)]
    n = polyorder + 1
    if deriv > polyorder:
        return [0.0] * window
    # Normal equations of the minimum-norm problem, solved exactly: (A A^T) z = y, w = A^T z.
    g = [[sum(a[i][j] * a[k][j] for j in range(window)) for k in range(n)] for i in range(n)]
    y = [Fraction(0)] * n
    y[deriv] = Fraction(math.factorial(deriv)) / Fraction(delta) ** deriv
    m = [row[:] + [y[i]] for i, row in enumerate(g)]
    for c in range(n):
        piv = next(r for r in range(c, n) if m[r][c] != 0)
        m[c], m[piv] = m[piv], m[c]
        for r in range(n):
            if r != c and m[r][c] != 0:
                f = m[r][c] / m[c][c]
                m[r] = [u - f * v for u, v in zip(m[r], m[c])]
    z = [m[i][n] / m[i][i] for i in range(n)]
    return [float(sum(a[k][j] * z[k] for k in range(n))) for j in range(window)]


def main() -> None:
    req = json.load(sys.stdin)
    out = {"filter": [], "coeffs_exact": [], "coeffs_scipy": []}
    for c in req.get("filter", []):
        y = savgol_filter(
            np.asarray(c["x"], dtype=np.float64),
            c["window"],
            c["polyorder"],
            deriv=c["deriv"],
            delta=c["delta"],
            mode=c["mode"],
            cval=c["cval"],
        )
        out["filter"].append([float(v) for v in y])
    for c in req.get("coeffs", []):
        args = (c["window"], c["polyorder"], c["deriv"], c["delta"], c["pos"])
        out["coeffs_exact"].append(exact_coeffs(*args))
        s = savgol_coeffs(c["window"], c["polyorder"], deriv=c["deriv"], delta=c["delta"], pos=c["pos"], use="dot")
        out["coeffs_scipy"].append([float(v) for v in s])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
