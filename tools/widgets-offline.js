// Fixes for @jupyter-widgets/html-manager served from our own site (see TOOLCHAIN.md §4):
// 1. its fonts must load from next to embed-amd.js, not relative to the page;
// 2. it calls MathJax 2's Hub.Queue, which Sphinx's MathJax 3 does not have.
(function () {
  var here = document.currentScript && document.currentScript.src;
  if (window.require && here) {
    window.require.config({paths: {'@jupyter-widgets/html-manager/dist': new URL('html-manager', here).href}});
  }
  document.addEventListener('DOMContentLoaded', function () {
    if (window.MathJax && !window.MathJax.Hub) {
      window.MathJax.Hub = {Queue: function (job) {
        if (window.MathJax.typesetPromise && job && job[2]) { return window.MathJax.typesetPromise([job[2]]); }
      }};
    }
  });
})();
