"""The local cluster's worker processes (engine/sweep/cluster.py)."""


def test_worker_environment_threads():
    """N workers x T threads: numba, OpenMP and OpenBLAS get T threads (OpenBLAS 1); the
    passive OpenMP wait policy only where a worker has one thread -- with two it made a
    dca evaluation slower than one thread (docs/performance.md, "OpenMP's wait policy")."""
    from linkwork.engine.sweep.cluster import worker_environment

    one = worker_environment(1)
    assert one == {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                   "OMP_WAIT_POLICY": "PASSIVE"}
    two = worker_environment(2)
    assert two["NUMBA_NUM_THREADS"] == two["OMP_NUM_THREADS"] == "2" and "OMP_WAIT_POLICY" not in two
    assert worker_environment(0)["NUMBA_NUM_THREADS"] == "1"
