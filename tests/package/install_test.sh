#!/bin/bash
# install_test.sh: the Debian package installed in a clean Debian root, used there through
# its installed paths, and removed.
#
#   bash tests/package/install_test.sh [DEB [DIR]]     as root; after `make deb`
#
# DEB defaults to build/deb/pyprof_VERSION_ARCH.deb, DIR to build/package-test.  `make
# test` runs it (`make test-package`: `make deb`, then this).
#
#   DIR/base   a minimal Debian root of the host's own release (debootstrap, variant
#              minbase, with python3; the package is built against the host's libraries),
#              made once: about a minute and 260 MB (DIR/base.stamp says it is whole;
#              remove both to make it again).
#   DIR/root   a copy of base made anew by each run (cp -a), so every run installs into a
#              root that has never seen the package or its dependencies; left for a look.
#
# Each step runs chrooted into DIR/root in a private mount namespace with its own /proc
# and /dev/pts (nothing stays mounted).  The steps, each printed before it runs:
#   1. dpkg -i DEB: fails on the dependencies a minimal root lacks (liblz4-1, libdw1...);
#      apt-get -f install then fetches them from the mirror and configures the package.
#   2. a busy Python program run by the root's python3 with LD_PRELOAD set to the library
#      path dpkg lists for the package, inside a span of the installed Python package
#      `pyprof` (so its OSProfiler .pth hook is loaded from dist-packages too); then
#      `pyprof report` and `pyprof report --span busy` on its log, each of which must
#      name the busy function.
#   2b. `pyprof systemd enable demo`: the drop-in preloads the installed library; its
#      environment (%n as systemd replaces it) profiles a program that toggles sampling
#      with the drop-in's signal, into the directory it names; `pyprof run` finds the
#      installed library; `pyprof systemd disable demo` removes the drop-in.
#   3. dpkg -r pyprof: afterwards no file or directory the package shipped is left, no
#      path in the root has pyprof in its name except the profile logs, and dpkg knows
#      the package as not installed.
# Exit status 0 when every step passed; otherwise 1 and the step's message.
#
# Environment: PKGTEST_SUITE (default: the host's VERSION_CODENAME), PKGTEST_MIRROR
# (default: the Debian mirror of this machine's apt sources, as tests/debian-mirror.sh
# finds it, else http://deb.debian.org/debian).
set -eu

cd "$(dirname "$0")/../.."
PROG=install_test
. tests/package/common.sh
. tests/debian-mirror.sh
. /etc/os-release
SUITE=${PKGTEST_SUITE:-$VERSION_CODENAME}
MIRROR=${PKGTEST_MIRROR:-$(debian_mirror)}
BASE=$DIR/base
ROOT=$DIR/root
LOGS=/var/log/pyprof-test          # inside the root

[ -f "$DEB" ] || fail "no package $DEB (make deb first)"
echo "package: $DEB"
dpkg-deb -f "$DEB" Package Version Architecture Depends Recommends

if [ ! -f "$BASE.stamp" ]; then
    step "debootstrap --variant=minbase --include=python3 $SUITE $BASE $MIRROR (once)"
    rm -rf --one-file-system "$BASE"
    mkdir -p "$DIR"
    debootstrap --variant=minbase --include=python3 "$SUITE" "$BASE" "$MIRROR" >"$DIR/debootstrap.log" 2>&1 ||
        fail "debootstrap failed; see $DIR/debootstrap.log"
    echo "$SUITE $MIRROR" >"$BASE.stamp"
fi

step "a fresh root: cp -a $BASE $ROOT"
rm -rf --one-file-system "$ROOT"
cp -a "$BASE" "$ROOT"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
cp "$DEB" "$ROOT/tmp/"
deb_in_root=/tmp/$(basename "$DEB")
in_root sh -c '. /etc/os-release; echo "$PRETTY_NAME"; python3 --version'
in_root dpkg -s pyprof >/dev/null 2>&1 && fail "the fresh root already has pyprof"

step "1. dpkg -i $deb_in_root (the root lacks the dependencies), then apt-get -f install"
if in_root dpkg -i "$deb_in_root"; then
    echo "(dpkg -i found every dependency)"
else
    echo "(dpkg -i failed, as expected in a minimal root)"
fi
# The mirror may serve a frozen snapshot whose Release file is past its Valid-Until date;
# debootstrap checked its packages against Debian's keys all the same.
in_root apt-get -o Acquire::Check-Valid-Until=false update -qq
in_root apt-get -o Acquire::Check-Valid-Until=false -f install -y -q --no-install-recommends 2>&1 |
    grep -E '^(Setting up|Unpacking|E:)' || true
rm "$ROOT$deb_in_root"
status=$(in_root dpkg-query -W -f='${Status} ${Version}' pyprof)
echo "pyprof: $status"
[ "$status" = "install ok installed $version" ] || fail "pyprof is not installed: $status"

step "2. profile a Python program through the installed paths"
lib=$(in_root dpkg -L pyprof | grep '/libpyprof\.so$')
echo "library (dpkg -L): $lib"
in_root sh -c 'command -v pyprof; ls /usr/share/man/man1/pyprof.1.gz'
mkdir -p "$ROOT$LOGS"
cat >"$ROOT/tmp/busy.py" <<'EOF'
import time

import pyprof


