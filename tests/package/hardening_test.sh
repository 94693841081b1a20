#!/bin/bash
# hardening_test.sh: the installed package under a real systemd, in units sandboxed the
# ways services usually are, each profiled through the drop-in `pyprof systemd enable`
# writes.
#
#   bash tests/package/hardening_test.sh [DEB [DIR]]     as root; after install_test.sh
#
# DEB and DIR as for install_test.sh, whose DIR/base (a minimal Debian root) this starts
# from:
#   DIR/sdbase  DIR/base with systemd, systemd-sysv and dbus (apt-get), made once
#               (DIR/sdbase.stamp says it is whole)
#   DIR/sdroot  a copy of sdbase made anew by each run, the package installed there
#               (dpkg -i, apt-get -f install), left for a look
# One unit per case below (oneshot: hardening/work.py spends half a second of CPU in spin
# and says what each thread spent there), and two daemons for `pyprof ctl`, with and
# without PrivateNetwork=.  The root is booted with systemd-nspawn -b, letting
# perf_event_open through as a host does (nspawn refuses it by default); pp-report.service (hardening/report.sh) collects what each unit did
# into DIR/sdout and powers the container off; hardening/check.py checks it here.
# Exit status 0 when every case is as expected; otherwise 1.
set -eu

cd "$(dirname "$0")/../.."
PROG=hardening_test
. tests/package/common.sh
HERE=$(readlink -f tests/package/hardening)
SDBASE=$DIR/sdbase
ROOT=$DIR/sdroot
OUT=$DIR/sdout

