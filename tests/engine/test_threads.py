"""The thread plan (engine/threads.py): one decision per run, from the model, the
formulation and the request; the simulation sets numba's pool to it and hands it to the
formulation, which builds its layout from it; ``linkwork info`` shows it."""

import json
import subprocess
import sys

import numba
import pytest

from linkwork.engine import generators as gen
from linkwork.engine import threads
from linkwork.engine.formulations import REGISTRY
from linkwork.engine.model import build_model
from linkwork.engine.simulation import Settings, Simulation

from .conftest import example_path

TWO = numba.config.NUMBA_NUM_THREADS >= 2


def test_below_the_parallel_size_a_run_has_one_thread_whatever_was_asked():
    small = build_model(gen.chain(threads.PARALLEL_MIN_BODIES - 1, "revolute"))
    for name in REGISTRY:
        p = threads.plan(small, REGISTRY[name], 4)
        assert (p.threads, p.layout, p.requested) == (1, 1, 4)
        assert threads.plan(small, REGISTRY[name], None).threads == 1


@pytest.mark.skipif(not TWO, reason="needs two numba threads")
def test_a_count_the_user_sets_is_taken_and_automatic_follows_the_formulations_rules():
    chain = build_model(gen.chain(128, "revolute", planar=True))
    tree = build_model(gen.random_mechanism(0, 128, loops=0))
    ladder = build_model(gen.ladder(64))
    every = threads.available()
    # asked for: taken as it is, for every formulation
    for name in ("dca", "hdca", "index3"):
        assert threads.plan(chain, REGISTRY[name], 2).threads == 2
    # automatic: dca and hdca keep a short open chain on one thread, dca a short open tree
    assert threads.plan(chain, REGISTRY["dca"], None).threads == 1
    assert threads.plan(chain, REGISTRY["hdca"], None).threads == 1
    assert threads.plan(tree, REGISTRY["dca"], None).threads == 1
    assert threads.plan(tree, REGISTRY["hdca"], None).threads == every
    assert threads.plan(ladder, REGISTRY["dca"], None).threads == every  # loops: every core
    assert threads.plan(chain, REGISTRY["index3"], None).threads == every
    assert "chain" in threads.plan(chain, REGISTRY["dca"], None).why
    # the application's limit: a core kept for the window
    assert threads.plan(ladder, REGISTRY["dca"], None, limit=1).threads == 1


@pytest.mark.skipif(not TWO, reason="needs two numba threads")
def test_dca_runs_a_chain_on_two_threads_with_the_one_thread_layout():
    chain = build_model(gen.chain(128, "revolute", planar=True))
    p = threads.plan(chain, REGISTRY["dca"], 2)
    assert (p.threads, p.layout) == (2, 1)
    assert "layout for 1" in p.describe()
    assert threads.plan(chain, REGISTRY["hdca"], 2).layout == 2


@pytest.mark.skipif(not TWO, reason="needs two numba threads")
def test_the_simulation_decides_once_and_the_formulation_keeps_that_plan():
    ladder = build_model(gen.ladder(64))
    old = numba.get_num_threads()
    try:
        sim = Simulation(ladder, Settings(formulation="dca", threads=2, t_end=0.01))
        assert sim.plan == sim.formulation.plan
        assert numba.get_num_threads() == sim.plan.threads == 2
        assert sim.formulation.lay.ix.body_parallel_from == threads.PARALLEL_MIN_BODIES
        one = Simulation(ladder, Settings(formulation="dca", threads=1, t_end=0.01))
        assert numba.get_num_threads() == 1
        assert one.formulation.lay.ix.body_parallel_from == threads.NEVER_PARALLEL
    finally:
        numba.set_num_threads(old)


def test_a_formulation_built_on_its_own_decides_the_same_plan():
    model = build_model(gen.chain(8, "revolute"))
    f = REGISTRY["dca"](model, Settings(formulation="dca"))
    assert f.plan == threads.plan(model, REGISTRY["dca"], None)


def test_info_shows_each_formulations_plan():
    path = str(example_path("chain-8-revolute"))
    text = subprocess.run([sys.executable, "-m", "linkwork.engine.cli", "info", path],
                          capture_output=True, text=True, check=True).stdout
    why = f"fewer than {threads.PARALLEL_MIN_BODIES} bodies" if TWO else ""  # one core: nothing to explain
    assert "threads" in text and "dca" in text and why in text
    data = json.loads(subprocess.run([sys.executable, "-m", "linkwork.engine.cli", "info", path, "--json"],
                                     capture_output=True, text=True, check=True).stdout)
    assert data["threads"]["dca"] == {"threads": 1, "layout": 1, "why": why}


def test_run_help_gives_the_thread_rules_from_the_constants():
    text = subprocess.run([sys.executable, "-m", "linkwork.engine.cli", "run", "--help"],
                          capture_output=True, text=True, check=True).stdout
    assert str(threads.HDCA_CHAIN_SERIAL_BELOW) in text and str(threads.DCA_CHAIN_SERIAL_BELOW) in text
