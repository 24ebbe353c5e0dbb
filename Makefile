# 如何扩展你的模型 — the two commands: `make book` and `make test`. Everything else is optional.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export PYTHONHASHSEED := 0
export TF_CPP_MIN_LOG_LEVEL := 3
export MPLBACKEND := Agg
NBVAL := -p nbval --nbval --nbval-current-env --nbval-cell-timeout=180 \
         --nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider
JOBS ?= 2

.PHONY: book test execute student grade serve clean venv fonts assets unit nbval site-test \
        check-notebooks screenshots test-colab

## make book: create .venv, install everything, build the website; prints the path of index.html
book: venv fonts assets
	rm -rf _build/html
	$(VENV)/bin/jupyter-book build . -W -n --keep-going
	@echo; echo "网站已生成 / site built: $(CURDIR)/_build/html/index.html"

## make test: unit + property tests, notebooks (nbval), student copies, grader, book build + HTML checks
test: venv fonts assets
	@$(PY) tools/versions.py
	$(PY) -m pytest -q -n $(JOBS) tests --ignore=tests/test_site.py
	$(PY) tools/nbtool.py check
	$(PY) -m pytest -q -n $(JOBS) --dist loadscope $(NBVAL) chapters exercises
	$(PY) -m pytest -q tests/test_site.py

venv: $(STAMP)
$(STAMP): requirements.txt pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -r requirements.txt
	$(VENV)/bin/pip install -q --no-deps -e .
	touch $(STAMP)

## fonts: a CJK font for matplotlib and the browser (apt, only when root and none is installed)
fonts:
	@if fc-list 2>/dev/null | grep -qi "Noto Sans CJK"; then :; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null; then \
	  echo "installing fonts-noto-cjk"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-noto-cjk >/dev/null) \
	  && rm -rf $${MPLCONFIGDIR:-$$HOME/.cache/matplotlib}/fontlist-*.json; \
	else echo "警告：没有中文字体，也无法自动安装（需要 root 和 apt）：图中的汉字会是方框"; fi

assets: venv
	PY=$(PY) bash tools/fetch_assets.sh

## make execute: re-run notebooks whose source changed (or NB="01_roofline ..."), storing outputs
execute: venv fonts
	$(PY) tools/nbtool.py execute $(NB) $(if $(ALL),--all,)
	$(PY) -m scaling_lib.grading strip

## make student: regenerate exercises/student/ from the reference exercise notebooks
student: venv
	$(PY) -m scaling_lib.grading strip

## make grade SUBMISSIONS="a.ipynb b.ipynb": grade submitted notebooks -> scores.csv / scores.json
grade: venv
	$(PY) -m scaling_lib.grading grade $(SUBMISSIONS) --out scores.csv

## make serve: the built website on http://127.0.0.1:8000
serve:
	$(PY) -m http.server 8000 --bind 127.0.0.1 -d _build/html

clean:
	rm -rf _build .pytest_cache

## make nbval-one NB=chapters/01_roofline.ipynb: one notebook under nbval
nbval-one: venv
	$(PY) -m pytest -q $(NBVAL) $(NB)
