# Threads of three shapes (Python 2.7 and 3.x) for test_kernel_cpu.py, one shape after
# another; every thread measures the CPU its body used with its own CPU clock
# (CLOCK_THREAD_CPUTIME_ID: the kernel's account of the thread, without the time a
# hypervisor stole), which the body's samples must follow whatever the timer counted.
#
#   short   $SHORT_THREADS threads, one after another, each burning $SHORT_CPU seconds
#           in short_burn()
#   sleepy  one thread: $SLEEPY_ROUNDS rounds of burning $SLEEPY_CPU in sleepy_burn()
#           then sleeping $SLEEPY_SLEEP (a thread that wakes, works a little and sleeps
#           again: each wake-up is a guest exit on a virtual machine)
#   busy    one thread burning $BUSY_CPU in busy_burn()
#
# The measurements go as JSON to $SHORT_RESULT: "cpu", each burn function's CPU (its
# thread's clock around the burning, summed over threads and calls); "calls".  stdout
# only says what was done.
import os
import threading
import time

from short_common import Spent, spin, thread_cpu, write_result

SHORT_THREADS = int(os.environ.get("SHORT_THREADS", "1200"))
SHORT_CPU = float(os.environ.get("SHORT_CPU", "0.0005"))
SLEEPY_ROUNDS = int(os.environ.get("SLEEPY_ROUNDS", "600"))
SLEEPY_CPU = float(os.environ.get("SLEEPY_CPU", "0.001"))
SLEEPY_SLEEP = float(os.environ.get("SLEEPY_SLEEP", "0.001"))
BUSY_CPU = float(os.environ.get("BUSY_CPU", "0.6"))

spent = Spent()


# The burn functions: each one's samples (spin() inside it included) against the CPU
# spin() measured inside it.
def short_burn():
    spent.add("short_burn", spin(SHORT_CPU))


def sleepy_burn():
    spent.add("sleepy_burn", spin(SLEEPY_CPU))


def busy_burn():
    spent.add("busy_burn", spin(BUSY_CPU))


def sleepy_body():
    for _ in range(SLEEPY_ROUNDS):
        sleepy_burn()
        time.sleep(SLEEPY_SLEEP)


def run(target):
    t = threading.Thread(target=target)
    t.start()
    t.join()


def main():
    thread_cpu()  # the clock chosen and warmed up before any measuring
    for _ in range(SHORT_THREADS):
        run(short_burn)
    run(sleepy_body)
    run(busy_burn)
    write_result({"cpu": spent.cpu, "calls": spent.calls})
    print("kernel_cpu: %d short threads, a sleepy one and a busy one" % SHORT_THREADS)


main()
