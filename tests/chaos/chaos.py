#!/usr/bin/env python3
"""chaos.py: a seeded, time-bounded fault run of gschedd and three workers (started by
chaos.sh, which makes the network namespaces, if any, and removes them after).

For SECONDS, jobs are submitted (JOBS of them, at moments drawn from the seed) while faults
drawn from the same seed happen: gschedd killed with -9 and started again after a pause;
a worker killed with -9 and started again (a new worker first ends what the old one left
running, then registers); with network namespaces, a worker's link or gschedd's link cut
(`ip link set DEV down`) and mended after a while, sometimes long enough for the worker to
fence itself (scheduler.fence_timeout) and gschedd to move its jobs. One fault at a time
(one due while another is on waits for it to be undone) unless --overlap. Jobs: 1 or 2 nodes,
0-1 GPU, 1-4 cores, 0.2-1.5 s of ticking into their own log, most exiting 0 ("ok"), some 3
("fail"); max_restarts 0 or 3; some 1-node ones deaf to SIGTERM. Each submit has its own client key (GSCHED_SUBMIT_KEY) and is
tried again with it until acknowledged. Then every fault is undone, the run waits for every
job to end, stops the daemons with SIGTERM, and check.py verifies the invariants on the
database and the tasks' logs. The moments come from the seed; which job a fault hits
depends on the machine's speed, and the invariants must hold for any timing.

Prints the faults injected by kind, the outcomes and the violations; exits 1 on any
violation (or a sanitizer report in a daemon's log), 0 otherwise.
"""
import argparse
import heapq
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check  # noqa: E402

HEARTBEAT_S, MISSES, FENCE_S = 1, 2, 5
NODES = 3
SANITIZER = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--src", required=True)
    p.add_argument("--tmp", required=True)
    p.add_argument("--seconds", type=float, default=40)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--jobs", type=int, default=200)
    p.add_argument("--overlap", action="store_true",
                   help="faults may overlap (a worker killed while another link is cut...)")
    p.add_argument("--netns", default="", help="gschedd's namespace,node1's,...; empty: loopback")
    p.add_argument("--links", default="", help="bridge-side link of gschedd,node1,...")
    p.add_argument("--sched-addr", required=True, help="HOST:PORT gschedd listens on")
    return p.parse_args()


