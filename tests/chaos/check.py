#!/usr/bin/env python3
"""check.py STATE_DIR TASKS_DIR SUBMITS: the invariants of a chaos run (chaos.py), checked
after it from what it leaves: gschedd's database (STATE_DIR/gsched.db, opened read-only),
the tasks' own logs (TASKS_DIR/JOB.log) and the submissions the run had acknowledged
(SUBMITS, one JSON object a line: key, job, kind, exit, max_restarts). Prints what it found
and exits 1 when any invariant failed, so it can be run again on a kept run's files.

Each task appends to its job's log, with O_APPEND, so the order of the lines is the order in
which they were written, across nodes and attempts, with no clock involved:
    start JOB NODE PID RANK      when it starts
    tick JOB NODE PID RANK       every 0.1 s while it runs
    end JOB NODE PID RANK CODE   just before it exits with CODE
A task killed by a signal writes no end line; its last line says when it was last alive.

Invariants (each failure is one line under "violations"):
  acknowledged   every acknowledged submit's job is in the database with that submit's key;
                 no key made two jobs; no job exists that nobody submitted
  finished       every job is in a final state (the run waited for them with all faults over)
  outcome        an ok job ends COMPLETED (exit 0), NODE_FAIL or CANCELLED (its tasks were
                 fenced; nobody cancels in a chaos run); a failing job (exit 3) ends FAILED
                 with code 3, NODE_FAIL or CANCELLED; restarts never exceed max_restarts
  once           a job's history reaches a final state once, as its last event
  overlap        never two attempts at once: for each rank of a job, no line of a task
                 follows the start of a later task of that rank
  success        the outcome gschedd recorded is the one the tasks had: a COMPLETED job's
                 last attempt succeeded (each rank's last task wrote "end ... 0"); in a
                 FAILED one's last attempt a rank ended with its code (the others are ended
                 when one fails, and may write no end line)
  integrity      PRAGMA integrity_check says ok
Not violations, counted: attempts that succeeded but whose success no daemon could record (a
worker killed under a task that then ended, an exit held behind a cut link while gschedd
moved the job) and were run again. CANCELLED outcomes (tasks fenced) show in the outcomes.
"""
import collections
import json
import os
import sqlite3
import sys

FINAL = {3: "COMPLETED", 4: "FAILED", 5: "CANCELLED", 6: "TIMEOUT", 7: "NODE_FAIL",
         9: "OUT_OF_MEMORY"}
STATE = {**FINAL, 1: "PENDING", 2: "RUNNING", 8: "REQUEUED"}
LEGAL = {"ok": {"COMPLETED", "NODE_FAIL", "CANCELLED"},
         "fail": {"FAILED", "NODE_FAIL", "CANCELLED"}}


