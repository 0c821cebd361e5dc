# Linkwork: `make run` opens the application on a bundled example,
# `make test` runs the whole test suite.  Both install what is missing first
# (scripts/setup.sh: system libraries for Qt/OpenGL, .venv, the package).

FILE ?= resources/examples/parallelogram-fourbar.mech.json
XVFB := $(shell [ -z "$$DISPLAY" ] && command -v xvfb-run >/dev/null 2>&1 && echo "xvfb-run -a -s '-screen 0 1280x800x24'")
PYTEST_ARGS ?=

.PHONY: setup run test test-nojit bench dist bundle clean

setup:
	@scripts/setup.sh

# without a display: say so in one line, then run the example headless (CSV, plots, pictures)
run:
	@LINKWORK_COMPILE_FOR=$(FILE) scripts/setup.sh
	@if .venv/bin/python -m linkwork.app.display; then .venv/bin/linkwork $(FILE); \
	else .venv/bin/linkwork report $(FILE) --out out/$(basename $(basename $(notdir $(FILE)))); fi

test: setup
	QT_QPA_PLATFORM= $(XVFB) .venv/bin/python -m pytest -q -n 2 --dist loadgroup $(PYTEST_ARGS)
	$(MAKE) --no-print-directory test-nojit

# conventions 15: the engine's kernels once more as plain Python, for readable
# tracebacks and coverage of the kernels
test-nojit: setup
	NUMBA_DISABLE_JIT=1 .venv/bin/python -m pytest -q -m nojit tests/engine $(PYTEST_ARGS)

# the wheel and the sdist into dist/ (tests/packaging/test_wheel.py inspects them)
dist: setup
	.venv/bin/python -m build --outdir dist .

# the desktop bundle and its tarball (packaging/build.sh: its own build environment)
bundle:
	packaging/build.sh

bench: setup
	.venv/bin/pip install -q -e ".[bench]"
	.venv/bin/linkwork bench

clean:
	find . -name __pycache__ -prune -exec rm -rf {} +
