# bench-smoke.sh - the benchmark driver (bench/run.py) in its short mode, so `make bench` does not rot.
source "$TESTLIB"
[ -x "$HEAPSNAP" ] && [ -r "$HEAPSNAP_PAYLOAD" ] || skip "heapsnap or the payload not built"
[ -x "$HEAPSNAP_BUILD/bench/mh_glibc" ] && [ -x "$HEAPSNAP_BUILD/bench/heap" ] &&
	[ -x "$HEAPSNAP_BUILD/bench/symbench" ] || skip "bench workloads not built"
need_cmd python3

# Figures 1 (one workload, heapsnap only), 2 (heapsnap only), 4 and 6, one run each.
BENCH_SMOKE=1 BENCH_SECONDS=0.5 BENCH_RUNS=1 BENCH_ONLY=1,2,4,6 BENCH_OUT=$PWD/results \
	timeout 120 python3 "$SRCDIR/bench/run.py" >out 2>&1 || fail "run.py failed: $(tail -5 out)"
for f in throughput attach symbolize accuracy; do
	[ -s results/$f.json ] || fail "no results/$f.json: $(tail -5 out)"
done
# Shapes, not timings: a measured ratio, an attach time, C++ addresses resolved
# through DWARF into more frames than locations (inlines), an estimate for every site.
python3 - <<'PY' || fail "unexpected results: $(cat out)"
import json
t = json.load(open("results/throughput.json"))
assert t["rows"] and t["rows"][0]["ratio"]["median"] > 0, t
a = json.load(open("results/attach.json"))
assert a["rows"][0]["wall_ms"]["n"] == 1, a
s = json.load(open("results/symbolize.json"))["rows"][0]
assert s["binary"] == "cxx_churn" and s["debug_info"] == "DWARF" and s["inline_frames"], s
assert s["frames"] > s["locations"] > 0 and s["cold_frames_per_s"]["median"] > 0, s
acc = json.load(open("results/accuracy.json"))
assert len(acc["rows"]) == 8 and all(r["estimated_bytes"]["median"] > 0 for r in acc["rows"]), acc
PY
