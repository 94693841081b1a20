# -*- coding: utf-8 -*-
# Thread names workload (Python 2.7 and 3.x): threads whose Python names the profile must
# show, each busy on the CPU long enough to be sampled:
#   plain    threading.Thread(name="plain")
#   custom   a threading.Thread subclass that names itself "custom-worker" and carries
#            attributes of its own
#   renamed  starts as "before", renames itself to "renamed" (threading.current_thread()
#            .name = ...) and keeps working for longer than the library's name refresh
#   dict     its instance __dict__ made an ordinary dict (a non-str key), which moves the
#            attributes out of the shared-key/inline storage on every version
#   unicode  a name with 2-, 3- and 4-byte UTF-8 characters
#   long     a name of 60 euro signs (180 bytes of UTF-8), longer than a name is kept
#   main     the main thread, renamed "boss"
# Each thread appends "label tid" (its OS thread id) to $THREAD_TIDS/<pid> when set, so
# the test finds the threads by thread id; stdout is one line.
import ctypes
import os
import threading
import time

SPIN_S = float(os.environ.get("NAMES_SPIN_S", "0.5"))
AFTER_RENAME_S = float(os.environ.get("NAMES_AFTER_RENAME_S", "1.6"))
MIN_CPU_S = 0.02   # ten periods at the test's 2 ms

UNICODE_NAME = u"\u00fcn\u00ef-\u20ac-\U0001d518"
LONG_NAME = u"\u20ac" * 60
try:
    unicode
    # Python 2: thread names are str (bytes); give them the UTF-8 bytes.
    UNICODE_NAME = UNICODE_NAME.encode("utf-8")
    LONG_NAME = LONG_NAME.encode("utf-8")
except NameError:
    pass


def note(label):
    out = os.environ.get("THREAD_TIDS")
    if out:
        tid = ctypes.CDLL(None).syscall(186)  # gettid on x86_64, for 2.7 and 3.6 too
        with open(os.path.join(out, str(os.getpid())), "a") as f:
            f.write("%s %d\n" % (label, tid))


def thread_cpu():
    """The CPU time this thread has used, in seconds (its schedstat)."""
    with open("/proc/thread-self/schedstat") as f:
        return int(f.read().split()[0]) / 1e9


def spin(seconds):
    """Busy for `seconds` of wall time, and then until this thread has used MIN_CPU_S of
    CPU: seven threads share the GIL, and a busy machine may give one of them little of
    those seconds, but it must be sampled."""
    end = time.time() + seconds
    s = 0
    while time.time() < end or thread_cpu() < MIN_CPU_S:
        for i in range(5000):
            s += i & 7
    return s


def work(label):
    note(label)
    spin(SPIN_S)


def renamer():
    note("renamed")
    spin(SPIN_S)
    threading.current_thread().name = "renamed"
    spin(AFTER_RENAME_S)


def with_dict():
    note("dict")
    threading.current_thread().__dict__[1] = "not a str key"
    spin(SPIN_S)


class Custom(threading.Thread):
    def __init__(self):
        super(Custom, self).__init__(name="custom-worker")
        self.extra = 1
        self.more = "x"

    def run(self):
        work("custom")


threading.current_thread().name = "boss"
note("main")
threads = [
    threading.Thread(target=work, args=("plain",), name="plain"),
    Custom(),
    threading.Thread(target=renamer, name="before"),
    threading.Thread(target=with_dict, name="dict"),
    threading.Thread(target=work, args=("unicode",), name=UNICODE_NAME),
    threading.Thread(target=work, args=("long",), name=LONG_NAME),
]
for t in threads:
    t.start()
spin(SPIN_S)
for t in threads:
    t.join()
print("names workload: done")
