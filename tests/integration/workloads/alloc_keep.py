"""A script that keeps 8 MiB in a module-level list until it exits, and makes and
drops 8 MiB before: 128 bytearrays of 64 KiB each time.  What is in use when it
finishes is the kept 8 MiB (plus the interpreter's own), which the interpreter's
teardown then frees with the module.  Prints the bytes kept."""


def transient():
    junk = [bytearray(64 * 1024) for _ in range(128)]
    return len(junk)


def keep():
    return [bytearray(64 * 1024) for _ in range(128)]


transient()
KEEP = keep()
print(sum(len(b) for b in KEEP))
