# 如何扩展你的模型 — the two commands: `make book` and `make test`. Everything else is optional.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export PYTHONHASHSEED := 0
export TF_CPP_MIN_LOG_LEVEL := 3
NBVAL := -p nbval --nbval --nbval-current-env --nbval-cell-timeout=180 \
         --nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider
JOBS ?= 2

.PHONY: book test execute student grade serve clean venv fonts assets chromium bubblewrap screenshots bench-site \
        test-colab test-other-cpu wheel nbval-one ledger

## make book: create .venv, install everything, build the website; prints the path of index.html
book: venv fonts assets
	rm -rf _build/html
	$(VENV)/bin/jupyter-book build . -W -n --keep-going
	@echo; echo "网站已生成 / site built: $(CURDIR)/_build/html/index.html"

## make test: unit + property tests, notebooks (nbval), student copies, grader, book build, browser.
## The site stage (the book build, then chromium, which mostly waits on pages) runs beside the unit
## tests and nbval, on the CPU they leave idle; its output goes to _build/test-site.log and is
## printed when both are done. Any failure fails the target; Ctrl-C stops both.
UNIT_TESTS := $(PY) -m pytest -q -n $(JOBS) tests --ignore=tests/test_site.py --ignore=tests/test_browser.py
NBVAL_ALL := $(PY) -m pytest -q -n $(JOBS) --dist loadscope $(NBVAL) --ignore=exercises/student chapters exercises appendix
SITE_TESTS := $(PY) -m pytest -q tests/test_site.py tests/test_browser.py
SITE_LOG := _build/test-site.log
test: venv fonts assets chromium bubblewrap
	@$(PY) tools/versions.py
	@mkdir -p _build; echo "$(SITE_TESTS) > $(SITE_LOG) 2>&1 &"; \
	setsid $(SITE_TESTS) > $(SITE_LOG) 2>&1 & site=$$!; \
	trap 'kill -TERM -- -$$site 2>/dev/null; exit 130' INT TERM; \
	echo "$(UNIT_TESTS)" && $(UNIT_TESTS) && \
	echo "$(PY) tools/nbtool.py check" && $(PY) tools/nbtool.py check && \
	echo "$(NBVAL_ALL)" && $(NBVAL_ALL); rc=$$?; \
	echo "waiting for the site stage ($(SITE_LOG))"; wait $$site; site_rc=$$?; \
	echo "== $(SITE_TESTS)"; cat $(SITE_LOG); \
	if [ $$rc -ne 0 ] || [ $$site_rc -ne 0 ]; then \
	  echo "make test FAILED: unit tests/check/nbval exit $$rc, site stage exit $$site_rc"; exit 1; fi

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

## chromium for the browser tests (apt, only when root and missing)
chromium:
	@if command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then :; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null; then \
	  echo "installing chromium"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "警告：没有 chromium，浏览器测试会被跳过"; fi

## make screenshots: PNG of each chapter's first screen -> _build/screenshots/
screenshots: book chromium
	$(PY) tools/browser.py _build/html _build/screenshots

## make bench-site: page weight and first contentful paint of the built site on a throttled
## mid-range phone (CPU x4, 1.6 Mbit/s, 150 ms RTT); budget: chapter pages < 1.5 MB, FCP < 2.5 s
bench-site: chromium
	@test -f _build/html/index.html || { echo "build the site first: make book"; exit 1; }
	$(PY) tools/bench_site.py _build/html --runs 3 --json _build/bench-site.json

## make test-colab: the Colab path. Build the wheel, install it (non-editable, --no-deps) into an
## environment with Colab's versions (requirements-colab.txt), import every module from it, then run
## every notebook from a scratch folder where the source tree is not importable, each notebook's
## setup cell taking its Colab branch (tools/colab_run.py). COLAB_NB="chapters/01_roofline.ipynb …"
## runs a subset.
COLAB_VENV := .venv-colab
WHEEL_DIR := _build/wheel
$(COLAB_VENV)/.installed: requirements-colab.txt
	test -d $(COLAB_VENV) || $(PYTHON) -m venv $(COLAB_VENV)
	$(COLAB_VENV)/bin/pip install -q -r requirements-colab.txt
	touch $@
