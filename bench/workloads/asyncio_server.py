"""An asyncio server's shape for the asyncio part of the bench: PENDING tasks waiting
(each in asyncio.sleep, as idle connections wait for a request) while REQUESTS
requests are served, each a task that does a little CPU work (a loop of WORK steps)
between two awaits, eight at a time.  Usage: asyncio_server.py PENDING REQUESTS WORK
RESULT; writes the process's CPU seconds while serving to RESULT (JSON)."""

import asyncio
import json
import resource
import sys

PENDING, REQUESTS, WORK, RESULT = (int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]),
                                   sys.argv[4])


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def idle():
    await asyncio.sleep(3600)


async def handle(n):
    x = 0
    for i in range(WORK):
        x += i * n
    await asyncio.sleep(0)
    for i in range(WORK):
        x -= i
    return x


async def worker(queue):
    while True:
        n = await queue.get()
        if n is None:
            return
        await asyncio.create_task(handle(n))


async def main():
    idle_tasks = [asyncio.ensure_future(idle()) for _ in range(PENDING)]
    await asyncio.sleep(0.2)   # the library has the layout and the tasks wait
    queue = asyncio.Queue()
    workers = [asyncio.ensure_future(worker(queue)) for _ in range(8)]
    c0 = cpu()
    for n in range(REQUESTS):
        await queue.put(n)
    for _ in workers:
        await queue.put(None)
    await asyncio.gather(*workers)
    c1 = cpu()
    for task in idle_tasks:
        task.cancel()
    await asyncio.gather(*idle_tasks, return_exceptions=True)
    with open(RESULT, "w") as f:
        json.dump({"serve_cpu_s": c1 - c0}, f)


asyncio.run(main())
