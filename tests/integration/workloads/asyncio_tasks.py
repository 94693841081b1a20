"""asyncio tasks with their own accounting, for the task frames of the samples.

The main task starts `boss`, which awaits a gather of three `orders-N` tasks, an
`await` of `audit`, a TaskGroup child `report` (3.11+) and a `shield`ed `shielded`
(3.14+: shield keeps an awaiter link only there); `boss` and a task nobody names (its
default name) burn CPU too.  (3.7: tasks have no names; every one is "Task".)  Every task burns in small steps of CPU time
(time.thread_time), each in a chain of coroutines named for it, yielding to the loop
between steps, and adds what it burnt to its own count (CPU and wall-clock time: on a
busy machine a step may take longer than the CPU it burns).  At exit the JSON file named by
WORKLOAD_RESULT holds each task's CPU seconds, the main task's name and the expected
awaiter chain of each task, innermost first.  argv[1] == "late": asyncio is imported
only after 0.3 s of CPU (a module loaded long after the start).  WORKLOAD_UVLOOP set:
the loop is uvloop's.
"""

import json
import os
import sys
import time

STEP = 0.004
burnt = {}
walled = {}   # the wall-clock time of the same steps


def spin(sec):
    end = time.thread_time() + sec
    x = 0
    while time.thread_time() < end:
        x += 1
    return x


if len(sys.argv) > 1 and sys.argv[1] == "late":
    spin(0.3)

import asyncio  # noqa: E402

# Before 3.14 the library reads the asyncio layout from the _asyncio module once it is
# imported, at its next round (within 100 ms): the tasks start after that.
time.sleep(0.3)


def named(task, name):
    """The task, named `name` where tasks have names (3.8+)."""
    if hasattr(task, "set_name"):
        task.set_name(name)
    return task


def account(name, sec):
    w0, t0 = time.perf_counter(), time.thread_time()
    spin(sec)
    burnt[name] = burnt.get(name, 0.0) + time.thread_time() - t0
    walled[name] = walled.get(name, 0.0) + time.perf_counter() - w0


async def orders_query(name, total):
    done = 0.0
    while done < total:
        account(name, STEP)
        done += STEP
        await asyncio.sleep(0)


async def orders_handle(name, total):
    await orders_query(name, total)


async def audit_work(total):
    done = 0.0
    while done < total:
        account("audit", STEP)
        done += STEP
        await asyncio.sleep(0)


async def report_work(total):
    await audit_work_as("report", total)


async def audit_work_as(name, total):
    done = 0.0
    while done < total:
        account(name, STEP)
        done += STEP
        await asyncio.sleep(0)


async def unnamed_work(total):
    done = 0.0
    while done < total:
        account("unnamed", STEP)
        done += STEP
        await asyncio.sleep(0)


async def boss_gather():
    await asyncio.gather(*[named(asyncio.ensure_future(orders_handle("orders-%d" % n, 0.08 * n)),
                                 "orders-%d" % n) for n in (1, 2, 3)])


async def boss_main():
    account("boss", 0.06)
    await boss_gather()
    await named(asyncio.ensure_future(audit_work(0.12)), "audit")
    if hasattr(asyncio, "TaskGroup"):
        async with asyncio.TaskGroup() as tg:
            tg.create_task(report_work(0.12), name="report")
    if sys.version_info >= (3, 14):
        await asyncio.shield(named(asyncio.ensure_future(audit_work_as("shielded", 0.08)),
                                   "shielded"))


async def main():
    me = asyncio.current_task()
    me = me.get_name() if hasattr(me, "get_name") else "main"
    unnamed = asyncio.ensure_future(unnamed_work(0.08))
    await named(asyncio.ensure_future(boss_main()), "boss")
    await unnamed
    return me


if os.environ.get("WORKLOAD_UVLOOP"):   # uvloop's loop runs the same asyncio.Tasks
    import uvloop
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
me = asyncio.run(main())
chains = {"orders-%d" % n: ["orders-%d" % n, "boss", me] for n in (1, 2, 3)}
chains.update(boss=["boss", me], audit=["audit", "boss", me], unnamed=["unnamed"])
if sys.version_info >= (3, 11):
    chains["report"] = ["report", "boss", me]
if sys.version_info >= (3, 14):
    chains["shielded"] = ["shielded", "boss", me]
with open(os.environ["WORKLOAD_RESULT"], "w") as f:
    json.dump({"cpu": burnt, "wall": walled, "main": me, "chains": chains}, f)
