#!/usr/bin/env bash
# Put the site's JavaScript (MathJax, plotly.js) under _assets/offline/, from the npm and PyPI
# registries, so the built site needs no CDN.
# - plotly.min.js (4.8 MB, every trace type) comes with the plotly Python package;
#   plotly-basic.min.js (scatter, bar, pie: all this book draws; ~1 MB) is the same plotly.js
#   version's partial bundle from npm. _ext/book_ext.py picks per page the smallest that suffices.
# - ipywidgets need no JavaScript on the site: they are rendered at build time as static previews
#   (scaling_lib/_mystnb.py), so the widget manager and require.js are not fetched.
set -euo pipefail
cd "$(dirname "$0")/.."
out=_assets/offline
stamp=$out/.stamp-v2
[ -f "$stamp" ] && exit 0
PY=${PY:-.venv/bin/python}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
full=$($PY -c 'import plotly, os; print(os.path.join(os.path.dirname(plotly.__file__), "package_data", "plotly.min.js"))')
ver=$(head -c 400 "$full" | sed -n 's/.*plotly\.js v\([0-9][0-9.]*\).*/\1/p' | head -1)
[ -n "$ver" ] || { echo "cannot read the plotly.js version from $full" >&2; exit 1; }
( cd "$tmp" && npm pack --silent mathjax@3.2.2 "plotly.js-basic-dist-min@$ver" >/dev/null )
for t in "$tmp"/*.tgz; do d="$tmp/$(basename "$t" .tgz)"; mkdir -p "$d"; tar xzf "$t" -C "$d"; done
mj=$(ls -d "$tmp"/mathjax-*/package); pb=$(ls -d "$tmp"/plotly.js-basic-dist-min-*/package)
rm -rf "$out/mathjax" "$out/html-manager" "$out/require.js" "$out/widgets-offline.js" "$out"/.stamp-v1
mkdir -p "$out/mathjax"
cp -r "$mj"/es5/tex-mml-chtml.js "$mj"/es5/output "$mj"/es5/input "$mj"/es5/ui "$mj"/es5/a11y "$mj"/es5/sre "$mj"/es5/adaptors "$out/mathjax/"
cp "$full" "$out/plotly.min.js"
cp "$pb/plotly-basic.min.js" "$out/plotly-basic.min.js"
touch "$stamp"
echo "offline assets in $out (plotly.js $ver)"