def load_db(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        integrity = [r[0] for r in db.execute("PRAGMA integrity_check")]
    except sqlite3.DatabaseError as e:
        integrity = [f"integrity_check failed: {e}"]
    jobs = {r[0]: {"state": r[1], "exit": r[2], "restarts": r[3], "key": r[4]}
            for r in db.execute("SELECT id, state, exit_code, restarts, submit_key FROM jobs")}
    events = collections.defaultdict(list)
    for job, kind in db.execute("SELECT job_id, kind FROM events ORDER BY id"):
        events[job].append(kind)
    db.close()
    return integrity, jobs, events


def load_tasks(path):
    """{rank: [task, ...]} in start order; a task is {node, pid, start, last, code}."""
    ranks = collections.defaultdict(list)
    live = {}
    if not os.path.exists(path):
        return ranks
    with open(path) as f:
        for i, line in enumerate(f):
            w = line.split()
            if len(w) < 5:
                continue  # a line cut short by a kill
            who = (w[2], w[3])
            if w[0] == "start":
                live[who] = {"node": w[2], "pid": w[3], "start": i, "last": i, "code": None}
                ranks[w[4]].append(live[who])
            elif who in live:
                live[who]["last"] = i
                if w[0] == "end" and len(w) > 5:
                    live[who]["code"] = int(w[5])
    return ranks


def check_acknowledged(submits, jobs, out):
    by_key = collections.defaultdict(list)
    for job, j in jobs.items():
        by_key[j["key"]].append(job)
    for s in submits:
        j = jobs.get(s["job"])
        if j is None:
            out.append(f"acknowledged: job {s['job']} (key {s['key']}) is not in the database")
        elif j["key"] != s["key"]:
            out.append(f"acknowledged: job {s['job']} has key {j['key']}, not {s['key']}")
    keys = {s["key"] for s in submits}
    for key, ids in by_key.items():
        if len(ids) > 1:
            out.append(f"acknowledged: key {key} made jobs {sorted(ids)}")
        if key not in keys:
            out.append(f"acknowledged: jobs {sorted(ids)} (key {key}) were never acknowledged")


def check_job(s, j, hist, ranks, out, stats):
    job, state = s["job"], STATE.get(j["state"], str(j["state"]))
    stats["outcome"][state] += 1
    stats["requeues"] += j["restarts"]
    if j["state"] not in FINAL:
        out.append(f"finished: job {job} ({s['kind']}) is still {state}")
        return
    if state not in LEGAL[s["kind"]] or (state == "FAILED" and j["exit"] != s["exit"]):
        out.append(f"outcome: {s['kind']} job {job} ended {state} (exit {j['exit']})")
    if j["restarts"] > s["max_restarts"]:
        out.append(f"outcome: job {job} restarted {j['restarts']} times, max {s['max_restarts']}")
    finals = [k for k in hist if k in FINAL.values()]
    if len(finals) != 1 or hist[-1] != finals[0]:
        out.append(f"once: job {job}'s history reaches a final state {len(finals)} times: {hist}")
    for rank, tasks in ranks.items():
        for a, b in zip(tasks, tasks[1:]):
            if a["last"] > b["start"]:
                gang = " (a gang: tests/netns/gang.sh)" if s.get("nodes", 1) > 1 else ""
                out.append(f"overlap: job {job} rank {rank}: {a['node']} pid {a['pid']} still "
                           f"ran after {b['node']} pid {b['pid']} started{gang}")
    check_success(s, state, ranks, out, stats)


def check_success(s, state, ranks, out, stats):
    job = s["job"]
    last = [t[-1]["code"] for t in ranks.values()]
    # A failing rank has the others ended (as torchrun does): they may write no end line.
    if (state == "COMPLETED" and (not last or any(c != 0 for c in last))) or \
            (state == "FAILED" and s["exit"] not in last):
        ends = {r: (t[-1]["node"], t[-1]["code"]) for r, t in ranks.items()}
        out.append(f"success: job {job} is {state} but its last tasks ended {ends}")
    wins = sum(t["code"] == 0 for t in ranks.get("0", []))
    if s["kind"] == "ok" and wins > (1 if state == "COMPLETED" else 0):
        stats["unrecorded_successes"] += wins - (1 if state == "COMPLETED" else 0)


def check(state_dir, tasks_dir, submits_path):
    """Returns (stats, violations)."""
    out = []
    stats = {"outcome": collections.Counter(), "requeues": 0, "unrecorded_successes": 0}
    submits = [json.loads(line) for line in open(submits_path) if line.strip()]
    integrity, jobs, events = load_db(os.path.join(state_dir, "gsched.db"))
    if integrity != ["ok"]:
        out.append(f"integrity: {integrity[:5]}")
    check_acknowledged(submits, jobs, out)
    for s in submits:
        if s["job"] in jobs:
            ranks = load_tasks(os.path.join(tasks_dir, f"{s['job']}.log"))
            check_job(s, jobs[s["job"]], events[s["job"]], ranks, out, stats)
    stats["jobs"] = len(jobs)
    return stats, out


def report(stats, violations, prefix="chaos"):
    outcome = " ".join(f"{k}={v}" for k, v in sorted(stats["outcome"].items()))
    print(f"{prefix}: jobs={stats['jobs']} outcomes: {outcome}; requeues={stats['requeues']}; "
          f"successes no daemon could record, run again: {stats['unrecorded_successes']}")
    print(f"{prefix}: violations: {len(violations)}")
    for v in violations[:50]:
        print(f"{prefix}: VIOLATION {v}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__.splitlines()[0])
    st, bad = check(*sys.argv[1:4])
    report(st, bad)
    sys.exit(1 if bad else 0)
