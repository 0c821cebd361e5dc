"""Engine tunables, in one place.

Everything numerical that is a choice rather than a law of mechanics lives
here, with the reason for its value.
"""

#: Relative tolerance of singular values when counting the rank of the
#: constraint Jacobian (degrees of freedom, redundant constraints).  The
#: Jacobian is assembled from unit-free directions and lever arms of order of
#: the link lengths; 1e-9 separates exact rank loss (redundant constraints,
#: ~1e-15) from merely ill-conditioned but independent rows (>= 1e-6 in every
#: mechanism we ship).
RANK_RTOL = 1e-9

#: Pivot tolerance of the semi-definite LDL^T used by the divide-and-conquer
#: solvers, relative to the largest pivot of the same matrix.  Pivots below it
#: are dependent (redundant closure equations): their multiplier is set to zero.
PIVOT_RTOL = 1e-11

#: A solve whose acceleration-level constraint residual exceeds this (relative
#: to the acceleration scale of the mechanism) is declared singular instead of
#: being returned silently.  Round-off leaves 1e-11 relative away from singular
#: configurations; where a merge of dca's or hdca's assembly dropped a row that is not
#: redundant there, or a subassembly is nearly singular while the mechanism is not
#: (mechanism(49144, 18, 5) on its balanced tree: its compliance's round-off leaves 4e-4),
#: more.
SINGULAR_RESIDUAL_RTOL = 1e-6

#: The same limit for ``dca`` and ``hdca``: they have no filter near singular
#: configurations (dense has, and its filter leaves 1.2e-7 where mechanism(859, 8, 2)
#: passes within 2.3e-4 of one), so away from the cases above their residual is
#: round-off.  A row dropped where it was needed left 3.6e-7, accelerations 2.3e-6 off,
#: under the general limit.
TREE_RESIDUAL_RTOL = 1e-8

#: ``dca`` and ``hdca`` assemble over another tree (tips first) where a subassembly of
#: theirs is nearer than this to a singular configuration of its own (the least, over its
#: merges, of the smallest singular value of their rows on the motions their parts still
#: have, over the rows' scale: topology.subassemblies) and the other tree's are ten times
#: further: a subassembly's compliance carries round-off of order eps / s^2 into the merge
#: above it, 1e-8 of the scale at s = 1e-4, the tree formulations' residual limit.
#: mechanism(49144, 18, 5): 2.8e-6 on the balanced tree, 0.057 tips first.
SUBASSEMBLY_RTOL = 1e-4

#: Unit quaternions in a mechanism file must have |q| within this of 1.
QUATERNION_TOL = 1e-9

#: Universal-joint axes must be orthogonal: |a1 . a2| <= this (unit axes).
AXES_ORTHOGONAL_TOL = 1e-6

#: Gauss-Newton position projection (dense formulation): iterations and
#: tolerance on the position residual.
PROJECTION_MAX_ITER = 10
PROJECTION_TOL = 1e-13

#: Rows per result chunk handed to callers (CLI writer, GUI worker).
CHUNK_ROWS = 64

#: Default numerical settings of ``linkwork run`` (docs/file-format.md, "Command line").
DEFAULT_DT = 0.01
DEFAULT_T_END = 10.0
DEFAULT_RTOL = 1e-8
DEFAULT_ATOL = 1e-8
DEFAULT_PENALTY = 1e9
DEFAULT_NEWTON_ITERS = 3
DEFAULT_NEWTON_TOL = 1e-12

