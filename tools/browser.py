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
    """A static host like the ones that serve precompressed files (nginx gzip_static/brotli_static):
    ``X.br`` or ``X.gz`` beside ``X`` is sent with Content-Encoding when the browser accepts it.
    With ``compress_on_the_fly`` (class attribute), text without a precompressed twin is gzipped
    per request, as GitHub Pages does; off, it goes out raw (what the page-weight test wants:
    a file the build forgot to precompress then counts in full)."""

    compress_on_the_fly = False
    TEXT = (".html", ".js", ".css", ".json", ".svg", ".txt", ".map", ".xml", ".ttf", ".eot", ".inv")

    def log_message(self, *a):
        pass

    def send_head(self):
        path = self.translate_path(self.path)
        if os.path.isdir(path) or not os.path.isfile(path):
            return super().send_head()
        accept = self.headers.get("Accept-Encoding", "")
        for enc, ext in (("br", ".br"), ("gzip", ".gz")):
            if enc in accept and os.path.isfile(path + ext):
                with open(path + ext, "rb") as f:
                    body = f.read()
                return self._send(path, body, enc)
        if self.compress_on_the_fly and "gzip" in accept and path.endswith(self.TEXT):
            import gzip
            with open(path, "rb") as f:
                return self._send(path, gzip.compress(f.read(), 6, mtime=0), "gzip")
        return super().send_head()

    def _send(self, path, body, encoding):
        import io
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Encoding", encoding)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Vary", "Accept-Encoding")
        self.end_headers()
        return io.BytesIO(body)


class _OnTheFly(_Quiet):
    compress_on_the_fly = True


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        """A page closed while a response was still on its way (the benchmark closes each page at
        its first paint, on a throttled link) is not an error; anything else is printed."""
        import sys
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


@contextlib.contextmanager
def serve(directory, compress_on_the_fly: bool = False):
    """Serve ``directory`` on 127.0.0.1 (a free port); yields the base URL. Precompressed
    ``.br``/``.gz`` files are served as the encoded form of their original (see ``_Quiet``)."""
    handler = functools.partial(_OnTheFly if compress_on_the_fly else _Quiet, directory=os.fspath(directory))
    srv = _Server(("127.0.0.1", 0), handler)
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


#: Lighthouse's "mid-range phone on slow 4G": 4x CPU slowdown, 1.6 Mbit/s down, 750 kbit/s up, 150 ms RTT
PHONE_THROTTLE = {"cpu": 4, "down_bps": 1.6e6, "up_bps": 7.5e5, "rtt_ms": 150}
PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 3, "is_mobile": True, "has_touch": True}
DESKTOP = {"viewport": {"width": 1280, "height": 900}}


def load_page(b, url, *, device=None, throttle=None, scroll=True, until="load", timeout_ms=120000,
              listen=None):
    """Open ``url`` in a fresh context with the cache disabled; returns (page, stats).

    stats: ``bytes`` (what came over the wire, compressed as served, headers included), ``requests``,
    ``js_bytes`` (wire bytes of scripts), ``fcp``, ``dcl``, ``load`` (seconds; None if not reached).
    ``scroll`` scrolls to the bottom after load so lazy images are counted: the weight of the page
    a reader reads to the end. ``throttle``: a dict like PHONE_THROTTLE (CPU and network via CDP).
    ``listen(page)`` is called before the navigation (to attach event handlers).
    """
    ctx = b.new_context(**(device or DESKTOP))
    page = ctx.new_page()
    cdp = ctx.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
    if throttle:
        cdp.send("Network.emulateNetworkConditions", {
            "offline": False, "latency": throttle["rtt_ms"],
            "downloadThroughput": throttle["down_bps"] / 8, "uploadThroughput": throttle["up_bps"] / 8})
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": throttle["cpu"]})
    kinds, sizes, urls = {}, {}, {}
    cdp.on("Network.responseReceived", lambda e: (kinds.__setitem__(e["requestId"], e.get("type")),
                                                  urls.__setitem__(e["requestId"], e["response"]["url"])))
    cdp.on("Network.loadingFinished", lambda e: sizes.__setitem__(e["requestId"], e["encodedDataLength"]))
    if listen is not None:
        listen(page)
    if until == "fcp":  # the first paint, then DOMContentLoaded if it comes within timeout_ms
        page.goto(url, wait_until="commit", timeout=timeout_ms)
        page.wait_for_function("() => performance.getEntriesByName('first-contentful-paint').length > 0",
                               timeout=timeout_ms)
        try:
            page.wait_for_load_state("domcontentloaded", timeout=timeout_ms)
        except Exception:  # playwright's TimeoutError: report DCL as None
            pass
    else:
        page.goto(url, wait_until=until, timeout=timeout_ms)
    if scroll:
        page.evaluate("""async () => { const h = () => document.documentElement.scrollHeight;
            for (let y = 0; y < h(); y += innerHeight) { scrollTo(0, y); await new Promise(r => setTimeout(r, 60)); }
            scrollTo(0, 0); }""")
        page.wait_for_load_state("networkidle", timeout=timeout_ms)
    t = page.evaluate("""() => { const p = performance.getEntriesByName('first-contentful-paint')[0];
        const n = performance.getEntriesByType('navigation')[0];
        return {fcp: p ? p.startTime / 1000 : null,
                dcl: n && n.domContentLoadedEventEnd ? n.domContentLoadedEventEnd / 1000 : null,
                load: n && n.loadEventEnd ? n.loadEventEnd / 1000 : null}; }""")
    stats = {"bytes": sum(sizes.values()), "requests": len(sizes),
             "js_bytes": sum(v for k, v in sizes.items() if kinds.get(k) == "Script"),
             "urls": {urls.get(k, k): v for k, v in sizes.items()}, **t}
    return page, stats


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
