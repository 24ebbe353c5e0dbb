// Small fixes for the reader, loaded with `defer` on every page (no dependencies).
// 1. The ☰ and 目录 buttons open their drawers on phones and tablets. pydata-sphinx-theme 0.17
//    binds only the *first* .primary-toggle/.secondary-toggle, which sphinx-book-theme hides;
//    the visible ones did nothing (pydata/pydata-sphinx-theme#2451). On wide screens, where the
//    sidebar is already on the page, the same buttons show or hide it instead.
// 2. Tap or click a figure to see it full size (the images are stored at 2x).
// 3. bookPlotly: plotly figures laid out for the screen they land on (website-review M3, L6).
(function () {
  "use strict";
  function ready(fn) {
    if (document.readyState !== "loading") { fn(); } else { document.addEventListener("DOMContentLoaded", fn); }
  }

  var ZOOMABLE = ".cell_output, figure, .book-widget-preview";

  function visible(el) { return !!(el && el.offsetParent !== null && getComputedStyle(el).visibility !== "hidden"); }

  ready(function () {
    [["primary-toggle", "pst-primary-sidebar", "book-hide-primary"],
     ["secondary-toggle", "pst-secondary-sidebar", "book-hide-secondary"]].forEach(function (spec) {
      var buttons = Array.prototype.slice.call(document.querySelectorAll("." + spec[0]));
      if (buttons.length < 2) { return; }
      var bound = buttons[0];          // the one the theme listens to (opens the <dialog>)
      var sidebar = document.getElementById(spec[1]);
      buttons.slice(1).forEach(function (btn) {
        btn.addEventListener("click", function (ev) {
          ev.preventDefault();
          ev.stopPropagation();
          var inline = sidebar && (visible(sidebar) || document.body.classList.contains(spec[2]))
            && !document.querySelector("dialog[open]");
          if (inline) {                  // wide screen: collapse or restore the sidebar in place
            document.body.classList.toggle(spec[2]);
          } else {
            bound.click();
          }
        });
      });
    });

    // 2. figure zoom: a click or tap on an output figure shows it at full resolution
    var overlay = null;
    function close() {
      if (overlay) { overlay.remove(); overlay = null; document.body.classList.remove("book-zoomed"); }
    }
    document.addEventListener("click", function (ev) {
      var img = ev.target;
      if (!img || img.tagName !== "IMG" || !img.closest(ZOOMABLE)) { return; }
      var link = img.closest("a");  // Sphinx links scaled images to the file: zoom in place instead
      if (link && !link.classList.contains("image-reference")) { return; }
      ev.preventDefault();
      close();
      overlay = document.createElement("div");
      overlay.className = "book-zoom-overlay";
      overlay.setAttribute("role", "dialog");
      overlay.setAttribute("aria-label", "放大的图（点击或按 Esc 关闭）");
      var big = document.createElement("img");
      big.src = img.currentSrc || img.src;
      big.alt = img.alt || "";
      // natural size, but never narrower than the screen: on a phone this is the zoom
      big.style.width = Math.max(img.naturalWidth / (window.devicePixelRatio > 1 ? 1 : 2), window.innerWidth) + "px";
      overlay.appendChild(big);
      overlay.addEventListener("click", close);
      document.body.appendChild(overlay);
      document.body.classList.add("book-zoomed");
    });
    document.addEventListener("keydown", function (ev) { if (ev.key === "Escape") { close(); } });
  });

  // 3. plotly figures: phones get the legend on top, a smaller title, no mode bar; every
  //    figure gets 10^n tick labels instead of SI letters ("100B" read as bytes or batch).
  window.bookPlotly = function (id, data, layout, config, frames) {
    var narrow = window.innerWidth < 640;
    layout = Object.assign({}, layout);
    config = Object.assign({displaylogo: false, responsive: true}, config);
    Object.keys(layout).forEach(function (k) {
      if (/^[xy]axis\d*$/.test(k) && layout[k] && layout[k].type === "log" && !layout[k].exponentformat) {
        layout[k] = Object.assign({}, layout[k], {exponentformat: "power"});
      }
    });
    // category x axes (long Chinese labels, often rotated): keep the slider clear of the ticks
    var first = data && data[0];
    if (first && first.x && typeof first.x[0] === "string" && (layout.sliders || []).length) {
      layout.sliders = layout.sliders.map(function (s) {
        return Object.assign({}, s, {pad: Object.assign({}, s.pad || {}, {t: Math.max((s.pad || {}).t || 0, 110)})});
      });
      layout.height = (layout.height || 450) + 50;
      document.getElementById(id).style.height = layout.height + "px";
    }
    if (narrow) {
      config.displayModeBar = false;
      var title = layout.title && typeof layout.title === "object" ? layout.title : {text: layout.title || ""};
      layout.title = Object.assign({}, title, {font: {size: 13}, x: 0, xanchor: "left", automargin: true});
      layout.legend = Object.assign({}, layout.legend || {}, {orientation: "h", x: 0, xanchor: "left",
                                    y: 1.02, yanchor: "bottom", font: {size: 10}});
      var m = layout.margin || {};
      layout.margin = {l: Math.min(m.l || 50, 48), r: 8, t: Math.max(m.t || 60, 96), b: m.b || 60};
      layout.height = (layout.height || 450) + 60;
      document.getElementById(id).style.height = layout.height + "px";
      var wrap = function (s) { return typeof s === "string" ? s.replace("）（", "）<br>（") : s; };
      layout.title.text = wrap(layout.title.text);
      (layout.sliders || []).forEach(function (s) {
        s.currentvalue = Object.assign({}, s.currentvalue || {}, {font: {size: 12}});
        s.font = Object.assign({}, s.font || {}, {size: 9});
        s.pad = Object.assign({}, s.pad || {}, {t: Math.max((s.pad || {}).t || 0, 75)});
        (s.steps || []).forEach(function (st) {   // the slider rewrites the title: wrap it too
          if (st.args && st.args[1] && st.args[1]["title.text"]) { st.args[1]["title.text"] = wrap(st.args[1]["title.text"]); }
        });
      });
    } else {
      config.displayModeBar = "hover";
    }
    return Plotly.newPlot(id, {data: data, layout: layout, config: config, frames: frames || []});
  };
})();