#: Dense formulation: while a singular configuration is being crossed, the
#: least-squares solves on the mass-whitened loop Jacobian use the filtered
#: inverse s^7 / (s^8 + mu^8), mu = this * s_max: the vanishing direction is
#: switched off smoothly within ~mu of the crossing, where the force it carries
#: is O(mu) and odd in time.  Elsewhere mu = DENSE_BASE_FILTER_RTOL * s_max.
#: See docs/derivations.md, "Dense reference: singular configurations".
DENSE_FILTER_RTOL = 1e-4
#: ... and away from crossings.  Redundant closure equations have singular values
#: at round-off only *on* the closure; a state off it by a relative offset d
#: (Runge-Kutta stages, the finite-difference Jacobians of radau and bdf) lifts
#: them to ~d (ladder-1: 1e-11 ... 2e-7 for d = 1e-6), and an exact
#: pseudo-inverse would then turn the O(d) inconsistency into O(1) forces: a
#: right-hand side whose Jacobian is ~1e9 and an implicit integrator taking
#: 1e5 evaluations for 0.1 s.  With mu = 1e-6 s_max such directions carry no
#: force, and live ones are exact to (mu/s)^8 (< 1e-16 for s > 1e-4 s_max).
DENSE_BASE_FILTER_RTOL = 1e-6
#: ... and where the loops only pass near a singular configuration, crossing none, the
#: widened filter changes the force of the nearly vanishing direction by (mu/s)^8 relative
#: (docs/derivations.md, "What the widened filter costs a near pass"): a run reports the
#: smallest measure at which it was widened when that change exceeds this.
DENSE_NEAR_PASS_REPORT = 1e-10
#: Singular values below this fraction of the largest are redundancies, not a
#: nearby singular configuration (exact rank loss shows at round-off level).
REDUNDANT_RTOL = 1e-12

#: Step bound near singular configurations (dense): below this singularity
#: measure the integrator's step is limited so that the measure changes by at
#: most SINGULAR_STEP_FRACTION of itself per step (until it is inside the
#: filtered window, 10 * DENSE_FILTER_RTOL).
SINGULAR_WINDOW = 0.05
SINGULAR_STEP_FRACTION = 0.2
#: ... and it counts as being crossed when it is at most this far in time at
#: its current rate (a mechanism that merely stays ill-conditioned is not).
CROSSING_TIME = 0.05
#: rcr and embedding stop where the loops reach a singular configuration: the mobility
#: measure below this, or predicted to fall below it before the next sample (engine.
#: formulations.rcr_partition.singular_crossing).  Measured on the rk4 paths at dt = 0.01: the
#: parallelogram's fold falls linearly (0.047, 0.032, 0.016, then 9e-4 past the fold), a
#: crossing; the five-bars pass near one -- the measure turning at 0.044-0.073 within two
#: output intervals (fivebar), at 0.009 on one path of fivebar-redundant -- with re-chosen
#: partitions of block conditioning >= 0.1 and no branch to choose: no singular
#: configuration (docs/formulations.md, "Singular configurations").
SINGULAR_STOP = 1e-3

# ------------------------------------------------------ branch and health monitor
# engine/monitor.py judges every output instant of every formulation; docs/formulations.md,
# "Singular configurations", has the measurements behind these figures.

