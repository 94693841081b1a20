"""A small stand-in for a long-running Python daemon, for `make demo`.

Four worker threads serve "requests" for about three seconds -- one parses and writes
JSON, one matches log lines with regular expressions, one hashes blobs, one sorts
records -- while the main thread waits for them, as a daemon's main loop would.  Then
it prints what was done and exits 0.

Run it under the profiler:

    PYPROF_OUTPUT=/tmp/demo LD_PRELOAD=build/libpyprof.so python3 examples/daemon.py
    build/pyprof report /tmp/demo
"""

import hashlib
import json
import random
import re
import threading
import time

RUN_SECONDS = 3.0
LOG_LINE = re.compile(r"^(?P<ip>\d+\.\d+\.\d+\.\d+) - \[(?P<when>[^\]]+)\] "
                      r"\"(?P<method>[A-Z]+) (?P<path>\S+)\" (?P<status>\d{3})$")


def handle_json(rng):
    doc = {"id": rng.randint(0, 1 << 30),
           "tags": ["t%d" % rng.randint(0, 99) for _ in range(20)],
           "values": [rng.random() for _ in range(50)]}
    back = json.loads(json.dumps(doc, sort_keys=True))
    return len(back["tags"])


def handle_logs(rng):
    matched = 0
    for _ in range(50):
        line = '10.0.%d.%d - [21/Nov/2025:10:00:00] "GET /api/v%d/items" %d' % (
            rng.randint(0, 255), rng.randint(0, 255), rng.randint(1, 3),
            rng.choice((200, 404, 500)))
        m = LOG_LINE.match(line)
        if m and m.group("status") == "200":
            matched += 1
    return matched


def handle_hash(rng):
    blob = bytes(bytearray(rng.getrandbits(8) for _ in range(4096)))
    digest = hashlib.sha256(blob).hexdigest()
    return int(digest[:2], 16) >= 0


def handle_sort(rng):
    records = [(rng.random(), "name%d" % i, i) for i in range(500)]
    records.sort()
    return sorted(records, key=lambda r: r[2])[0][2] == 0


class Worker(threading.Thread):
    """Serves requests of one kind until the deadline."""

    def __init__(self, name, handler, deadline, seed):
        threading.Thread.__init__(self, name=name)
        self.handler = handler
        self.deadline = deadline
        self.rng = random.Random(seed)
        self.served = 0

    def run(self):
        while time.time() < self.deadline:
            self.handler(self.rng)
            self.served += 1


def main():
    print("daemon: starting 4 workers for %.0f seconds" % RUN_SECONDS)
    deadline = time.time() + RUN_SECONDS
    workers = [Worker(name, fn, deadline, seed) for seed, (name, fn) in enumerate([
        ("json-worker", handle_json), ("regex-worker", handle_logs),
        ("hash-worker", handle_hash), ("sort-worker", handle_sort)])]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    print("daemon: served %d requests (%s); exiting" % (
        sum(w.served for w in workers),
        ", ".join("%s %d" % (w.name, w.served) for w in workers)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
