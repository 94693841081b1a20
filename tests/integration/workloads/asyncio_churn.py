"""asyncio task churn, for the safety of reading tasks: for about 1.5 s of wall time the
main task starts batches of short tasks named `churn-N` (a gather of 50, each burning a
little CPU across two awaits and renaming itself once to `churn-N-r`), with 200
long-lived idle tasks `idle-N` that finish in a burst halfway (the lists, sets and dicts
the library reads are resized and relinked all the time).  Prints the number of tasks
it made; exits 0."""

import asyncio
import os
import time

time.sleep(0.3)   # the layout is read before the tasks start


async def short(n):
    x = 0
    for i in range(300):
        x += i
    await asyncio.sleep(0)
    task = asyncio.current_task()
    if hasattr(task, "set_name"):
        task.set_name("churn-%d-r" % n)
    for i in range(300):
        x -= i
    await asyncio.sleep(0)
    return x


async def idle():
    await asyncio.sleep(3600)


async def main():
    idles = [asyncio.ensure_future(idle()) for _ in range(200)]
    for n, task in enumerate(idles):
        if hasattr(task, "set_name"):
            task.set_name("idle-%d" % n)
    made = 0
    seconds = float(os.environ.get("WORKLOAD_SECONDS", "1.5"))
    end = time.monotonic() + seconds
    half = time.monotonic() + seconds / 2
    while time.monotonic() < end:
        batch = [asyncio.ensure_future(short(made + k)) for k in range(50)]
        for k, task in enumerate(batch):
            if hasattr(task, "set_name"):
                task.set_name("churn-%d" % (made + k))
        made += len(batch)
        await asyncio.gather(*batch)
        if idles and time.monotonic() > half:
            for task in idles:
                task.cancel()
            await asyncio.gather(*idles, return_exceptions=True)
            idles = []
    print(made)


asyncio.run(main())
