# A page of the tool from its template: every line that is exactly
#     /*PYPROF_INCLUDE name*/
# becomes the lines of the file `name` in the directory `dir` (awk -v dir=...), the parts
# the pages share (docs/HTML.md, "How it is made").  The rest is copied byte for byte.
# It fails, and says why, on a part it cannot read or that is empty, a marker anywhere
# else (in a part, or not alone on its line), and a page without exactly one
# /*PYPROF_DATA*/ marker, the one the tool replaces by the data.
#
#     awk -v dir=utils/html -f utils/html/include.awk utils/html/viewer.html > page.html

function fail(msg) {
    printf "include.awk: %s:%d: %s\n", FILENAME, FNR, msg > "/dev/stderr"
    failed = 1
    exit 1
}

/^\/\*PYPROF_INCLUDE [A-Za-z0-9_.-]+\*\/$/ {
    name = substr($0, 18, length($0) - 19)
    part = dir "/" name
    n = 0
    while ((r = (getline line < part)) > 0) {
        if (index(line, "PYPROF_INCLUDE"))
            fail(part " has an include marker: parts do not nest")
        if (index(line, "/*PYPROF_DATA*/"))
            fail(part " has the data marker")
        print line
        n++
    }
    if (r < 0)
        fail("cannot read " part)
    if (n == 0)
        fail(part " is empty")
    close(part)
    next
}

index($0, "PYPROF_INCLUDE") {
    fail("an include marker must be a line of its own: /*PYPROF_INCLUDE name*/")
}

{
    rest = $0
    while ((i = index(rest, "/*PYPROF_DATA*/")) > 0) {
        data++
        rest = substr(rest, i + 15)
    }
    print
}

END {
    if (!failed && data != 1) {
        printf "include.awk: %s: %d /*PYPROF_DATA*/ markers, not one\n", FILENAME,
            data > "/dev/stderr"
        exit 1
    }
}
