# Three kinds of thread for wall mode (Python 2.7 and 3.x), each running from the start
# of the program until it ends: `python_spin` runs Python code (it holds the GIL most of
# the time), `c_hash` hashes 1 MB buffers (hashlib releases the GIL while it hashes, so
# it mostly runs C code without it; on 2.7 it copies them with ctypes, for the same
# reason), `sleeper` sleeps.  The main thread sleeps $SECONDS
# (default 2) in join-free waits, then stops the others and joins them.
import ctypes
import hashlib
import os
import sys
import threading
import time

SECONDS = float(os.environ.get("SECONDS", "2"))
stop = threading.Event()
data = b"x" * (1 << 20)


def python_spin():
    i = 0
    while not stop.is_set():
        for _ in range(1000):
            i += 1


def c_hash():
    if sys.version_info[0] < 3:
        # 2.7's hashlib is its builtin sha256 where Python was built without OpenSSL (as
        # pyenv's is on Debian 12), which keeps the GIL while it hashes; a ctypes call
        # releases it.
        src = ctypes.create_string_buffer(data)
        dst = ctypes.create_string_buffer(len(data))
        while not stop.is_set():
            ctypes.memmove(dst, src, len(data))
        return
    while not stop.is_set():
        hashlib.sha256(data).digest()


def sleeper():
    while not stop.is_set():
        time.sleep(0.05)


threads = [threading.Thread(target=f, name=f.__name__) for f in (python_spin, c_hash, sleeper)]
for th in threads:
    th.start()
time.sleep(SECONDS)
stop.set()
for th in threads:
    th.join()
print("done")