def spin(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


print("pyprof module:", pyprof.__file__)
end = time.time() + 2
with pyprof.span("busy"):
    while time.time() < end:
        spin(100000)
EOF
in_root env LD_PRELOAD="$lib" PYPROF_OUTPUT="$LOGS/" python3 /tmp/busy.py 2>"$DIR/busy.stderr" ||
    fail "the profiled program failed: $(cat "$DIR/busy.stderr")"
cat "$DIR/busy.stderr"
grep -q 'Error processing' "$DIR/busy.stderr" && fail "python3 could not process the .pth hook"
ls -l "$ROOT$LOGS"
echo "\$ pyprof report $LOGS"
in_root pyprof report "$LOGS" >"$DIR/report.txt"
head -25 "$DIR/report.txt"
grep -q 'spin' "$DIR/report.txt" || fail "pyprof report does not name spin"
echo "\$ pyprof report --span busy $LOGS"
in_root pyprof report --span busy "$LOGS" >"$DIR/report-span.txt"
head -12 "$DIR/report-span.txt"
grep -q 'spin' "$DIR/report-span.txt" || fail "pyprof report --span busy does not name spin"

step "2b. pyprof systemd enable, the drop-in's environment, pyprof run, disable"
in_root pyprof systemd enable demo || fail "pyprof systemd enable failed"
dropin=/etc/systemd/system/demo.service.d/pyprof.conf
cat "$ROOT$dropin"
grep -qx "Environment=LD_PRELOAD=$lib" "$ROOT$dropin" ||
    fail "the drop-in does not preload the installed library $lib"
# The drop-in's environment as systemd gives it (%n: the unit's name), on a program that
# toggles its own sampling on with the drop-in's signal, runs, and toggles it off.
mkdir -p "$ROOT/var/log/pyprof/demo.service"
cat >"$ROOT/tmp/toggled.py" <<'EOF'
import os
import signal
import time

os.kill(os.getpid(), signal.SIGUSR2)
end = time.time() + 1
while time.time() < end:
    sum(i * i for i in range(10000))
os.kill(os.getpid(), signal.SIGUSR2)
time.sleep(0.5)
EOF
denv=$(sed -n 's/^Environment=//p' "$ROOT$dropin" | sed 's/%n/demo.service/g')
# shellcheck disable=SC2086  # one word per assignment: the drop-in's values have no spaces
in_root env $denv python3 /tmp/toggled.py || fail "the program under the drop-in's environment failed"
ls -l "$ROOT/var/log/pyprof/demo.service"
in_root pyprof report /var/log/pyprof/demo.service >"$DIR/report-dropin.txt" ||
    fail "pyprof report of the drop-in's logs failed"
head -8 "$DIR/report-dropin.txt"
grep -q 'genexpr' "$DIR/report-dropin.txt" || fail "the drop-in's log does not name the loop"
echo "\$ pyprof run -- python3 /tmp/busy.py"
in_root sh -c 'cd /tmp && pyprof run -- python3 /tmp/busy.py' >"$DIR/run.txt" 2>&1 ||
    fail "pyprof run failed: $(cat "$DIR/run.txt")"
grep -q 'spin' "$DIR/run.txt" || fail "pyprof run's summary does not name spin"
rm -rf "$ROOT"/tmp/pyprof.* # its logs (under TMPDIR), not the package's
in_root pyprof systemd disable demo || fail "pyprof systemd disable failed"
[ ! -e "$ROOT$dropin" ] || fail "the drop-in is still there"
rm -rf "$ROOT/var/log/pyprof"

step "3. dpkg -r pyprof: only the logs remain"
# Every path the package shipped ("./usr/bin/pyprof" -> "/usr/bin/pyprof").
dpkg-deb --fsys-tarfile "$DEB" | tar -t | sed 's,^\.,,; s,/$,,' | grep -v '^$' >"$DIR/shipped.txt"
in_root dpkg -r pyprof
status=$(in_root dpkg-query -W -f='${Status}' pyprof 2>/dev/null || echo "unknown to dpkg")
echo "pyprof: $status"
case $status in *not-installed* | "unknown to dpkg") ;; *) fail "dpkg still knows pyprof: $status" ;; esac
left=0
while read -r p; do
    [ -e "$ROOT$p" ] || [ -L "$ROOT$p" ] || continue
    # Directories the package shares with the system stay (/usr, /usr/lib/python3/...).
    if [ -d "$ROOT$p" ] && ! [ -L "$ROOT$p" ]; then
        case $p in *pyprof*) ;; *) continue ;; esac
    fi
    echo "left behind: $p"
    left=1
done <"$DIR/shipped.txt"
echo "shipped paths checked: $(wc -l <"$DIR/shipped.txt")"
echo "paths in the root named *pyprof* (the logs alone should be left):"
(cd "$ROOT" && find . -xdev -path ./proc -prune -o -iname '*pyprof*' -print | sed 's,^\.,,' | sort) |
    tee "$DIR/pyprof-paths.txt"
if grep -v "^$LOGS" "$DIR/pyprof-paths.txt"; then
    left=1
fi
[ "$left" = 0 ] || fail "the package left files behind"
[ -n "$(ls "$ROOT$LOGS")" ] || fail "the logs are gone too"
echo
echo "install_test: OK ($DEB installed, profiled with, removed in $ROOT)"