## make wheel: the package exactly as pip builds it for Colab (from a clean copy of the sources)
wheel: venv
	rm -rf $(WHEEL_DIR) _build/wheel-src && mkdir -p $(WHEEL_DIR) _build/wheel-src
	cp -r pyproject.toml README.md scaling_lib _build/wheel-src/
	find _build/wheel-src -name __pycache__ -prune -exec rm -rf {} +
	$(PY) -m pip wheel -q --no-deps --no-build-isolation -w $(WHEEL_DIR) _build/wheel-src 2>&1 | grep -v -i "warn\|beta" || true
	@ls $(WHEEL_DIR)/scaling_lib-*.whl
test-colab: $(COLAB_VENV)/.installed wheel fonts
	$(COLAB_VENV)/bin/pip uninstall -q -y scaling_lib 2>/dev/null || true
	$(COLAB_VENV)/bin/pip install -q --no-deps $(WHEEL_DIR)/scaling_lib-*.whl
	$(COLAB_VENV)/bin/python -c "import jax, ipywidgets, numpy, matplotlib; print('colab env:', jax.__version__, ipywidgets.__version__, numpy.__version__, matplotlib.__version__)"
	$(COLAB_VENV)/bin/python tools/colab_run.py --python $(COLAB_VENV)/bin/python \
	  --wheel $$(ls $(WHEEL_DIR)/scaling_lib-*.whl) --jobs $(JOBS) $(COLAB_NB)

## make test-other-cpu: nbval again, emulating another CPU: XLA limited to SSE4.2 and numpy's
## AVX2/AVX-512 kernels switched off, so every float is computed on other SIMD paths than in
## `make test` (whatever this CPU is). Stored outputs must not depend on those last bits.
OTHER_CPU := XLA_FLAGS="--xla_cpu_max_isa=SSE4_2" NPY_DISABLE_CPU_FEATURES="X86_V3 X86_V4 AVX512_ICL AVX512_SPR"
test-other-cpu: venv fonts
	$(OTHER_CPU) $(PY) tools/versions.py --cpu
	$(OTHER_CPU) $(PY) -m pytest -q -n $(JOBS) --dist loadscope $(NBVAL) --ignore=exercises/student chapters exercises appendix

## make execute: re-run notebooks whose source changed (or NB="01_roofline ..."), storing outputs
execute: venv fonts
	$(PY) tools/nbtool.py execute $(NB) $(if $(ALL),--all,)
	$(PY) -m scaling_lib.grading strip
	$(PY) tools/ledger.py write

## make ledger: regenerate docs/ledger.tsv, every glued number as displayed (tests/test_ledger.py checks it)
ledger: venv
	$(PY) tools/ledger.py write

## bubblewrap: the sandbox each graded submission runs in (apt, only when root and missing)
bubblewrap:
	@if command -v bwrap >/dev/null; then :; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null; then \
	  echo "installing bubblewrap"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; \
	else echo "警告：没有 bubblewrap（bwrap），也无法自动安装（需要 root 和 apt）：批改时作业不在沙箱里运行"; fi

## make student: regenerate exercises/student/ from the reference exercise notebooks;
## with SECRET=course.key STUDENTS=roster.csv also one copy per student (their own numbers) in variants/
student: venv
	$(PY) -m scaling_lib.grading strip
	$(if $(and $(SECRET),$(STUDENTS)),$(PY) -m scaling_lib.grading variants --secret-file $(SECRET) \
	  --students $(STUDENTS) --out $(or $(VARIANTS),variants))

## make grade SUBMISSIONS=folder [ROSTER=roster.csv] [SECRET=course.key]: grade a class, each submission in
## its own sandbox -> scores.csv (Excel), scores.json, feedback/<student>.md, scores_lms.csv, gradescope/
grade: venv bubblewrap
	$(PY) -m scaling_lib.grading grade $(SUBMISSIONS) --out $(or $(OUT),scores.csv) --export lms gradescope \
	  $(if $(ROSTER),--roster $(ROSTER)) $(if $(SECRET),--secret-file $(SECRET))

## make serve: the built website on http://127.0.0.1:8000
serve:
	$(PY) -m http.server 8000 --bind 127.0.0.1 -d _build/html

clean:
	rm -rf _build .pytest_cache

## make nbval-one NB=chapters/01_roofline.ipynb: one notebook under nbval
nbval-one: venv
	$(PY) -m pytest -q $(NBVAL) $(NB)
