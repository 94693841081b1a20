"""asyncio tasks that wait, for the wall-mode samples of suspended tasks.

The main task starts four `sleeper-N` tasks (each awaits asyncio.sleep through two
coroutines of its own), a `locker` waiting for a Lock the main task holds, a `reader`
waiting on an empty Queue, WORKLOAD_MANY more idle `many-N` tasks and three `done-N`
tasks that finish at once (kept referenced: finished, never waiting), then awaits them
all and a ticker through one gather.  The ticker task wakes every 20 ms, burns a little
CPU and sleeps again, for about 1.2 s of wall time (WORKLOAD_SECONDS); then it releases
the lock, fills the queue and cancels the sleepers.  Every waiting task stays suspended
at the same await the whole time.  WORKLOAD_UVLOOP set: the loop is uvloop's.  Prints
nothing.
"""

import asyncio
import os
import time

time.sleep(0.3)   # the layout is read before the tasks start (3.14+: at the import)


async def sleeper_inner():
    await asyncio.sleep(3600)   # SLEEP-AWAIT


async def sleeper_outer():
    await sleeper_inner()


async def locker_inner(lock):
    async with lock:   # LOCK-AWAIT
        pass


async def reader_inner(queue):
    return await queue.get()   # QUEUE-AWAIT


def burn(sec):
    end = time.thread_time() + sec
    while time.thread_time() < end:
        pass


def name(task, text):
    """Names the task (3.8+; 3.7's tasks have no names)."""
    if hasattr(task, "set_name"):
        task.set_name(text)
    return task


async def ticker(lock, queue, sleepers):
    end = time.monotonic() + float(os.environ.get("WORKLOAD_SECONDS", "1.2"))
    while time.monotonic() < end:
        burn(0.002)
        await asyncio.sleep(0.02)
    lock.release()
    queue.put_nowait(1)
    for task in sleepers:
        task.cancel()


async def main():
    lock = asyncio.Lock()
    await lock.acquire()
    queue = asyncio.Queue()
    sleepers = [asyncio.ensure_future(sleeper_outer()) for _ in range(4)]
    for n, task in enumerate(sleepers, 1):
        name(task, "sleeper-%d" % n)
    locker = name(asyncio.ensure_future(locker_inner(lock)), "locker")
    reader = name(asyncio.ensure_future(reader_inner(queue)), "reader")
    # WORKLOAD_MANY more idle tasks, `many-N`: more than the library samples in a pass.
    many = [asyncio.ensure_future(sleeper_outer())
            for _ in range(int(os.environ.get("WORKLOAD_MANY", "0")))]
    for n, task in enumerate(many, 1):
        name(task, "many-%d" % n)
    sleepers += many
    done = [asyncio.ensure_future(asyncio.sleep(0)) for _ in range(3)]
    for n, task in enumerate(done, 1):
        name(task, "done-%d" % n)
    await asyncio.gather(*sleepers, locker, reader, ticker(lock, queue, sleepers),
                         return_exceptions=True)
    assert all(task.done() for task in done)


if os.environ.get("WORKLOAD_UVLOOP"):   # uvloop's loop runs the same asyncio.Tasks
    import uvloop
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
asyncio.run(main())
