"""asyncio tasks for the HTML page's task lanes (test_html_tasks.py).

The main task starts `cruncher`, which burns CPU in small steps (yielding to the loop
between them), `waiter`, suspended on an Event the whole time, and a task named
`<b>x</b>` (markup as a name) that alternates a step of CPU with a short sleep; then it
awaits them while the cruncher runs, for about WORKLOAD_SECONDS of wall time (1.0), sets
the event and ends.  No name ends in a number, so `pyprof report --tasks` folds none of
them.  Prints nothing.
"""

import asyncio
import os
import time

time.sleep(0.3)   # the layout is read before the tasks start (3.14+: at the import)

END = time.monotonic() + 0.3 + float(os.environ.get("WORKLOAD_SECONDS", "1.0"))


def burn(sec):
    end = time.thread_time() + sec
    while time.thread_time() < end:
        pass


async def crunch_step():
    burn(0.004)


async def cruncher():
    while time.monotonic() < END:
        await crunch_step()
        await asyncio.sleep(0)


async def wait_inner(event):
    await event.wait()


async def waiter(event):
    await wait_inner(event)


async def marked():
    while time.monotonic() < END:
        burn(0.001)
        await asyncio.sleep(0.01)


async def main():
    event = asyncio.Event()
    busy = asyncio.create_task(cruncher(), name="cruncher")
    idle = asyncio.create_task(waiter(event), name="waiter")
    odd = asyncio.create_task(marked(), name="<b>x</b>")
    await busy
    await odd
    event.set()
    await idle


asyncio.run(main())
