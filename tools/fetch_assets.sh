#!/usr/bin/env bash
# Put the site's JavaScript (MathJax, require.js, the widget manager, plotly.js) under
# _assets/offline/, from the npm and PyPI registries, so the built site needs no CDN.
set -euo pipefail
cd "$(dirname "$0")/.."
out=_assets/offline
stamp=$out/.stamp-v1
[ -f "$stamp" ] && exit 0
PY=${PY:-.venv/bin/python}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
( cd "$tmp" && npm pack --silent mathjax@3.2.2 requirejs@2.3.7 @jupyter-widgets/html-manager@1.0.6 >/dev/null )
for t in "$tmp"/*.tgz; do d="$tmp/$(basename "$t" .tgz)"; mkdir -p "$d"; tar xzf "$t" -C "$d"; done
mj=$(ls -d "$tmp"/mathjax-*/package); rq=$(ls -d "$tmp"/requirejs-*/package); hm=$(ls -d "$tmp"/jupyter-widgets-html-manager-*/package)
rm -rf "$out/mathjax" "$out/html-manager"
mkdir -p "$out/mathjax" "$out/html-manager"
cp -r "$mj"/es5/tex-mml-chtml.js "$mj"/es5/output "$mj"/es5/input "$mj"/es5/ui "$mj"/es5/a11y "$mj"/es5/sre "$mj"/es5/adaptors "$out/mathjax/"
cp "$rq"/require.js "$out/require.js"
cp "$hm"/dist/embed-amd.js "$out/html-manager/"
for ext in woff woff2 ttf eot svg; do cp "$hm"/dist/*."$ext" "$out/html-manager/" 2>/dev/null || true; done
cp "$($PY -c 'import plotly, os; print(os.path.join(os.path.dirname(plotly.__file__), "package_data", "plotly.min.js"))')" "$out/plotly.min.js"
cp tools/widgets-offline.js "$out/widgets-offline.js"
touch "$stamp"
echo "offline assets in $out"
