"""A forking parent with three worker processes.

usage: fork.py ROUNDS
The parent forks three workers; each does ROUNDS // 3 rounds of the CPU-bound mix
(cpu.py) and leaves with os._exit, as pool workers do.  The parent waits for all three.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu  # noqa: E402


def main(rounds):
    pids = []
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                cpu.main(rounds // 3)
            except BaseException:
                code = 1
            os._exit(code)
        pids.append(pid)
    bad = 0
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        bad += status != 0
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
