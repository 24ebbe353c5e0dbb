"""`make bench-site`: page weight and first paint of the built site on a throttled phone.

    python tools/bench_site.py [SITE_DIR] [--runs 3] [--pages chapters/01_roofline.html ...]
                               [--json out.json] [--label after]

For each page: bytes over the wire and requests (a full read: scrolled to the end, cache off,
no throttling: deterministic), then ``--runs`` cold loads on Lighthouse's mid-range phone profile
(CPU ×4, 1.6 Mbit/s down, 150 ms RTT, 390×844 at DPR 3) giving the median first contentful
paint and DOMContentLoaded. The server sends precompressed ``.br``/``.gz`` files where the build
wrote them and gzips other text on the fly (as GitHub Pages would), so an old build without
precompressed files is measured fairly. Timings depend on the machine: on a shared 2-core box
they are pessimistic, which is why this is a benchmark and not a test (the byte budget is tested
in tests/test_browser.py). Prints a Markdown table.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import browser as br  # noqa: E402

BUDGET_BYTES = 1.5e6
BUDGET_FCP_S = 2.5


def default_pages(site: Path) -> list[str]:
    pages = sorted(p.relative_to(site).as_posix() for p in (site / "chapters").glob("*.html"))
    extra = ["exercises/01_roofline.html", "exercises/05_training.html", "appendix/glossary.html",
             "appendix/hardware.html"]
    return pages + [p for p in extra if (site / p).exists()]


def bench(site: Path, pages: list[str], runs: int) -> list[dict]:
    rows = []
    with br.serve(site, compress_on_the_fly=True) as base, br.browser() as b:
        for rel in pages:
            page, weight = br.load_page(b, base + rel, device=br.PHONE)
            page.context.close()
            fcps, dcls = [], []
            for _ in range(runs):
                page, t = br.load_page(b, base + rel, device=br.PHONE, throttle=br.PHONE_THROTTLE,
                                       scroll=False, until="fcp", timeout_ms=45000)
                page.context.close()
                if t["fcp"] is not None:
                    fcps.append(t["fcp"])
                if t["dcl"] is not None:
                    dcls.append(t["dcl"])
            row = {"page": rel, "bytes": weight["bytes"], "requests": weight["requests"],
                   "js_bytes": weight["js_bytes"],
                   "fcp_s": statistics.median(fcps) if fcps else None,
                   "dcl_s": statistics.median(dcls) if dcls else None}
            rows.append(row)
            print(f"{rel}: {row['bytes'] / 1e6:.2f} MB, FCP {row['fcp_s']}", file=sys.stderr, flush=True)
    return rows


def table(rows: list[dict]) -> str:
    out = ["| page | MB over the wire | requests | JS MB | FCP phone (s) | DOMContentLoaded phone (s) |",
           "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        f = lambda v: "—" if v is None else f"{v:.2f}"
        out.append(f"| {r['page']} | {r['bytes'] / 1e6:.2f} | {r['requests']} | {r['js_bytes'] / 1e6:.2f} | "
                   f"{f(r['fcp_s'])} | {f(r['dcl_s'])} |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("site", nargs="?", default="_build/html")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--pages", nargs="*")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    site = Path(a.site)
    if not (site / "index.html").exists():
        sys.exit(f"{site} has no index.html: build the site first (make book)")
    if a.runs < 1:
        sys.exit("--runs must be >= 1")
    rows = bench(site, a.pages or default_pages(site), a.runs)
    print(table(rows))
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    over = [r["page"] for r in rows if r["page"].startswith("chapters/")
            and (r["bytes"] > BUDGET_BYTES or (r["fcp_s"] or 99) > BUDGET_FCP_S)]
    if over:
        print(f"\nover budget (chapter pages: < {BUDGET_BYTES / 1e6:.1f} MB, FCP < {BUDGET_FCP_S} s): "
              + ", ".join(over))
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
