"""Three functions that each burn a set amount of the thread's own CPU (so the amount
does not depend on how fast the machine runs the loop): steady_a STEADY_A seconds,
steady_b STEADY_B, grow GROW.  Prints "done"."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from short_common import spin  # noqa: E402


def steady_a():
    spin(float(os.environ.get("STEADY_A", "0.5")))


def steady_b():
    spin(float(os.environ.get("STEADY_B", "0.25")))


def grow():
    spin(float(os.environ.get("GROW", "0.02")))


def main():
    # In rounds, so that each function's samples come from all through the run.
    for _ in range(10):
        steady_a()
        steady_b()
        grow()


os.environ["STEADY_A"] = str(float(os.environ.get("STEADY_A", "0.5")) / 10)
os.environ["STEADY_B"] = str(float(os.environ.get("STEADY_B", "0.25")) / 10)
os.environ["GROW"] = str(float(os.environ.get("GROW", "0.02")) / 10)
main()
print("done")