class Cluster:
    """gschedd and the workers: started, killed with -9, started again; links cut, mended."""

    def __init__(self, a):
        self.a = a
        self.ns = a.netns.split(",") if a.netns else []
        self.links = a.links.split(",") if a.links else []
        self.cfg = os.path.join(a.tmp, "gsched.toml")
        self.sock = os.path.join(a.tmp, "gschedd.sock")
        self.sched = None
        self.workers = [None] * (NODES + 1)
        self.cut = set()
        self.write_config()

    def write_config(self):
        host, port = self.a.sched_addr.rsplit(":", 1)
        wrk = os.path.join(self.a.tmp, "wrk")
        os.makedirs(wrk, exist_ok=True)
        with open(self.cfg, "w") as f:
            f.write(f'[scheduler]\nhost = "{host}"\nport = {port}\nsocket = "{self.sock}"\n'
                    f'state_dir = "{self.a.tmp}/state"\nauth_key = "{self.a.tmp}/gsched.key"\n'
                    f'http = ""\nheartbeat_interval = "{HEARTBEAT_S}s"\n'
                    f'heartbeat_misses = {MISSES}\nkill_grace = "1s"\n'
                    f'fence_timeout = "{FENCE_S}s"\n'
                    f'[worker]\nallow_root_jobs = true\ncgroups = "off"\nlog_dir = "{wrk}"\n')

    def in_ns(self, i, argv):
        if not self.ns:
            return argv
        pre = ["nsenter", f"--net=/run/netns/{self.ns[i]}"]
        if i == 0:
            return pre + argv
        # Its own UTS namespace: the worker's name is its host name.
        return pre + ["unshare", "--uts", "sh", "-c", 'hostname "$1" && shift && exec "$@"',
                      "sh", f"node{i}"] + argv

    def spawn(self, i, argv, log):
        with open(os.path.join(self.a.tmp, log), "ab") as f:
            return subprocess.Popen(self.in_ns(i, argv), stdin=subprocess.DEVNULL, stdout=f,
                                    stderr=f)

    def start_sched(self):
        if os.path.exists(self.sock):
            os.unlink(self.sock)
        self.sched = self.spawn(0, [f"{self.a.bin}/gschedd", "--config", self.cfg],
                                "gschedd.log")
        deadline = time.monotonic() + 20
        while not os.path.exists(self.sock):
            if self.sched.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"gschedd did not start (status {self.sched.poll()})")
            time.sleep(0.02)

    def start_worker(self, i):
        argv = [f"{self.a.bin}/gsched-workerd", "--config", self.cfg, "--scheduler",
                self.a.sched_addr, "--topology", f"{self.a.src}/tests/topologies/ws-4gpu.xml"]
        if not self.ns:
            argv += ["--name", f"node{i}"]
        self.workers[i] = self.spawn(i, argv, f"node{i}.log")

    def kill(self, proc):
        proc.kill()
        proc.wait()

    def set_link(self, i, up):
        subprocess.run(["ip", "link", "set", self.links[i], "up" if up else "down"], check=True)
        (self.cut.discard if up else self.cut.add)(i)

    def restore(self):
        """Every fault undone: links up, every daemon running."""
        for i in sorted(self.cut):
            self.set_link(i, True)
        if self.sched is None:
            self.start_sched()
        for i in range(1, NODES + 1):
            if self.workers[i] is None:
                self.start_worker(i)

    def kill_all(self):
        for p in [self.sched] + self.workers:
            if p is not None and p.poll() is None:
                self.kill(p)

    def stop(self):
        """SIGTERM to all; returns the programs that did not exit within 20 s (killed)."""
        procs = [(f"node{i}", w) for i, w in enumerate(self.workers)] + [("gschedd", self.sched)]
        procs = [(name, p) for name, p in procs if p is not None]
        stuck = []
        for _, p in procs:
            p.send_signal(signal.SIGTERM)
        for name, p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                stuck.append(name)
                self.kill(p)
        return stuck


def fault_plan(rng, seconds, netns):
    """[(at, kind, target, duration)]: a fault every 1.5 s on average (exponential gaps)."""
    kinds = [("kill_gschedd", 2), ("kill_worker", 4)]
    if netns:
        kinds += [("cut_worker", 4), ("cut_gschedd", 1)]
    names = [k for k, w in kinds for _ in range(w)]
    plan, t = [], rng.uniform(1, 2)
    while t < seconds:
        kind = rng.choice(names)
        target = rng.randint(1, NODES) if kind.endswith("worker") else 0
        if kind == "kill_gschedd":
            pause = rng.uniform(0.1, 1.2)  # shorter than a worker's fence, with its backoff
        elif kind == "kill_worker":
            pause = rng.uniform(0.1, 2.5)  # a node's worker comes back (systemd: 1 s)
        else:  # short cuts, cuts past node DOWN, and cuts past the fence and the move
            pause = rng.choice([rng.uniform(0.3, 1.5), rng.uniform(1.5, FENCE_S + 1.5),
                                rng.uniform(FENCE_S + 1.5, FENCE_S + 4)])
        plan.append((t, kind, target, pause))
        t += rng.expovariate(1 / 1.5)
    return plan


def job_plan(rng, n, seconds):
    """[(at, spec)]: n jobs at moments spread over 85 % of the run."""
    jobs = []
    for i in range(n):
        kind = "fail" if rng.random() < 0.15 else "ok"
        spec = {"key": f"chaos-{i}-{rng.getrandbits(32):08x}", "kind": kind,
                "exit": 3 if kind == "fail" else 0, "max_restarts": rng.choice([0, 3, 3]),
                "nodes": 2 if rng.random() < 0.25 else 1, "gpus": rng.randint(0, 1),
                "cpus": rng.randint(1, 4), "ticks": rng.randint(2, 15),
                "deaf": rng.random() < 0.2}
        # A gang's next attempt does not wait for a deaf rank of the last one on another
        # node (tests/netns/gang.sh, disabled until it does): deaf jobs are 1-node here.
        spec["deaf"] = spec["deaf"] and spec["nodes"] == 1
        jobs.append((rng.uniform(0, seconds * 0.85), spec))
    return sorted(jobs, key=lambda x: x[0])


