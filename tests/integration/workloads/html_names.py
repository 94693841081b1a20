# For the HTML viewer's tests (Python 3.8+): names that are markup.  The main thread runs
# outer() -> middle() -> a function whose name (and qualified name) is
# <img src=x onerror=alert(1)> and whose file name closes the page's script element;
# a thread named <b>worker</b>&amp; spins in spin().  The process forks once first, so
# the profile has two processes; the child does the same work for half as long.
# $BURN_SECONDS (default 1.0) sets the parent's burn.
import os
import sys
import threading
import time

EVIL_NAME = "<img src=x onerror=alert(1)>"
EVIL_FILE = "</script><script>alert(2)</script><!--evil.py"
THREAD_NAME = "<b>worker</b>&amp;"


def evil(seconds):
    t0 = time.process_time()
    s = 0
    while time.process_time() - t0 < seconds:
        for i in range(2000):
            s += i & 3
    return s


_names = {"co_name": EVIL_NAME, "co_filename": EVIL_FILE}
if sys.version_info >= (3, 11):
    _names["co_qualname"] = EVIL_NAME
evil.__code__ = evil.__code__.replace(**_names)


def middle(seconds):
    return evil(seconds)


def outer(seconds):
    return middle(seconds)


def spin(seconds):
    # The thread's own CPU, not wall time: a busy machine makes it take longer, not
    # leaves it fewer samples.
    t0 = time.thread_time()
    x = 0
    while time.thread_time() - t0 < seconds:
        x += 1
    return x


def main(seconds):
    t = threading.Thread(target=spin, args=(seconds,), name=THREAD_NAME)
    t.start()
    outer(seconds)
    t.join()


burn = float(os.environ.get("BURN_SECONDS", "1.0"))
pid = os.fork()
if pid == 0:
    main(burn / 2)
    os._exit(0)
main(burn)
os.waitpid(pid, 0)
print("html_names: done")
