#!/bin/bash
# docs/sweeps.md, 'An explicitly started scheduler': dask scheduler + two dask workers on
# 127.0.0.1 only, the 48-case sweep against them, then again with worker w2 killed (kill -9 of
# its process group) after about 12 cases; compares both summaries with the LocalCluster's in
# $REF (see sweep_kill9.sh) and stops every process it started.  Writes to /tmp/meas/ext48*.
cd "$(dirname "$0")/.."
mkdir -p /tmp/meas
PORT=38786
export DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES=1
setsid .venv/bin/dask scheduler --host 127.0.0.1 --port $PORT --dashboard-address 127.0.0.1:38787 > /tmp/meas/sched.log 2>&1 &
SCHED=$!
sleep 4
for i in 1 2; do
  NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE setsid .venv/bin/dask worker tcp://127.0.0.1:$PORT \
     --nthreads 1 --host 127.0.0.1 --dashboard-address 127.0.0.1:0 --name w$i > /tmp/meas/worker$i.log 2>&1 &
  eval W$i=$!
done
sleep 6
echo "scheduler pid $SCHED, workers (nanny) pids $W1 $W2"
ss -ltnp | grep -E "pid=($(pgrep -g $SCHED | paste -sd"|")|$(pgrep -g $W1 | paste -sd"|")|$(pgrep -g $W2 | paste -sd"|"))[,)]" | awk "{print \"listening:\", \$4}"
# 1. the full sweep against the external scheduler
rm -rf /tmp/meas/ext48
.venv/bin/linkwork sweep resources/sweeps/slider-crank-48.sweep.json --out /tmp/meas/ext48 --scheduler tcp://127.0.0.1:$PORT 2>&1 | grep -v "done, "
# 2. again into a new folder, killing worker w2 (its nanny and worker process) after ~12 cases
rm -rf /tmp/meas/ext48k
.venv/bin/linkwork sweep resources/sweeps/slider-crank-48.sweep.json --out /tmp/meas/ext48k --scheduler tcp://127.0.0.1:$PORT > /tmp/meas/extk.log 2>&1 &
C=$!
n=0
while [ "$n" -lt 12 ]; do sleep 0.3; n=$(.venv/bin/python -c "import pyarrow.parquet as pq; print(pq.read_metadata('/tmp/meas/ext48k/summary.parquet').num_rows)" 2>/dev/null || echo 0); done
kill -9 -- -$W2
echo "killed worker w2 (process group $W2) with kill -9 when summary.parquet had $n rows"
wait $C; echo "sweep exit status $?"
grep -v "done, " /tmp/meas/extk.log
.venv/bin/python - <<PY
import pandas as pd, json, collections
ref = pd.read_parquet("${REF:-/tmp/meas/m48-round2}/summary.parquet")
cols = [c for c in ref.columns if c not in ("session", "finished_at", "wall_time", "worker")]
for d in ("/tmp/meas/ext48", "/tmp/meas/ext48k"):
    df = pd.read_parquet(d + "/summary.parquet")
    log = [json.loads(l) for l in open(d + "/sweep.log")]
    print(d, "rows", len(df), df.status.value_counts().to_dict(), "workers", df.worker.value_counts().to_dict())
    print("   equal to the LocalCluster summary (all but session, time, worker):", df[cols].equals(ref[cols]),
          "; cases logged more than once:", [c for c, k in collections.Counter(r["case"] for r in log).items() if k > 1])
PY
grep -i "killed\|lost\|remove worker\|retry\|reschedul" /tmp/meas/sched.log | head -5
kill -- -$W1; kill -- -$SCHED; sleep 3
echo "dask processes left: $(ps -eo args | grep -c '[d]ask \(scheduler\|worker\)')"
