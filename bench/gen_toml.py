#!/usr/bin/env python3
"""Writes a TOML document of about SIZE_KB kilobytes to stdout, shaped like what gsched reads:
many job-file-like tables and arrays of tables, with strings (escapes included), integers,
floats, booleans, dates and inline tables. Deterministic, so runs compare like with like.

    python3 gen_toml.py [SIZE_KB]
"""
import sys


def job(i):
    return f'''
[[job]]
name = "gpt-small-{i}"
priority = {i % 17}
depends_on = ["afterok:{i + 40}", "afterany:{i + 41}"]
submitted = 2026-12-02T13:{i % 60:02d}:08.123Z
[job.resources]
nodes = {1 + i % 4}
gpus_per_node = {1 << (i % 4)}
cpus_per_gpu = 8
mem_per_node = "64G"
time_limit = "02:00:00"
exclusive = {"true" if i % 3 == 0 else "false"}
learning_rate = 3.0e-4
weights = [0.25, 0.5, 1_000.0, -inf]
[job.run]
command = ["python3", "train.py", "--epochs", "{i % 9}", "--tag", "run\\t{i}\\u00e9"]
workdir = '/scratch/user{i % 7}/project'
env = {{ NCCL_DEBUG = "WARN", OMP_NUM_THREADS = "{1 + i % 8}", SEED = "{i * 7919}" }}
script = """
#!/bin/bash
echo "rank $RANK of $WORLD_SIZE"   # job {i}
"""
'''


def main():
    size_kb = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    out, n, i = [], 0, 0
    while n < size_kb * 1024:
        s = job(i)
        out.append(s)
        n += len(s.encode())
        i += 1
    sys.stdout.write("".join(out))


if __name__ == "__main__":
    main()
