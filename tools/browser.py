"""Drive Debian's chromium with playwright over a locally served copy of the site.

Used by tests/test_browser.py and by `make screenshots`. No `playwright install` is needed: we
launch the system chromium (installed by the Makefile with apt when missing).
"""
from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import threading

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


@contextlib.contextmanager
def serve(directory):
    """Serve ``directory`` on 127.0.0.1 (a free port); yields the base URL."""
    handler = functools.partial(_Quiet, directory=os.fspath(directory))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/"
    finally:
        srv.shutdown()
        srv.server_close()


@contextlib.contextmanager
def browser():
    from playwright.sync_api import sync_playwright

    exe = chromium_path()
    if exe is None:
        raise RuntimeError("chromium not found: apt-get install chromium (make test does this as root)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def screenshots(html_dir, out_dir, pages=None, width=1280, height=900):
    """PNG of the first screen of each chapter page."""
    from pathlib import Path

    html_dir, out_dir = Path(html_dir), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    pages = pages or sorted(p.relative_to(html_dir).as_posix() for p in (html_dir / "chapters").glob("*.html"))
    written = []
    with serve(html_dir) as base, browser() as b:
        page = b.new_page(viewport={"width": width, "height": height})
        for rel in pages:
            page.goto(base + rel, wait_until="load")
            page.wait_for_timeout(800)
            target = out_dir / (Path(rel).stem + ".png")
            page.screenshot(path=str(target))
            written.append(target)
    return written


if __name__ == "__main__":
    import sys
    html = sys.argv[1] if len(sys.argv) > 1 else "_build/html"
    out = sys.argv[2] if len(sys.argv) > 2 else "_build/screenshots"
    for p in screenshots(html, out):
        print(p)