#: Hard limit on ``violation.position`` (2-norm of all joints' position residuals, metres
#: and unit directions).  A formulation that holds its loops
#: stays far below it (parallelogram four-bar, 10 s at the defaults: dense 9.7e-14, hdca
#: 2.4e-14, index3 3.3e-15), while a loop opening at a fold passes it within an output
#: interval or two (dca: 2.5e-6 one interval after the jump, 7.2e-2 after 10 s unchecked).
MONITOR_POSITION_TOL = 1e-6
#: Hard limit on the drift of ``energy.total`` of a conservative mechanism (no dampers, no
#: joint torques) relative to the peak kinetic energy.  Measured on the parallelogram
#: four-bar over 10 s at dt = 0.01: dense/hdca rk4 drift 3e-9 of the peak, index3's
#: trapezoidal rule oscillates with an amplitude of 4.8e-4 (its O(dt^2) energy error, not a
#: jump); dca leaving the branch gains 0.16 (5.4 J of 33.5 J).
MONITOR_ENERGY_DRIFT = 1e-3
#: Early in a run released at rest the peak kinetic energy is tiny: the drift is measured
#: against at least this fraction of m_total |g| L (lifting the mechanism by its own size).
ENERGY_SCALE_FLOOR = 1e-3
#: Jumps that make the pipeline redo an interval with smaller steps (soft: if no
#: refinement removes them but the hard limits hold, the finest attempt is kept):
#: a residual growing by this factor in one output interval ...
MONITOR_JUMP_FACTOR = 100.0
#: ... to above these floors (velocity residuals on the four-bar at the defaults: hdca
#: <= 2.6e-13, dca 1.0e-10 before its first fold; dca leaving the branch jumps 1e-10 -> 1e-7
#: at dt = 0.01 and 2e-9 -> 4e-5 at dt = 1e-3).  The velocity residual is judged for the ODE
#: formulations only: index3 solves the positions every step, and its paper's penalised
#: projections leave velocity residuals up to 5.5e-5 that open no loop,
MONITOR_VELOCITY_FLOOR = 1e-8
MONITOR_POSITION_FLOOR = 1e-8
#: ... or an energy step (conservative mechanisms) above this fraction of the energy scale
#: (index3's largest step on the four-bar at dt = 0.01: 1.2e-5).
MONITOR_ENERGY_JUMP = 1e-4
#: Continuity of the motion (ODE formulations): over an output interval dt the body twists
#: must change by what the evaluated accelerations say, V1 - V0 = dt (A0 + A1) / 2 up to the
#: trapezoid's own error dt^3 A'' / 12 (A'' from the last three rows).  A branch switch at a
#: fold reverses joint rates inside one interval: measured on the parallelogram four-bar, dca
#: with dop853 at 1e-10, t = 1.43 s: J1's rate -2.86 -> +3.34 rad/s, energy step 4.1e-4 J
#: (1.2e-5 of the peak kinetic energy, under MONITOR_ENERGY_JUMP), residuals continuous
#: (velocity 6.6e-10 -> 8.2e-10) -- only the twists' jump shows it.  The mismatch must stay
#: below this factor times ``dt max|A| + dt max|A1 - 2 A0 + A_-1| / 12`` (each of the linear and
#: angular parts).  Measured: the switch above 101; every bundled example at its own
#: settings under dense, dca, hdca, rcr and embedding (2 s) at most 1.92 (joint-zoo, dop853
#: with an output interval of 0.01 s over its fast modes), 0.61 (chain-6-universal), else
#: below 0.17.
MONITOR_CONTINUITY_FACTOR = 30.0
#: Refinement levels of a retried interval: 2, 4, 8, 16 sub-steps (adaptive solvers:
#: max_step = dt / 2**level).
MONITOR_MAX_REFINE = 4
#: Step collapse (adaptive solvers, while the monitor acts): STALL_STEPS accepted steps in
#: a row, each shorter than STALL_RATIO of the output interval, end the run with exit 3.  The
#: models have no impacts and no discontinuous forces, so their right-hand side is smooth
#: except where a loop's closure solution stops being one; steps that small mean the solver
#: is resolving a near-impulse -- at a fold, the joint rates reversing (a branch switch, which
#: the continuity check rejects afterwards).  Measured on the parallelogram four-bar, dca
#: with dop853 at 1e-10: up to 35,932 steps in a row under 1e-8 s (1e-6 of dt = 0.01; the
#: shortest 4.4e-11 s) at t = 1.4279 s, 78 s of wall time for the first pass and the four
#: refinements of the interval before the continuity check stopped it.  Every bundled
#: example under every ODE formulation with dop853 at 1e-10 and rk45 at 1e-8 over 2 s: at
#: most 6 such steps in a row (benchmarks/results/step_collapse.md).  Tolerances tighter
#: than the loop solve's round-off near a fold collapse the steps too (hdca, dop853 at 1e-12,
#: same four-bar: 82,180 in a row at 1.428 s, 270 s to an exit 3 at 4.66 s without the guard,
#: 3.5 s to one at 1.428 s with it).  Smaller
#: steps (the monitor's retries) cannot help a solver whose steps are already this small,
#: so a collapse is final.
STALL_RATIO = 1e-6
STALL_STEPS = 1000
#: Crawl (adaptive solvers, while the monitor acts): CRAWL_STEPS accepted steps in a row, each
#: shorter than CRAWL_RATIO of the output interval, end the run with exit 3 as a collapse does;
#: so does a block of CRAWL_STEPS accepted steps (blocks counted from the run's start) that
#: advanced less than CRAWL_STEPS * CRAWL_RATIO output intervals, where short steps are broken
#: now and then by a longer one, which starts the count in a row again.  A right-hand side
#: that is rough at the tolerances' scale holds the steps where their error estimate is
#: round-off (``hdca`` with a pivot test alone deciding its merges' ranks, which keeps a
#: redundant row now and then, as the tests make it on ``mechanism(4058, 6, 2)``: its rates change by
#: 1e-3 to 1e-1 for a 1e-14 change of the state; rk45 at 1e-10 then takes steps of 1.5e-8 s,
#: 1.5e-6 of dt = 0.01, that never collapse further -- a 1 s run would take hours; with the
#: guard, exit 3 within the first output interval; rk45 at 1e-8 steps about 1e-6 s, either
#: side of the ratio, and the blocks end it).  The limit: at most one output interval of such
#: steps.  Every bundled example under every ODE formulation with dop853 at 1e-10 and rk45 at
#: 1e-8 over 2 s: at most 211 steps in a row under 1e-4 of dt (dca, dop853, the
#: parallelogram four-bar at its folds; benchmarks/results/step_collapse.md).
CRAWL_RATIO = 1e-4
CRAWL_STEPS = 10_000

