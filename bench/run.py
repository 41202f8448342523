#!/usr/bin/env python3
"""run.py - heapsnap's benchmark driver: interleaved A/B runs of bench/workloads, figures 1-6 as JSON and a table.

Environment: HEAPSNAP_BUILD (build dir, required), BENCH_SECONDS (measured
phase, default 2), BENCH_RUNS (interleaved runs per comparison, default 3),
BENCH_ONLY (comma list of figures: 1,2,3,4,5,6; default all), BENCH_SMOKE=1
(one workload, no comparators but heapsnap), BENCH_OUT (results dir,
default bench/results).  Every figure is a median with min and max over the
runs; throughput is a ratio of adjacent, alternately ordered runs.
"""
import json
import math
import os
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

BUILD = os.environ.get("HEAPSNAP_BUILD")
if not BUILD:
    sys.exit("run.py: set HEAPSNAP_BUILD to the build directory")
HS = os.path.join(BUILD, "heapsnap")
PAYLOAD = os.path.join(BUILD, "libheapsnap-payload.so")
BIN = os.path.join(BUILD, "bench")
SECS = float(os.environ.get("BENCH_SECONDS", "2"))
RUNS = max(1, int(os.environ.get("BENCH_RUNS", "3")))
SMOKE = os.environ.get("BENCH_SMOKE") == "1"
ONLY = set(filter(None, os.environ.get("BENCH_ONLY", "").split(",")))
OUT = os.environ.get("BENCH_OUT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
ENV = dict(os.environ, HEAPSNAP_PAYLOAD=PAYLOAD)
TMP = tempfile.mkdtemp(prefix="hsbench.")
WARMUP = 0.3
PROBE_SLEEP_US = 1000.0  # the probe loops' own sleep (probe.h)


def now():
    return time.monotonic()


def summary(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


class Target:
    """A workload process speaking probe.h's JSON lines."""

    def __init__(self, argv, env=None, stdin=False):
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.PIPE if stdin else None,
                                  env=env or ENV, text=True)
        self.pid = self.p.pid
        ready = self.line()
        if "ready" not in ready:
            raise RuntimeError("workload did not start: %r" % ready)

    def line(self):
        s = self.p.stdout.readline()
        if not s:
            raise RuntimeError("workload %d ended early" % self.pid)
        return json.loads(s)

    def phase(self):
        """Ends the current phase; returns its report."""
        if self.p.stdin:
            return self.cmd("phase")
        os.kill(self.pid, signal.SIGUSR1)
        return self.line()

    def cmd(self, c):
        self.p.stdin.write(c + "\n")
        self.p.stdin.flush()
        return self.line()

    def stop(self):
        try:
            if self.p.stdin:
                self.p.stdin.write("quit\n")
                self.p.stdin.close()
            else:
                os.kill(self.pid, signal.SIGUSR2)
                self.p.stdout.readline()
            self.p.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.p.kill()
            self.p.wait()


def hs(*args, check=True):
    r = subprocess.run([HS] + [str(a) for a in args], env=ENV, capture_output=True, text=True, timeout=120)
    if check and r.returncode:
        raise RuntimeError("heapsnap %s: %s" % (" ".join(map(str, args)), r.stderr.strip()))
    return r


def hs_status(pid):
    r = hs("status", pid, "--json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def maps_has(pid, name):
    try:
        with open("/proc/%d/maps" % pid) as f:
            return name in f.read()
    except OSError:
        return False


# ---- comparators: how each one attaches to a running workload -------------------

def have(tool):
    return shutil.which(tool) is not None


class Attach:
    """One comparator; attach() returns the wall seconds until it is active."""
    env = None
    name = ""

    def attach(self, t):
        return 0.0

    def detach(self, t):
        pass


class NotAttached(Attach):
    name = "not attached"


class Heapsnap(Attach):
    def __init__(self, rate):
        self.rate = rate
        self.name = "heapsnap rate %d" % rate

    def attach(self, t):
        t0 = now()
        r = hs("start", t.pid, "--rate", self.rate, "--json")
        w = now() - t0
        # The injector's own account: how long the borrowed thread was kept
        # from its own code (from the tracer's side, immune to the box's
        # scheduling noise that the in-target gaps also see).
        try:
            self.inj = json.loads(r.stdout)
        except ValueError:
            self.inj = {}
        return w


class Heaptrack(Attach):
    name = "heaptrack -p"

    def attach(self, t):
        self.dir = tempfile.mkdtemp(dir=TMP)
        t0 = now()
        # Its own session: the script, gdb, the interpreter and zstd die together.
        self.p = subprocess.Popen(["heaptrack", "-p", str(t.pid)], cwd=self.dir, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        # Active once gdb has called heaptrack_inject() and detached.
        buf = b""
        while now() - t0 < 60:
            r, _, _ = select.select([self.p.stdout], [], [], 0.05)
            if r:
                chunk = os.read(self.p.stdout.fileno(), 4096)
                if not chunk:
                    break
                buf += chunk
                if b"injection finished" in buf:
                    return now() - t0
        raise RuntimeError("heaptrack did not attach: %s" % buf.decode(errors="replace")[-200:])

    def detach(self, t):
        # Its output is not needed: stop the interpreter now rather than
        # wait minutes for it to digest the run.
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except OSError:
            pass
        self.p.wait()
        self.p.stdout.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class Memleak(Attach):
    name = "memleak-bpfcc -p"

    def attach(self, t):
        t0 = now()
        self.p = subprocess.Popen(["memleak-bpfcc", "-p", str(t.pid), "10"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
        time.sleep(5)  # compiling and attaching its probes; no better signal
        if self.p.poll() is not None:
            raise RuntimeError("memleak-bpfcc: " + self.p.stderr.read().strip()[-200:])
        return now() - t0

    def detach(self, t):
        self.p.terminate()
        self.p.wait()


class JeProf(Attach):
    name = "jemalloc prof lg_prof_sample:19"
    env = dict(ENV, MALLOC_CONF="prof:true,lg_prof_sample:19")


def tool_works(tool):
    """Returns None if usable, else why not."""
    if tool == "heaptrack":
        if not have("heaptrack") or not have("gdb"):
            return "unavailable here: heaptrack or gdb not installed"
        return None
    if tool == "memleak":
        rel = os.uname().release
        if not os.path.exists("/lib/modules/%s/build" % rel) and not os.path.exists("/sys/kernel/kheaders.tar.xz"):
            return ("unavailable here: bcc compiles its probes against the running kernel's headers, and kernel "
                    "%s ships none (no /lib/modules/%s/build, no kheaders)" % (rel, rel))
        if not have("memleak-bpfcc"):
            return "unavailable here: memleak-bpfcc not installed (Debian package bpfcc-tools)"
        return None
    return None


# ---- figure 1: throughput ratios ---------------------------------------------

def one_throughput(argv, comp):
    t = Target(argv, env=comp.env)
    try:
        time.sleep(WARMUP)
        attach_s = comp.attach(t)
        t.phase()  # starts the measured phase once the comparator is active
        time.sleep(SECS)
        ph = t.phase()
        st = hs_status(t.pid) if isinstance(comp, Heapsnap) else None
    finally:
        comp.detach(t)
        t.stop()
    r = {"ops_per_s": ph["ops_per_s"], "ops_per_cpu_s": ph["ops_per_cpu_s"], "attach_s": attach_s}
    if st:
        r["samples_per_s"] = st["alloc_samples"] / max(st["sampled_seconds"], 1e-9)
        r["dropped"] = st["dropped_samples"]
        # The payload's own account of its slow paths (recording a sample,
        # removing it at free), immune to other load on the machine.
        r["cost_ns_per_sample"] = st.get("cost_ns_per_sample")
        r["cost_cpu_share"] = st.get("cost_seconds", 0) / max(st["sampled_seconds"], 1e-9)
    return r


def figure1():
    hs512 = Heapsnap(524288)
    hs1 = Heapsnap(1)
    ht = Heaptrack()
    ml = Memleak()
    unavailable = {}
    for tool, comp in (("heaptrack", ht), ("memleak", ml)):
        why = tool_works(tool)
        if why:
            unavailable[comp.name] = why
    if SMOKE:
        cases = [("mh_glibc 1 thread", ["mh_glibc", "1"], [hs512])]
    else:
        others = [c for c in (ht, ml) if c.name not in unavailable]
        cases = [
            ("mh_glibc 1 thread", ["mh_glibc", "1"], [hs512, hs1] + others),
            ("mh_glibc 2 threads", ["mh_glibc", "2"], [hs512, hs1] + others),
            ("mh_jemalloc 1 thread", ["mh_jemalloc", "1"], [hs512, JeProf()]),
            ("mh_jemalloc 2 threads", ["mh_jemalloc", "2"], [hs512, JeProf()]),
            ("mh_tcmalloc 1 thread", ["mh_tcmalloc", "1"], [hs512]),
            ("mh_mimalloc 1 thread", ["mh_mimalloc", "1"], [hs512]),
            ("cxx_churn 1 thread", ["cxx_churn", "1"], [hs512, hs1] + [c for c in others if c is ht]),
        ]
    rows = []
    for label, argv, comps in cases:
        argv = [os.path.join(BIN, argv[0])] + argv[1:]
        base = NotAttached()
        ratios = {c.name: [] for c in comps}
        cpu_ratios = {c.name: [] for c in comps}
        extra = {c.name: {"samples_per_s": [], "attach_s": [], "errors": [], "cost_ns_per_sample": [],
                          "cost_cpu_share": []} for c in comps}
        bases = []
        for run in range(RUNS):
            for c in comps:
                # A/B adjacent pairs, order alternating between runs.
                order = [base, c] if run % 2 == 0 else [c, base]
                res = {}
                for x in order:
                    try:
                        res[x.name] = one_throughput(argv, x)
                    except RuntimeError as e:
                        extra[c.name]["errors"].append(str(e))
                if base.name in res and c.name in res:
                    bases.append(res[base.name]["ops_per_s"])
                    ratios[c.name].append(res[c.name]["ops_per_s"] / res[base.name]["ops_per_s"])
                    cpu_ratios[c.name].append(res[c.name]["ops_per_cpu_s"] / res[base.name]["ops_per_cpu_s"])
                    extra[c.name]["samples_per_s"].append(res[c.name].get("samples_per_s"))
                    extra[c.name]["cost_ns_per_sample"].append(res[c.name].get("cost_ns_per_sample"))
                    extra[c.name]["cost_cpu_share"].append(res[c.name].get("cost_cpu_share"))
                    extra[c.name]["attach_s"].append(res[c.name]["attach_s"])
        for c in comps:
            rows.append({"workload": label, "tool": c.name, "ratio": summary(ratios[c.name]),
                         "cpu_ratio": summary(cpu_ratios[c.name]),
                         "base_ops_per_s": summary(bases),
                         "samples_per_s": summary(extra[c.name]["samples_per_s"]),
                         "cost_ns_per_sample": summary(extra[c.name]["cost_ns_per_sample"]),
                         "cost_cpu_share": summary(extra[c.name]["cost_cpu_share"]),
                         "attach_s": summary(extra[c.name]["attach_s"]),
                         "errors": extra[c.name]["errors"][:3]})
            print_row1(rows[-1])
    return {"figure": 1, "title": "throughput while sampling / not attached (interleaved A/B)",
            "note": "ratio: ops per wall second; cpu_ratio: ops per CPU second of the worker threads, robust "
            "against other load on the machine but blind to time a worker spends blocked (heaptrack's pipe) "
            "and to work done in other processes (heaptrack's interpreter); cost_ns_per_sample and cost_cpu_share: "
            "heapsnap's payload timing its own slow paths (status), the part of the overhead that scales with "
            "samples/s, immune to other load",
            "seconds": SECS, "runs": RUNS, "rows": rows, "unavailable": unavailable}


def fmt_s(s, f="%.3f", scale=1.0):
    if not s:
        return "n/a"
    return (f + " [" + f + "-" + f + "]") % (s["median"] * scale, s["min"] * scale, s["max"] * scale)


def print_row1(r):
    print("  %-22s %-32s ops/s ratio %s  ops/CPU-s ratio %s  base %s Mops/s  samples/s %s"
          "  own cost %s ns/sample = %s of a CPU" % (
              r["workload"], r["tool"], fmt_s(r["ratio"]), fmt_s(r["cpu_ratio"]),
              fmt_s(r["base_ops_per_s"], "%.2f", 1e-6), fmt_s(r["samples_per_s"], "%.0f"),
              fmt_s(r.get("cost_ns_per_sample"), "%.0f"), fmt_s(r.get("cost_cpu_share"), "%.3f")), flush=True)


# ---- figure 2: attach stall ------------------------------------------------------

def stalls(ph):
    """(main = probe thread, asleep: the injector's pick; worst worker) gaps in us."""
    main = max(0.0, ph["main_max_gap_us"] - PROBE_SLEEP_US)
    workers = max(th["max_gap_us"] for th in ph["threads"])
    return main, workers


def figure2():
    window = 0.6
    comps = [Heapsnap(524288)]
    unavailable = {}
    why = tool_works("heaptrack")
    if why:
        unavailable["heaptrack -p"] = why
    elif not SMOKE:
        comps.append(Heaptrack())
    argv = [os.path.join(BIN, "mh_glibc"), "2"]
    rows = []
    for c in comps:
        wall, m_att, w_att, m_base, w_base, errors, held = [], [], [], [], [], [], []
        for run in range(RUNS if not SMOKE else 1):
            t = Target(argv)
            try:
                time.sleep(WARMUP)
                t.phase()
                time.sleep(window)
                mb, wb = stalls(t.phase())
                w = c.attach(t)
                if w < window:
                    time.sleep(window - w)
                ma, wa = stalls(t.phase())
                if getattr(c, "inj", None) and "hijacked_stopped_us" in c.inj:
                    held.append(c.inj["hijacked_stopped_us"])
                wall.append(w)
                m_att.append(ma)
                w_att.append(wa)
                m_base.append(mb)
                w_base.append(wb)
            except RuntimeError as e:
                errors.append(str(e))
            finally:
                c.detach(t)
                t.stop()
        rows.append({"tool": c.name, "wall_ms": summary([x * 1e3 for x in wall]),
                     "hijacked_thread_stall_us": summary(m_att), "other_threads_max_gap_us": summary(w_att),
                     "baseline_sleeper_stall_us": summary(m_base), "baseline_workers_max_gap_us": summary(w_base),
                     "hijacked_thread_held_us": summary(held), "errors": errors[:3]})
        r = rows[-1]
        print("  %-14s wall %s ms  hijacked(sleeping main) stall %s us (baseline %s), held by the injector %s us  "
              "workers max gap %s us (baseline %s)" % (
                  r["tool"], fmt_s(r["wall_ms"], "%.0f"), fmt_s(r["hijacked_thread_stall_us"], "%.0f"),
                  fmt_s(r["baseline_sleeper_stall_us"], "%.0f"), fmt_s(r["hijacked_thread_held_us"], "%.0f"),
                  fmt_s(r["other_threads_max_gap_us"], "%.0f"), fmt_s(r["baseline_workers_max_gap_us"], "%.0f")),
              flush=True)
    return {"figure": 2, "title": "attach: wall time to sampling, stalls seen inside the target (mh_glibc 2 threads)",
            "window_s": window, "note": "stalls are max gaps in a %.1f s window holding the attach, "
            "baseline: the same window just before; the probe (main) thread sleeps 1 ms per loop, so it is the "
            "thread the injector hijacks (sleeping threads rank first); workers run malloc loops" % window,
            "rows": rows, "unavailable": unavailable}


# ---- figure 3: snapshot ----------------------------------------------------------

def figure3():
    sizes = [10000, 100000] if SMOKE else [10000, 100000, 1000000]
    rows = []
    t = Target([os.path.join(BIN, "heap")], stdin=True)
    try:
        hs("start", t.pid, "--rate", 1)
        have_n = 0
        for n in sizes:
            t.cmd("alloc %d 64" % (n - have_n))
            have_n = n
            st = hs_status(t.pid)
            times, sleeper, churner, nbytes, b_sleeper, b_churner, holds = [], [], [], [], [], [], []
            for run in range(RUNS):
                out = os.path.join(TMP, "snap.pb.gz")
                # Baseline: a window as long as a dump, without one.
                t.phase()
                time.sleep(statistics.median(times) if times else 0.1)
                ph = t.phase()
                b_sleeper.append(max(0.0, ph["threads"][0]["max_gap_us"] - PROBE_SLEEP_US))
                b_churner.append(ph["threads"][1]["max_gap_us"])
                t.phase()
                t0 = now()
                hs("dump", t.pid, "-o", out)
                times.append(now() - t0)
                ph = t.phase()
                sleeper.append(max(0.0, ph["threads"][0]["max_gap_us"] - PROBE_SLEEP_US))
                churner.append(ph["threads"][1]["max_gap_us"])
                nbytes.append(os.path.getsize(out))
                # The payload's own measure: the longest it held the table
                # lock at once while copying (what an allocating thread can
                # have waited), immune to the machine's scheduling noise.
                holds.append((hs_status(t.pid) or {}).get("last_snapshot_lock_hold_ns", 0) / 1e3)
            rows.append({"live_samples": st["live_samples"], "dump_wall_ms": summary([x * 1e3 for x in times]),
                         "file_bytes": summary(nbytes), "sleeping_thread_stall_us": summary(sleeper),
                         "allocating_thread_max_gap_us": summary(churner),
                         "lock_hold_max_us": summary(holds),
                         "baseline_sleeping_thread_stall_us": summary(b_sleeper),
                         "baseline_allocating_thread_max_gap_us": summary(b_churner)})
            r = rows[-1]
            print("  %8d live samples: dump %s ms, %s bytes, stall: sleeping thread %s us (baseline %s), "
                  "allocating thread %s us (baseline %s), table lock held %s us at most" % (
                      r["live_samples"], fmt_s(r["dump_wall_ms"], "%.0f"), fmt_s(r["file_bytes"], "%.0f"),
                      fmt_s(r["sleeping_thread_stall_us"], "%.0f"), fmt_s(r["baseline_sleeping_thread_stall_us"], "%.0f"),
                      fmt_s(r["allocating_thread_max_gap_us"], "%.0f"),
                      fmt_s(r["baseline_allocating_thread_max_gap_us"], "%.0f"), fmt_s(r["lock_hold_max_us"], "%.0f")),
                  flush=True)
    finally:
        t.stop()
    return {"figure": 3, "title": "snapshot (heapsnap dump to pprof, symbolized) at rate 1",
            "note": "dump wall time includes connecting, the snapshot, symbolization and writing the file; "
            "baseline: a window as long as a dump just before it, without one; the allocating thread "
            "ticks every 64 malloc+free pairs, each sampled at rate 1",
            "rows": rows}


# ---- figure 4: symbolization -----------------------------------------------------

# (label, symbench -m NAME or None for the executable, addresses).  cxx_churn
# is the C++ row: built -O2 -g, its few functions are mostly inlined
# std::map/std::string/std::vector code, so an address resolves to a chain of
# inlined frames as in a real C++ heap profile.  Its text is only 8 KiB, so
# every byte of it is an address.  The libraries are the large-binary rows:
# libstdc++ (ELF symbols only, unless its debug package is installed) and libc
# (DWARF from libc6-dbg's separate debug file when installed: C, but 1.4 MB of
# -O2 code with inlines).
SYM_ROWS = [("cxx_churn", None, 100000), ("libstdc++", "libstdc++.so", 20000), ("libc", "libc.so", 20000)]


def symbench(pid, name, count):
    argv = [os.path.join(BIN, "symbench"), "-n", str(count)] + (["-m", name] if name else []) + [str(pid)]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if r.returncode:
        raise RuntimeError("symbench %s: %s" % (name or "", r.stderr.strip()))
    return json.loads(r.stdout)


def figure4():
    res = {label: [] for label, _, _ in SYM_ROWS}
    for run in range(RUNS):
        # A fresh process and a fresh session (sym_open_pid) each run, so
        # cold includes libdwfl opening the ELF and DWARF files and indexing
        # them.  The OS page cache holding those files is warm after the
        # first run and is not dropped.
        t = Target([os.path.join(BIN, "cxx_churn"), "1"])
        try:
            # Stopped while measured: the symbolizer only reads /proc and the
            # files, and the churning worker would compete for the CPUs.
            os.kill(t.pid, signal.SIGSTOP)
            for label, name, count in SYM_ROWS:
                res[label].append(symbench(t.pid, name, count))
        finally:
            os.kill(t.pid, signal.SIGCONT)
            t.stop()
    rows = []
    for label, _, _ in SYM_ROWS:
        rs = res[label]
        last = rs[-1]
        rows.append({"binary": label, "mapping": last["mapping"], "mapping_bytes": last["mapping_bytes"],
                     "debug_info": "DWARF" if last["dwarf_lines"] else "ELF symbols",
                     "inline_frames": last["inline_frames"], "locations": last["locations"],
                     "named_locations": last["named_locations"], "frames": last["frames"],
                     "cold_frames_per_s": summary([x["cold_frames_per_s"] for x in rs]),
                     "warm_frames_per_s": summary([x["warm_frames_per_s"] for x in rs]),
                     "cold_ms": summary([x["cold_s"] * 1e3 for x in rs]),
                     "warm_ms": summary([x["warm_s"] * 1e3 for x in rs])})
        r = rows[-1]
        print("  %-10s %-11s %6d locations, %6d frames: cold %s k frames/s (%s ms), warm %s k frames/s (%s ms)" % (
            r["binary"], r["debug_info"], r["locations"], r["frames"], fmt_s(r["cold_frames_per_s"], "%.0f", 1e-3),
            fmt_s(r["cold_ms"], "%.1f"), fmt_s(r["warm_frames_per_s"], "%.0f", 1e-3), fmt_s(r["warm_ms"], "%.1f")),
            flush=True)
    return {"figure": 4, "title": "symbolization of a live process (bench/symbench): frames per second",
            "runs": RUNS, "note": "cold: sym_open_pid + sym_profile on a new session in a new process; warm: "
            "the same addresses again in that session (its per-address cache); frames count inlined frames, "
            "one line each; addresses evenly spread over the executable mapping (every byte of cxx_churn's); "
            "the OS page cache is warm after the first run",
            "rows": rows}


# ---- figure 5: memory ------------------------------------------------------------

def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        m = re.search(r"VmRSS:\s+(\d+)", f.read())
    return int(m.group(1))


def figure5():
    gib = 64 << 20 if SMOKE else 1 << 30
    t = Target([os.path.join(BIN, "heap")], stdin=True)
    try:
        r0 = rss_kb(t.pid)
        hs("start", t.pid, "--rate", 524288)
        time.sleep(0.2)
        s0 = hs_status(t.pid)
        r1 = rss_kb(t.pid)
        t.cmd("alloc %d 16384" % (gib // 16384))
        s1 = hs_status(t.pid)
    finally:
        t.stop()
    dl = s1["live_samples"] - s0["live_samples"]
    res = {"figure": 5, "title": "payload memory at rate 512 KiB on a %d MiB heap" % (gib >> 20),
           "heap_bytes": gib, "live_samples": s1["live_samples"],
           "payload_memory_bytes": s1["payload_memory"], "payload_memory_at_load": s0["payload_memory"],
           "rss_added_by_load_kb": r1 - r0,
           "bytes_per_live_sample": (s1["payload_memory"] - s0["payload_memory"]) / dl if dl > 0 else None,
           "note": "payload_memory is what the payload mapped (status); per live sample: its growth / samples added"}
    print("  heap %d MiB: %d live samples, payload memory %d KiB (%d KiB at load), %s bytes per live sample; "
          "target RSS +%d KiB at load" % (gib >> 20, res["live_samples"], res["payload_memory_bytes"] >> 10,
                                           res["payload_memory_at_load"] >> 10,
                                           "%.0f" % res["bytes_per_live_sample"] if res["bytes_per_live_sample"]
                                           is not None else "n/a", res["rss_added_by_load_kb"]), flush=True)
    return res


# ---- figure 6: accuracy ----------------------------------------------------------

def site_estimates(path):
    r = hs("top", path, "-n", "0", "--json")
    doc = json.loads(r.stdout)
    est = {}
    for row in find_rows(doc):
        name = row.get("name") or row.get("function") or ""
        m = re.search(r"\bsite_(\d)\b", name)
        if m:
            est[int(m.group(1))] = est.get(int(m.group(1)), 0) + float(row.get("flat", 0))
    return est


def find_rows(doc):
    if isinstance(doc, list):
        return doc
    for k in ("rows", "entries", "nodes", "items"):
        if k in doc:
            return doc[k]
    return []


def figure6():
    rate = 524288
    runs = 1 if SMOKE else max(RUNS, 3)
    per_site = {}
    truth = None
    for run in range(runs):
        t = Target([os.path.join(BIN, "heap")], stdin=True)
        try:
            hs("start", t.pid, "--rate", rate)
            truth = t.cmd("sites 1")["sites"]
            out = os.path.join(TMP, "acc.pb.gz")
            hs("dump", t.pid, "-o", out)
        finally:
            t.stop()
        est = site_estimates(out)
        for k, s in enumerate(truth):
            per_site.setdefault(k, []).append(est.get(k, 0.0))
    rows = []
    for k, s in enumerate(truth):
        size, count, true = s["size"], s["count"], s["bytes"]
        p = 1 - math.exp(-size / rate)
        sigma = math.sqrt(count * size * size * (1 - p) / p)
        errs = [(e - true) / true for e in per_site[k]]
        zs = [(e - true) / sigma for e in per_site[k]]
        rows.append({"site": s["function"], "size": size, "count": count, "true_bytes": true,
                     "estimated_bytes": summary(per_site[k]), "rel_error": summary(errs),
                     "abs_rel_error": summary([abs(x) for x in errs]), "sigma_bytes": sigma,
                     "sigmas": summary(zs), "max_abs_sigmas": max(abs(z) for z in zs)})
        r = rows[-1]
        print("  %-7s %7d x %7d B = %9d B: estimated %s, |rel err| %s, max %.1f sigma (sigma %.1f%%)" % (
            r["site"], count, size, true, fmt_s(r["estimated_bytes"], "%.0f"),
            fmt_s(r["abs_rel_error"], "%.3f"), r["max_abs_sigmas"], 100 * sigma / true), flush=True)
    return {"figure": 6, "title": "accuracy at rate 512 KiB: estimated vs true live bytes per site",
            "runs": runs, "rate": rate, "note": "sigma: the Poisson sampler's standard deviation, "
            "sqrt(count * size^2 * (1-p)/p), p = 1-exp(-size/rate)", "rows": rows}


FIGURES = [("1", "throughput", figure1), ("2", "attach", figure2), ("3", "snapshot", figure3),
           ("4", "symbolize", figure4), ("5", "memory", figure5), ("6", "accuracy", figure6)]


# ---- the goals, judged on this run's figures ------------------------------

def med(s):
    return s["median"] if s else None


def verdict(ok):
    return "n/a" if ok is None else ("met" if ok else "MISSED")


def print_goals(res):
    """One line per goal of issue 7, from the figures of this run."""
    lines = []
    f1 = res.get("throughput")
    if f1:
        by = {}
        for r in f1["rows"]:
            by.setdefault(r["workload"], {})[r["tool"]] = r
        for wl, tools in by.items():
            hs512 = tools.get("heapsnap rate 524288")
            if hs512 and wl.startswith("mh"):
                r = med(hs512["ratio"])
                lines.append("512 KiB costs <= 3%%, %s: %.1f%% slower (payload's own cost %.1f%% of a CPU): %s" % (
                    wl, 100 * (1 - r), 100 * (med(hs512.get("cost_cpu_share")) or 0), verdict(r >= 0.97)))
            je = tools.get("jemalloc prof lg_prof_sample:19")
            if hs512 and je:
                a, b = med(hs512["ratio"]), med(je["ratio"])
                lines.append("512 KiB cheaper than jemalloc's profiler, %s: %.3f vs %.3f: %s" % (
                    wl, a, b, verdict(a > b)))
            hs1, ht = tools.get("heapsnap rate 1"), tools.get("heaptrack -p")
            if hs1 and ht:
                a, b = 1 - med(hs1["ratio"]), 1 - med(ht["ratio"])
                lines.append("exact mode < half heaptrack's slowdown, %s: %.1f%% vs %.1f%%: %s" % (
                    wl, 100 * a, 100 * b, verdict(a < b / 2)))
    f2 = res.get("attach")
    if f2:
        for r in f2["rows"]:
            if not r["tool"].startswith("heapsnap") or not r["wall_ms"]:
                continue
            lines.append("attach: sampling within 200 ms: %.0f ms: %s" % (
                med(r["wall_ms"]), verdict(med(r["wall_ms"]) < 200)))
            st, base = med(r["hijacked_thread_stall_us"]), med(r["baseline_sleeper_stall_us"])
            held = med(r.get("hijacked_thread_held_us"))
            lines.append("attach: hijacked thread stalls < 5 ms: %.1f ms seen inside (%.1f ms without an attach), "
                         "held %.2f ms by the injector: %s" % (
                             st / 1e3, base / 1e3, (held or 0) / 1e3, verdict(st < 5000)))
            ot, obase = med(r["other_threads_max_gap_us"]), med(r["baseline_workers_max_gap_us"])
            lines.append("attach: other threads < 1 ms: %.1f ms (%.1f ms without an attach): %s" % (
                ot / 1e3, obase / 1e3, verdict(ot < 1000)))
    f3 = res.get("snapshot")
    if f3:
        for r in f3["rows"]:
            if r["live_samples"] < 50000 or r["live_samples"] > 500000:
                continue
            hold = med(r.get("lock_hold_max_us"))
            gap, base = med(r["allocating_thread_max_gap_us"]), med(r["baseline_allocating_thread_max_gap_us"])
            lines.append("snapshot of %d samples stalls no thread > 1 ms: lock held %.0f us at most; allocating "
                         "thread's longest gap %.1f ms (%.1f ms without a dump): %s" % (
                             r["live_samples"], hold or 0, gap / 1e3, base / 1e3,
                             verdict(None if hold is None else hold < 1000)))
    if lines:
        print("goals (issue 7), medians of this run:")
        for line in lines:
            print("  " + line)


def main():
    os.makedirs(OUT, exist_ok=True)
    failed = 0
    t_all = now()
    results = {}
    try:
        for num, name, fn in FIGURES:
            if ONLY and num not in ONLY:
                continue
            print("figure %s: %s (BENCH_SECONDS=%g BENCH_RUNS=%d)" % (num, name, SECS, RUNS), flush=True)
            t0 = now()
            try:
                res = fn()
            except (RuntimeError, OSError, KeyError, ValueError, subprocess.SubprocessError) as e:
                print("  failed: %s" % e, flush=True)
                failed += 1
                continue
            res["elapsed_s"] = now() - t0
            results[name] = res
            with open(os.path.join(OUT, "%s.json" % name), "w") as f:
                json.dump(res, f, indent=1)
                f.write("\n")
            for k, v in res.get("unavailable", {}).items():
                print("  %s: %s" % (k, v))
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    print_goals(results)
    print("bench: %.0f s, results in %s" % (now() - t_all, OUT))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