# NAME|DIRECTIVES (\n between lines)|TIMER EXPECTED|THE LIBRARY'S STDERR LINE (- none)
# The directives are in the unit file, where `pyprof systemd enable` reads them, except
# for the cases named late-*: theirs come in a drop-in written after it (an administrator's
# hardening added later), so the drop-in does not allow perf_event_open for them.
CASES='plain||perf-task-clock|-
strict|ProtectSystem=strict|perf-task-clock|-
privtmp|PrivateTmp=yes|perf-task-clock|-
nnp|NoNewPrivileges=yes|perf-task-clock|-
mdwe|MemoryDenyWriteExecute=yes|perf-task-clock|-
privnet|PrivateNetwork=yes|perf-task-clock|-
dynuser|DynamicUser=yes|perf-task-clock|-
filter|SystemCallFilter=@system-service|perf-task-clock|-
late-filter|SystemCallFilter=@system-service|posix-cpu-timer|perf events not tried (a seccomp filter would kill
late-filtereperm|SystemCallFilter=@system-service\nSystemCallErrorNumber=EPERM|posix-cpu-timer|perf events refused (Operation not permitted)
denied|SystemCallFilter=~perf_event_open|posix-cpu-timer|perf events not tried (a seccomp filter would kill
hardened|DynamicUser=yes\nProtectSystem=strict\nProtectHome=yes\nPrivateTmp=yes\nPrivateDevices=yes\nPrivateNetwork=yes\nNoNewPrivileges=yes\nMemoryDenyWriteExecute=yes\nProtectKernelTunables=yes\nProtectKernelModules=yes\nProtectControlGroups=yes\nRestrictNamespaces=yes\nRestrictRealtime=yes\nLockPersonality=yes\nSystemCallArchitectures=native\nSystemCallFilter=@system-service|perf-task-clock|-'

[ -f "$DEB" ] || fail "no package $DEB (make deb first)"
[ -f "$DIR/base.stamp" ] || fail "no $DIR/base (tests/package/install_test.sh makes it)"
command -v systemd-nspawn >/dev/null || fail "no systemd-nspawn (apt-get install systemd-container)"

if [ ! -f "$SDBASE.stamp" ]; then
    step "$SDBASE: $DIR/base with systemd (once)"
    rm -rf --one-file-system "$SDBASE"
    cp -a "$DIR/base" "$SDBASE"
    cp /etc/resolv.conf "$SDBASE/etc/resolv.conf"
    # The mirror may serve a frozen snapshot whose Release file is past its Valid-Until
    # date; debootstrap checked its packages against Debian's keys all the same.
    ROOT=$SDBASE in_root sh -c 'apt-get -o Acquire::Check-Valid-Until=false update -qq &&
        apt-get -o Acquire::Check-Valid-Until=false install -y -q --no-install-recommends \
            systemd systemd-sysv dbus' \
        >"$DIR/sdbase.log" 2>&1 || fail "apt-get install systemd failed; see $DIR/sdbase.log"
    touch "$SDBASE.stamp"
fi

step "a fresh root with the package: $ROOT"
rm -rf --one-file-system "$ROOT" "$OUT"
cp -a "$SDBASE" "$ROOT"
mkdir -p "$OUT" "$ROOT/opt/pp/out"
cp "$DEB" "$ROOT/tmp/"
deb_in_root=/tmp/$(basename "$DEB")
if ! in_root dpkg -i "$deb_in_root" >"$DIR/sdroot-dpkg.log" 2>&1; then
    in_root apt-get -o Acquire::Check-Valid-Until=false -f install -y -q --no-install-recommends \
        >>"$DIR/sdroot-dpkg.log" 2>&1 ||
        fail "installing the package failed; see $DIR/sdroot-dpkg.log"
fi
rm "$ROOT$deb_in_root"
in_root dpkg-query -W -f='${Status} ${Version}\n' pyprof
in_root systemctl --version | head -1
cp "$HERE/work.py" "$HERE/report.sh" "$ROOT/opt/pp/"

step "the units, each with the drop-in of pyprof systemd enable"
units=/etc/systemd/system
wants=$units/multi-user.target.wants
mkdir -p "$ROOT$wants"
unit() { # NAME TYPE ARGS DIRECTIVES
    local here=$4 late=""
    case $1 in late-*) here="" late=$4 ;; esac
    printf '[Unit]\nDescription=pyprof hardening case %s\n[Service]\nType=%s\nExecStart=/usr/bin/python3 /opt/pp/work.py %s %s\n%b\n[Install]\nWantedBy=multi-user.target\n' \
        "$1" "$2" "$1" "$3" "$here" >"$ROOT$units/pp-$1.service"
    in_root pyprof systemd enable "pp-$1.service" >"$DIR/sdenable-$1.txt" ||
        fail "pyprof systemd enable pp-$1.service failed"
    [ -z "$late" ] || printf '[Service]\n%b\n' "$late" >"$ROOT$units/pp-$1.service.d/sandbox.conf"
    ln -s "$units/pp-$1.service" "$ROOT$wants/pp-$1.service"
    after="$after pp-$1.service"
}
after=""
while IFS='|' read -r name directives _ _; do
    unit "$name" oneshot "" "$directives"
done <<<"$CASES"
unit ctl-plain simple --daemon ""
unit ctl-privnet simple --daemon "PrivateNetwork=yes"
printf '[Unit]\nDescription=pyprof hardening report\nAfter=%s\n[Service]\nType=oneshot\nExecStart=/opt/pp/report.sh\nExecStartPost=/bin/systemctl poweroff --no-block\n[Install]\nWantedBy=multi-user.target\n' \
    "$after" >"$ROOT$units/pp-report.service"
ln -s "$units/pp-report.service" "$ROOT$wants/pp-report.service"
echo "$(ls "$ROOT$units" | grep -c '^pp-.*\.service$') units; pyprof systemd enable pp-hardened.service said:"
cat "$DIR/sdenable-hardened.txt"
echo "and wrote:"
cat "$ROOT$units/pp-hardened.service.d/pyprof.conf"

step "boot: systemd-nspawn -b (console log: $DIR/sdboot.log)"
timeout 300 systemd-nspawn -q -D "$ROOT" -b --register=no --keep-unit \
    --system-call-filter=perf_event_open --bind="$OUT:/opt/pp/out" >"$DIR/sdboot.log" 2>&1 ||
    echo "(systemd-nspawn: exit status $?)"

step "what each unit did"
/usr/bin/python3 "$HERE/check.py" "$OUT" "$(cut -d'|' -f1,3,4 <<<"$CASES")" ||
    fail "a case is not as expected (its files: $OUT)"
echo "hardening_test: every case as expected"
