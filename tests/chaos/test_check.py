#!/usr/bin/env python3
"""test_check.py: check.py finds what it is meant to find. A chaos run with no violation
says little unless the checker would have seen one: each case here builds the files of a
small run by hand (a database with the columns check.py reads, the tasks' logs, the
acknowledged submits), breaks one thing, and expects exactly that invariant's violation;
the unbroken run must have none. Exits 1 on the first case that goes otherwise.
"""
import json
import os
import sqlite3
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check  # noqa: E402

COMPLETED, FAILED, RUNNING = 3, 4, 2


def good_run():
    """Job 1 (ok, 1 node, requeued once, completed), job 2 (fail, 2 nodes, failed)."""
    return {
        "jobs": {1: (COMPLETED, 0, 1, "k1"), 2: (FAILED, 3, 0, "k2")},
        "events": [(1, "PENDING"), (1, "RUNNING"), (1, "REQUEUED"), (1, "RUNNING"),
                   (1, "COMPLETED"), (2, "PENDING"), (2, "RUNNING"), (2, "FAILED")],
        "submits": [{"key": "k1", "job": 1, "kind": "ok", "exit": 0, "max_restarts": 3},
                    {"key": "k2", "job": 2, "kind": "fail", "exit": 3, "max_restarts": 0}],
        "logs": {1: ["start 1 node1 100 0", "tick 1 node1 100 0",  # killed, then again:
                     "start 1 node2 200 0", "tick 1 node2 200 0", "end 1 node2 200 0 0"],
                 2: ["start 2 node1 300 0", "start 2 node3 301 1", "tick 2 node3 301 1",
                     "end 2 node1 300 0 3"]},  # rank 1 is ended when rank 0 fails
    }


def write(run, d):
    os.makedirs(os.path.join(d, "state"))
    os.makedirs(os.path.join(d, "tasks"))
    db = sqlite3.connect(os.path.join(d, "state", "gsched.db"))
    db.execute("CREATE TABLE jobs (id INTEGER PRIMARY KEY, state INTEGER, exit_code INTEGER, "
               "restarts INTEGER, submit_key TEXT, filler TEXT)")
    db.execute("CREATE TABLE events (id INTEGER PRIMARY KEY, job_id INTEGER, kind TEXT)")
    db.execute("CREATE INDEX jobs_key ON jobs (submit_key)")
    for job, (state, code, restarts, key) in run["jobs"].items():
        db.execute("INSERT INTO jobs VALUES (?, ?, ?, ?, ?, ?)",
                   (job, state, code, restarts, key, "x" * 200))
    db.executemany("INSERT INTO events (job_id, kind) VALUES (?, ?)", run["events"])
    db.commit()
    db.close()
    for job, lines in run["logs"].items():
        with open(os.path.join(d, "tasks", f"{job}.log"), "w") as f:
            f.write("".join(line + "\n" for line in lines))
    with open(os.path.join(d, "submits.jsonl"), "w") as f:
        f.write("".join(json.dumps(s) + "\n" for s in run["submits"]))


def corrupt_index(d):
    """Overwrites the last page of the database (the index's): integrity_check objects."""
    path = os.path.join(d, "state", "gsched.db")
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.seek(size - 4096 + 8)
        f.write(b"\xff" * 64)


def case(name, expect, change=None, after=None):
    run = good_run()
    if change is not None:
        change(run)
    with tempfile.TemporaryDirectory() as d:
        write(run, d)
        if after is not None:
            after(d)
        _, bad = check.check(os.path.join(d, "state"), os.path.join(d, "tasks"),
                             os.path.join(d, "submits.jsonl"))
    kinds = sorted({v.split(":")[0] for v in bad})
    ok = kinds == expect
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {bad if bad else 'no violation'}")
    return ok


def main():
    results = [
        case("a clean run", []),
        case("two attempts at once", ["overlap"],
             lambda r: r["logs"][1].insert(3, "tick 1 node1 100 0")),
        case("a retried submit queued twice", ["acknowledged"],
             lambda r: r["jobs"].update({3: (COMPLETED, 0, 0, "k1")})),
        case("an acknowledged job lost", ["acknowledged"], lambda r: r["jobs"].pop(2)),
        case("a job never finished", ["finished"],
             lambda r: r["jobs"].update({1: (RUNNING, 0, 1, "k1")})),
        case("COMPLETED though its last attempt failed", ["success"],
             lambda r: r["logs"][1].__setitem__(4, "end 1 node2 200 0 1")),
        case("COMPLETED with no task ever run", ["success"], lambda r: r["logs"].pop(1)),
        case("an ok job recorded FAILED", ["outcome"],
             lambda r: r["jobs"].update({1: (FAILED, 1, 1, "k1")})),
        case("more restarts than allowed", ["outcome"],
             lambda r: r["jobs"].update({2: (FAILED, 3, 1, "k2")})),
        case("a final state reached twice", ["once"],
             lambda r: r["events"].insert(3, (1, "COMPLETED"))),
        case("a damaged database", ["integrity"], after=corrupt_index),
    ]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