def job_file(a, spec):
    path = os.path.join(a.tmp, "work", f"{spec['key']}.toml")
    tasks = os.path.join(a.tmp, "tasks")
    # A deaf task notes SIGTERM and goes on (as one that checkpoints on it would), until
    # SIGKILL after kill_grace, or its end.
    deaf = 'trap \'echo "term $me" >> "$log"\' TERM\n' if spec["deaf"] else ""
    script = f"""log={tasks}/$GSCHED_JOB_ID.log
node=$(echo "$GSCHED_NODELIST" | cut -d, -f$((GSCHED_NODE_RANK + 1)))
me="$GSCHED_JOB_ID $node $$ $GSCHED_NODE_RANK"
{deaf}echo "start $me" >> "$log"
i=0
while [ $i -lt {spec['ticks']} ]; do echo "tick $me" >> "$log"; sleep 0.1; i=$((i+1)); done
echo "end $me {spec['exit']}" >> "$log"
exit {spec['exit']}
"""
    with open(path, "w") as f:
        f.write(f'name = "{spec["kind"]}"\n[resources]\nnodes = {spec["nodes"]}\n'
                f'gpus_per_node = {spec["gpus"]}\ncpus_per_task = {spec["cpus"]}\n'
                f"[run]\nstdout = \"/dev/null\"\nscript = '''\n{script}'''\n"
                f'[restart]\nmax_restarts = {spec["max_restarts"]}\n')
    return path


class Submitter(threading.Thread):
    """Submits the planned jobs, each until acknowledged (same key every try)."""

    def __init__(self, a, t0, plan, stats):
        super().__init__(daemon=True)
        self.a, self.t0, self.plan, self.stats = a, t0, plan, stats
        self.acked, self.error = [], None
        self.out = open(os.path.join(a.tmp, "submits.jsonl"), "w")

    def submit(self, spec):
        path = job_file(self.a, spec)
        env = dict(os.environ, GSCHED_SUBMIT_KEY=spec["key"],
                   GSCHED_SOCKET=os.path.join(self.a.tmp, "gschedd.sock"))
        deadline = time.monotonic() + 60
        for tries in range(1, 1000):
            r = subprocess.run([f"{self.a.bin}/gsched", "submit", path, "--json"], env=env,
                               cwd=os.path.join(self.a.tmp, "work"), capture_output=True,
                               text=True)
            if r.returncode == 0:
                reply = json.loads(r.stdout)
                self.stats["retried"] += bool(reply.get("retried"))
                self.stats["tries"] += tries - 1
                return reply["job_id"]
            if time.monotonic() > deadline:
                raise RuntimeError(f"submit {spec['key']} never acknowledged: {r.stderr}")
            time.sleep(0.2)

    def run(self):
        try:
            for at, spec in self.plan:
                time.sleep(max(0.0, self.t0 + at - time.monotonic()))
                rec = dict(spec, job=self.submit(spec))
                self.acked.append(rec)
                self.out.write(json.dumps(rec) + "\n")
                self.out.flush()
        except Exception as e:  # reported by the main thread
            self.error = e


def run_faults(c, plan, t0, seconds, overlap):
    """Injects the planned faults until seconds have passed; returns counts by kind."""
    restores, counts = [], {}
    pending = list(plan)
    while time.monotonic() < t0 + seconds:
        now = time.monotonic() - t0
        if restores and restores[0][0] <= now:
            _, what, i = heapq.heappop(restores)
            if what == "sched":
                c.start_sched()
            elif what == "worker":
                c.start_worker(i)
            else:
                c.set_link(i, True)
            continue
        # One at a time unless overlap: the next fault waits until the last is undone.
        if pending and pending[0][0] <= now and (overlap or not restores):
            at, kind, i, pause = pending.pop(0)
            if inject(c, kind, i):
                counts[kind] = counts.get(kind, 0) + 1
                what = {"kill_gschedd": "sched", "kill_worker": "worker"}.get(kind, "link")
                heapq.heappush(restores, (now + pause, what, i))
            continue
        nxt = min([t0 + seconds] + [t0 + r[0] for r in restores[:1]] +
                  [t0 + p[0] for p in pending[:1] if overlap or not restores])
        time.sleep(max(0.0, min(nxt - time.monotonic(), 0.05)))
    return counts


