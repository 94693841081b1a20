# Secure-execution probe (Python 2.7 and 3.x): prints whether the kernel started this
# process in secure-execution mode (AT_SECURE in the auxiliary vector, as for a set-uid
# or set-gid program) and whether libpyprof is mapped into it, then burns $BURN_SECONDS
# (default 0.3) of CPU in probe_burn().
import os
import struct
import sys
import time

try:
    cpu_clock = time.process_time
except AttributeError:
    cpu_clock = time.clock

AT_SECURE = 23


def auxv():
    with open("/proc/self/auxv", "rb") as f:
        data = f.read()
    size = struct.calcsize("LL")
    out = {}
    for i in range(0, len(data) - size + 1, size):
        k, v = struct.unpack("LL", data[i:i + size])
        out[k] = v
    return out


def probe_burn(seconds):
    t0 = cpu_clock()
    s = 0
    while cpu_clock() - t0 < seconds:
        for i in range(2000):
            s += i & 3
    return s


with open("/proc/self/maps") as f:
    mapped = "libpyprof" in f.read()
print("secure_probe: AT_SECURE=%d libpyprof mapped=%s" % (auxv().get(AT_SECURE, -1), mapped))
sys.stdout.flush()
probe_burn(float(os.environ.get("BURN_SECONDS", "0.3")))
print("secure_probe: done")
