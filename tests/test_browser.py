"""The built website in a real browser (Debian chromium driven by playwright), served locally.

Checks every page: no console errors, no failed or external requests, math typeset, images
loaded, widget views rendered, first paint < 2 s; a plotly slider changes its figure; the search
page finds Chinese terms and links the right chapter; each page's Colab link points at its own
notebook on the configured repository; every internal link resolves.
"""
import re
import sys
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import browser as br  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.browser]

if br.chromium_path() is None:
    pytest.skip("chromium is not installed (make test installs it when run as root)", allow_module_level=True)


def _repo():
    text = (ROOT / "_config.yml").read_text(encoding="utf-8")
    url = re.search(r"^repository:\s*\n\s+url:\s*(\S+)", text, re.M).group(1)
    branch = re.search(r"^\s+branch:\s*(\S+)", text, re.M).group(1)
    return url.replace("https://github.com/", ""), branch


def _pages(html_dir):
    return sorted(p.relative_to(html_dir).as_posix() for p in html_dir.rglob("*.html")
                  if "_static" not in p.parts and "_sources" not in p.parts
                  and p.name not in ("genindex.html", "search.html", "index.html"))


@pytest.fixture(scope="module")
def served(site):
    html_dir, _ = site
    with br.serve(html_dir) as base, br.browser() as b:
        yield html_dir, base, b


def _visit(b, url):
    """Open ``url``; return (page, problems, first contentful paint in s)."""
    page = b.new_page(viewport={"width": 1280, "height": 900})
    problems = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text[:200]}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {str(e)[:200]}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
    page.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    page.on("request", lambda r: problems.append(f"external request: {r.url}")
            if not r.url.startswith(("http://127.0.0.1", "data:", "blob:", "about:")) else None)
    page.goto(url, wait_until="load")
    page.evaluate("() => (window.MathJax && window.MathJax.startup && window.MathJax.startup.promise)"
                  " ? window.MathJax.startup.promise.then(() => true) : true")
    fcp = page.evaluate("() => { const e = performance.getEntriesByName('first-contentful-paint')[0];"
                        " return e ? e.startTime / 1000 : null; }")
    return page, problems, fcp


def test_every_page_loads_clean(served):
    html_dir, base, b = served
    failures = []
    t0 = time.perf_counter()
    for rel in _pages(html_dir):
        page, problems, fcp = _visit(b, base + rel)
        html = (html_dir / rel).read_text(encoding="utf-8")
        if 'class="math' in html and page.locator("mjx-container").count() == 0:
            problems.append("math not typeset (no mjx-container)")
        broken = page.evaluate("() => Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0)"
                               ".map(i => i.src)")
        problems += [f"image not loaded: {s}" for s in broken]
        if "application/vnd.jupyter.widget-state+json" in html and "jupyter-widgets" in html:
            try:
                page.wait_for_selector(".widget-dropdown, .widget-hslider, .widget-box", timeout=15000)
            except Exception:
                problems.append("widget views did not render")
            if page.locator("text=Error displaying widget").count():
                problems.append("'Error displaying widget' shown")
        if fcp is not None and fcp > 2.0:
            problems.append(f"first contentful paint {fcp:.2f} s > 2 s")
        page.wait_for_timeout(200)
        if problems:
            failures.append(f"{rel}: " + "; ".join(sorted(set(problems))[:6]))
        page.close()
    elapsed = time.perf_counter() - t0
    assert not failures, "\n".join(failures)
    assert elapsed < 180, f"browser pass took {elapsed:.0f} s (budget 180 s)"


def test_plotly_slider_changes_figure(served):
    html_dir, base, b = served
    page, problems, _ = _visit(b, base + "chapters/01_roofline.html")
    page.wait_for_selector(".plotly-graph-div .slider-rail-rect", timeout=15000)
    gd = page.locator(".plotly-graph-div").first
    before = gd.evaluate("g => [g.layout.title.text, g.data.map(t => t.visible !== false)]")
    rail = gd.locator("rect.slider-rail-rect").first
    rail.scroll_into_view_if_needed()
    box = rail.bounding_box()
    page.mouse.click(box["x"] + 0.9 * box["width"], box["y"] + box["height"] / 2)
    page.wait_for_timeout(500)
    after = gd.evaluate("g => [g.layout.title.text, g.data.map(t => t.visible !== false)]")
    assert after != before, f"slider click did not change the figure: {before[0]} -> {after[0]}"
    assert not problems, problems


@pytest.mark.parametrize("term, chapter", [("算术强度", "chapters/01_roofline.html"),
                                           ("流水线并行", "chapters/05_training.html"),
                                           ("强扩展", "chapters/00_intro.html")])
def test_search_finds_chinese_terms(served, term, chapter):
    html_dir, base, b = served
    if not (html_dir / chapter).exists():
        pytest.fail(f"{chapter} is not in the site")
    page, problems, _ = _visit(b, base + "search.html?q=" + term)
    page.wait_for_selector("#search-results ul li a, ul.search li a", timeout=20000)
    hrefs = page.eval_on_selector_all("#search-results li a, ul.search li a", "els => els.map(e => e.href)")
    assert any(chapter in h for h in hrefs), f"{term}: results {hrefs[:8]} lack {chapter}"


def test_colab_links_point_at_each_notebook(site):
    html_dir, _ = site
    repo, branch = _repo()
    missing = []
    for rel in _pages(html_dir):
        if not rel.startswith(("chapters/", "exercises/", "appendix/")):
            continue
        src = ROOT / rel.replace(".html", ".ipynb")
        if not src.exists():
            continue  # a plain markdown page has no notebook to launch
        nb_path = rel.replace(".html", ".ipynb")
        if nb_path.startswith("exercises/"):
            nb_path = nb_path.replace("exercises/", "exercises/student/")
        want = f"https://colab.research.google.com/github/{repo}/blob/{branch}/{nb_path}"
        if want not in (html_dir / rel).read_text(encoding="utf-8"):
            missing.append(f"{rel}: no link to {want}")
        target = ROOT / nb_path
        if not target.exists():
            missing.append(f"{rel}: Colab link target {nb_path} is not in the repository")
    assert not missing, "\n".join(missing)


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("href", "src"):
            if key in a and a[key]:
                self.links.append(a[key])


def test_internal_links_resolve(site):
    html_dir, _ = site
    bad = []
    for p in html_dir.rglob("*.html"):
        if "_static" in p.parts:
            continue
        parser = _Links()
        parser.feed(p.read_text(encoding="utf-8", errors="replace"))
        for link in parser.links:
            u = urlparse(link)
            if u.scheme or link.startswith(("#", "mailto:", "javascript:", "data:")) or not u.path:
                continue
            target = (p.parent / unquote(u.path)).resolve()
            if not target.exists():
                bad.append(f"{p.relative_to(html_dir)} -> {link}")
    assert not bad, "\n".join(sorted(set(bad))[:40])
