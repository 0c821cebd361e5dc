#!/bin/bash
# docs/sweeps.md, 'kill -9 of the client': kill -9 the linkwork sweep client after about half
# of the 48 cases (24 trajectories written), run the same command again, count rows and computations per session, and
# compare every trajectory and the summary with an uninterrupted sweep's in $REF (made first by
#   linkwork sweep resources/sweeps/slider-crank-48.sweep.json --out $REF --workers 2).
# Writes to /tmp/meas/k48.
cd "$(dirname "$0")/.."
mkdir -p /tmp/meas
OUT=/tmp/meas/k48; rm -rf $OUT
.venv/bin/linkwork sweep resources/sweeps/slider-crank-48.sweep.json --out $OUT --workers 2 > /tmp/meas/k1.log 2>&1 &
PID=$!
n=0
while [ "$n" -lt 24 ]; do
  sleep 0.02
  n=$(ls $OUT/runs 2>/dev/null | grep -c '\.csv$')
done
kill -9 $PID; wait $PID 2>/dev/null
echo "killed client $PID with kill -9 when runs/ had $n trajectories"
sleep 3
echo "processes left from that sweep (runners, Dask workers): $(ps -eo pid,args | grep -c '[s]weep.runner import serve\|[m]ultiprocessing.spawn\|[m]ultiprocessing.forkserver')"
ls $OUT/runs | wc -l | sed 's/^/trajectory files after the kill: /'
ls -a $OUT $OUT/runs | grep -c '\.tmp$' | sed 's/^/temporary files left: /'
.venv/bin/python -c "import pyarrow.parquet as pq; t=pq.read_table('$OUT/summary.parquet'); print('summary.parquet after the kill: readable,', t.num_rows, 'rows')"
.venv/bin/linkwork sweep resources/sweeps/slider-crank-48.sweep.json --out $OUT --workers 2 2>&1 | grep -v "done, " 
.venv/bin/python - <<PY
import json, collections, pandas as pd, pathlib
out = pathlib.Path("$OUT")
df = pd.read_parquet(out / "summary.parquet")
log = [json.loads(l) for l in (out / "sweep.log").read_text().splitlines()]
per_case = collections.Counter(r["case"] for r in log)
per_session = collections.Counter(r["session"] for r in log)
print("summary rows:", len(df), "distinct cases:", df.case.nunique(), "statuses:", df.status.value_counts().to_dict())
print("rows per session (first run, rerun):", df.session.value_counts().to_dict())
print("computations logged per session:", dict(per_session), "; cases computed more than once:", [c for c, k in per_case.items() if k > 1])
ref = pathlib.Path("${REF:-/tmp/meas/m48-round2}/runs")
same = sum((out / "runs" / p.name).read_bytes() == p.read_bytes() for p in ref.glob("*.csv"))
print("trajectory files:", len(list((out / "runs").glob("*.csv"))), "; byte-identical to the uninterrupted sweep's:", same)
cols = [c for c in df.columns if c not in ("session", "finished_at", "wall_time", "worker")]
ref_df = pd.read_parquet("${REF:-/tmp/meas/m48-round2}/summary.parquet")
print("summary equal to the uninterrupted sweep's (all but session, time, worker):", df[cols].equals(ref_df[cols]))
PY
