"""Issue #17's benchmark for chapter 1: run the chapter's own-roofline calibration
(``efficiency.own_roofline`` over ``measure.matmul_sweep``) N times on this machine and report,
per run, the median |measured/predicted − 1| on the held-back shapes (goal: <= 15 % in every
run), the same for the clean roofline with the fitted peak and bandwidth, the fit and the
run-to-run spread of the calibration.

    python tools/bench_own_roofline.py [N=5]

Timings, not a test: the numbers depend on the machine and on what else runs on it.
"""
import sys
import time

from scaling_lib import efficiency
from scaling_lib.xla import measure

GOAL = 0.15


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    n = int(argv[0]) if argv else 5
    errs, peaks, bws = [], [], []
    for run in range(n):
        t0 = time.perf_counter()
        o = efficiency.own_roofline(measure.matmul_sweep)
        f = o.fit
        errs.append(o.held_out_error)
        peaks.append(f.peak)
        bws.append(f.bandwidth)
        sp = ", ".join(f"{k} x{v:.2f}" for k, v in o.spread.items())
        print(f"run {run + 1}: held-out median |measured/predicted - 1| = {100 * o.held_out_error:5.1f} %"
              f" (clean roofline {100 * o.held_out_bound_error:5.1f} %, worst point "
              f"{100 * max(abs(o.ratio[~o.calibrate] - 1)):5.0f} %; the same shape in two repeats differs by "
              f"{100 * o.repeat_noise:4.0f} % at the median); fit peak {f.peak:.3g} FLOP/s, "
              f"bandwidth {f.bandwidth:.3g} B/s, overhead {f.overhead:.2g} s, overlap {f.overlap:.2f};"
              f" spread between repeats: {sp}; {time.perf_counter() - t0:.0f} s", flush=True)
    ok = sum(e <= GOAL for e in errs)
    print(f"{ok} of {n} runs within {100 * GOAL:.0f} % median on the held-back shapes; "
          f"calibrated peak varies x{max(peaks) / min(peaks):.2f} and bandwidth "
          f"x{max(bws) / min(bws):.2f} across runs")
    return 0 if ok == n else 1


if __name__ == "__main__":
    raise SystemExit(main())
