# Exec workload (Python 2.7 and 3.x): burns CPU, then replaces itself with /bin/echo.
# The log must end "exec", complete, with the burn's samples; echo's output is the
# program's output.
import os
import sys


def burn(n):
    s = 0
    for i in range(n):
        s += i
    return s


burn(int(os.environ.get("BURN", "8000000")))
sys.stdout.flush()
os.execv("/bin/echo", ["echo", "exec workload: echo ran"])
