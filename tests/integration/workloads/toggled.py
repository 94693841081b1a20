"""A daemon-like loop for the toggle test: creates the file argv[3] once running, then
burns CPU in phase_one() until the file argv[1] exists, then in phase_two() until argv[2]
exists, then exits."""
import os
import sys
import time


def burn_until(path):
    while not os.path.exists(path):
        end = time.time() + 0.01
        while time.time() < end:
            pass


def phase_one():
    burn_until(sys.argv[1])


def phase_two():
    burn_until(sys.argv[2])


open(sys.argv[3], "w").close()
phase_one()
phase_two()
print("done")