#: Fixed-step integrators (rk4, index3's trapezoidal rule) under the monitor: an output
#: interval the monitor accepted only at a finer step, or an energy drift (conservative
#: mechanisms) ahead of MONITOR_ENERGY_PACE of its limit -- the limit times
#: max(t / t_end, 1/2), so the run ends within half its budget -- makes every following
#: interval take twice (or 2**level times) as many sub-steps, up to 2**FIXED_STEP_MAX_LEVEL.
#: The output instants stay those of dt.  A run the monitor never questions is unchanged;
#: one whose step is too coarse for its mechanism refines itself instead of stopping
#: (measured: index3's trapezoidal dissipation on chain-8-revolute, 0.24 % of the peak
#: kinetic energy over 10 s at dt = 0.01, against the limit's 0.1 %; hdca's rk4 on the
#: whip of chain-5-spherical-spatial at dt = 0.01).
MONITOR_ENERGY_PACE = 0.5
FIXED_STEP_MAX_LEVEL = 5
#: ... of which the energy's pace may ask for at most this many (8 sub-steps), and none
#: after one that did not halve the drift's rate (index3 on chain-6-universal-spatial: its
#: drift of 6e-4 is its Newton iterations' and penalty's, the same at dt / 32).
FIXED_STEP_PACE_LEVELS = 3

#: Sweeps (engine/sweep/runner.py): a case runs in a runner process, a child of its Dask
#: worker, that hands its rows over at least every SWEEP_CHUNK_INTERVAL seconds of wall
#: time -- so a case stopped at the per-case time limit or killed keeps its rows up to
#: that moment, and the message names the simulated time reached.  A new runner that has
#: not imported the engine within SWEEP_RUNNER_START_TIMEOUT seconds is given up (a
#: loaded 2-core machine takes a few seconds).  A runner raises its oom_score_adj by
#: SWEEP_RUNNER_OOM_SCORE_ADJ (of 1000): the out-of-memory killer then chooses the runner
#: of a case that exhausts the memory, not its Dask worker, nanny or the sweep's client,
#: unless another process uses more than half the machine's memory more than the runner.
SWEEP_CHUNK_INTERVAL = 0.5
#: A sweep rewrites its summary (DIR/summary.parquet) at most every SWEEP_SUMMARY_INTERVAL
#: seconds while cases finish, and once at the end: a rewrite of a few dozen rows costs
#: 20-30 ms of the sweep process's time (pandas, Parquet, two fsyncs), which a sweep of
#: short cases on few cores took from its cases once per finished case.  A sweep killed
#: in between computes the cases of that last second again when it is resumed.
SWEEP_SUMMARY_INTERVAL = 1.0
SWEEP_RUNNER_START_TIMEOUT = 300.0
SWEEP_RUNNER_OOM_SCORE_ADJ = 500
