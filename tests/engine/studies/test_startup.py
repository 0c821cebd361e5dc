"""``linkwork bench``'s start-up measurement (engine/studies/startup.py)."""


def test_bench_startup_measures_a_bundled_example():
    """``linkwork bench``'s start-up figures run the bundled four-bar: the path survived the
    move of the studies into engine/studies/ (it pointed at engine/resources/ and the
    bench stopped with a traceback after its speed tables)."""
    from linkwork.engine.studies.startup import startup_example

    assert startup_example().is_file()