def inject(c, kind, i):
    """The fault, unless its target is already down (then it is not counted)."""
    if kind == "kill_gschedd" and c.sched is not None:
        c.kill(c.sched)
        c.sched = None
    elif kind == "kill_worker" and c.workers[i] is not None:
        c.kill(c.workers[i])
        c.workers[i] = None
    elif kind in ("cut_worker", "cut_gschedd") and i not in c.cut:
        c.set_link(i, False)
    else:
        return False
    return True


def queue(a):
    r = subprocess.run([f"{a.bin}/gsched", "queue", "--all", "--json"], capture_output=True,
                       text=True, env=dict(os.environ, GSCHED_SOCKET=os.path.join(a.tmp,
                                                                                  "gschedd.sock")))
    return json.loads(r.stdout) if r.returncode == 0 else None


def drain(a, timeout):
    """Waits until gschedd has no job pending or running; returns those left at the end."""
    deadline, left = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        q = queue(a)
        if q is not None:
            left = [j["job_id"] for j in q if j["state"] in ("PENDING", "RUNNING", "REQUEUED")]
            if not left:
                return []
        time.sleep(0.25)
    return left if left is not None else ["(gschedd did not answer)"]


def sanitizer_reports(tmp):
    found = []
    for name in sorted(os.listdir(tmp)):
        if name.endswith(".log"):
            with open(os.path.join(tmp, name), errors="replace") as f:
                if any(s in line for line in f for s in SANITIZER):
                    found.append(name)
    return found


def storm(a, c):
    """The run itself: submits and faults, then every fault undone and the jobs drained.
    Returns (submitter, fault counts, violations so far)."""
    faults = fault_plan(random.Random(a.seed), a.seconds, bool(a.netns))
    jobs = job_plan(random.Random(a.seed + 1_000_003), a.jobs, a.seconds)
    c.start_sched()
    for i in range(1, NODES + 1):
        c.start_worker(i)
    t0 = time.monotonic()
    sub = Submitter(a, t0, jobs, {"retried": 0, "tries": 0})
    sub.start()
    counts = run_faults(c, faults, t0, a.seconds, a.overlap)
    c.restore()
    sub.join(timeout=120)
    violations = []
    if sub.error is not None or sub.is_alive():
        violations.append(f"acknowledged: {sub.error or 'submits still going after 120 s'}")
    left = drain(a, 30 + a.seconds / 4)
    if left:
        violations.append(f"finished: jobs still pending or running after the drain: {left[:20]}")
    stuck = c.stop()
    if stuck:
        violations.append(f"stop: {stuck} did not stop on SIGTERM within 20 s")
    return sub, counts, violations


def main():
    a = parse_args()
    for d in ("work", "tasks"):
        os.makedirs(os.path.join(a.tmp, d), exist_ok=True)
    with open(os.path.join(a.tmp, "gsched.key"), "wb") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(os.urandom(32))
    c = Cluster(a)
    try:
        sub, counts, violations = storm(a, c)
    finally:
        c.kill_all()  # whatever still runs after an error (on loopback nothing else would)
    mode = "netns" if a.netns else "loopback"
    mode += " (faults overlapping)" if a.overlap else " (one fault at a time)"
    print(f"chaos: seed={a.seed} seconds={a.seconds:g} mode={mode} submitted={len(sub.acked)} "
          f"(CLI runs again after a failure: {sub.stats['tries']}, answered as retried: "
          f"{sub.stats['retried']})")
    print("chaos: faults: " + " ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    st, bad = check.check(os.path.join(a.tmp, "state"), os.path.join(a.tmp, "tasks"),
                          os.path.join(a.tmp, "submits.jsonl"))
    violations += bad
    reports = sanitizer_reports(a.tmp)
    if reports:
        violations.append(f"sanitizer report in {reports}")
    check.report(st, violations)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
