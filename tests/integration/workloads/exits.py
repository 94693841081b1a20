# Exit-path workload (Python 2.7 and 3.x).  Burns CPU for a moment in burn_before_exit,
# then leaves the way $EXIT_MODE says:
#
#   normal     falls off the end of the script; an atexit handler (burn_in_atexit)
#              burns CPU while the interpreter finalizes
#   sys_exit   sys.exit(3)
#   exception  an uncaught exception: traceback on stderr, exit status 1
#   os_exit    os._exit(0): no atexit handlers, no destructors
#   c_exit     exit(5) of the C library, called through ctypes
import atexit
import os
import sys
import time

cpu_clock = getattr(time, "process_time", None) or time.clock
BURN = float(os.environ.get("BURN_SECONDS", "0.3"))


def spin(seconds):
    """Burns `seconds` of CPU in this very frame."""
    t0 = cpu_clock()
    s = 0
    while cpu_clock() - t0 < seconds:
        for i in range(2000):
            s += i & 3
    return s


def burn_before_exit():
    return spin(BURN)


def burn_in_atexit():
    spin(BURN)
    sys.stdout.write("atexit handler done\n")


mode = os.environ.get("EXIT_MODE", "normal")
print("exits workload: mode %s" % mode)
burn_before_exit()
sys.stdout.flush()

if mode == "normal":
    atexit.register(burn_in_atexit)
elif mode == "sys_exit":
    sys.exit(3)
elif mode == "exception":
    raise RuntimeError("deliberate uncaught exception")
elif mode == "os_exit":
    os._exit(0)
elif mode == "c_exit":
    import ctypes
    ctypes.CDLL(None).exit(5)
else:
    sys.stderr.write("unknown EXIT_MODE %r\n" % mode)
    sys.exit(2)
