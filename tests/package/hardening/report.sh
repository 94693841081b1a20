#!/bin/sh
# Run inside the booted root once every pp-*.service has run (tests/package/hardening_test.sh):
# what each unit did, into /opt/pp/out/UNIT/, then `pyprof ctl` on the two daemons.
out=/opt/pp/out
for u in $(systemctl list-units --all --plain --no-legend 'pp-*.service' | awk '{print $1}'); do
    case $u in pp-report.service | pp-ctl-*) continue ;; esac
    mkdir -p "$out/$u"
    systemctl show -p Result -p ExecMainStatus "$u" >"$out/$u/show.txt"
    journalctl -b -u "$u" -o cat --no-pager >"$out/$u/journal.txt" 2>&1
    stat -L -c '%a %U' "/var/log/pyprof/$u" >"$out/$u/logdir.txt" 2>&1
    pyprof report --json "/var/log/pyprof/$u/" >"$out/$u/report.json" 2>"$out/$u/report.err"
done
# The daemons: the control socket in the host's network namespace, and in the unit's own.
for u in pp-ctl-plain.service pp-ctl-privnet.service; do
    pid=$(systemctl show -p MainPID --value "$u")
    pyprof ctl "$pid" status >"$out/$u.ctl" 2>&1
    echo "rc=$?" >>"$out/$u.ctl"
    nsenter --net="/proc/$pid/ns/net" pyprof ctl "$pid" status >"$out/$u.nsenter" 2>&1
    echo "rc=$?" >>"$out/$u.nsenter"
    systemctl stop "$u"
done
echo done >"$out/END"
