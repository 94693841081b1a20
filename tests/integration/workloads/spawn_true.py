# Subprocess workload (Python 2.7 and 3.x): spawns /bin/true 20 times with subprocess
# (fork+exec on older versions, vfork or posix_spawn on newer ones), then burns CPU.
# Only the parent may leave a log: a child that execs before its Python ran again has
# nothing to report.
import subprocess

for i in range(20):
    subprocess.check_call(["/bin/true"])
s = 0
for i in range(2000000):
    s += i
print("spawn workload: done")
