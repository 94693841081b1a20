# debian-mirror.sh: the Debian mirror this machine's apt uses; sourced (POSIX sh) by
# tests/sid/sid-root.sh and tests/package/install_test.sh, which make Debian roots with
# debootstrap and must fetch from wherever the machine may fetch Debian from.
#
#   debian_mirror [APTDIR]   prints one mirror URI (no trailing slash) and succeeds
#
# APTDIR (default /etc/apt) is read as apt reads it: APTDIR/sources.list, then each file
# of APTDIR/sources.list.d in name order, *.list in the one-line format
#   deb [OPTIONS] URI SUITE COMPONENT...
# and *.sources in the deb822 format (stanzas of Types:, URIs:, Suites:, Components:...
# separated by blank lines).  An entry counts when it is a binary one ("deb", not
# "deb-src"), is not switched off (Enabled: no), names Debian's "main" component and a
# suite that is Debian's (a codename or an alias such as sid or stable, or one of their
# -updates or -backports), and its URI is fetched over http, https, ftp or file and is
# not a security archive (the security suites are not full distributions, so
# debootstrap cannot start from them).  Of the URIs that count, the first that has
# "debian" in it wins (third-party archives also call a suite "stable" and a component
# "main"), else the first at all.
debian_mirror() (
    aptdir=${1:-/etc/apt}
    set --
    [ -r "$aptdir/sources.list" ] && set -- "$aptdir/sources.list"
    for f in "$aptdir"/sources.list.d/*; do
        case $f in *.list | *.sources) [ -f "$f" ] && [ -r "$f" ] && set -- "$@" "$f" ;; esac
    done
    codename=
    [ -r /etc/os-release ] && codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    found=
    [ $# = 0 ] || found=$(awk -v host="$codename" '
        function debian_suite(s,    base) {
            base = s
            sub(/-(updates|backports|backports-sloppy|proposed-updates)$/, "", base)
            if (base ~ /-security$/ || base == "")
                return 0
            if (host != "" && base == host)
                return 1
            return base ~ /^(sid|unstable|testing|stable|oldstable|oldoldstable|experimental|rc-buggy|stretch|buster|bullseye|bookworm|trixie|forky|duke)$/
        }
        function take(uri) {
            sub(/\/+$/, "", uri)
            if (uri !~ /^(https?|ftp|file):/ || tolower(uri) ~ /security/)
                return
            if (any == "")
                any = uri
            if (best == "" && tolower(uri) ~ /debian/)
                best = uri
        }
        function has_word(list, w,    n, a, i) {
            n = split(list, a, /[ \t]+/)
            for (i = 1; i <= n; i++)
                if (a[i] == w)
                    return 1
            return 0
        }
        # deb822: one stanza, gathered in f[] (field names in lower case).
        function stanza(    n, a, i, ok) {
            if (tolower(f["enabled"]) != "no" && has_word(f["types"], "deb") &&
                has_word(f["components"], "main")) {
                n = split(f["suites"], a, /[ \t]+/)
                ok = 0
                for (i = 1; i <= n; i++)
                    if (debian_suite(a[i]))
                        ok = 1
                if (ok) {
                    n = split(f["uris"], a, /[ \t]+/)
                    for (i = 1; i <= n; i++)
                        if (a[i] != "")
                            take(a[i])
                }
            }
            split("", f)
            key = ""
        }
        FNR == 1 { stanza() }
        FILENAME ~ /\.sources$/ {
            if ($0 ~ /^[ \t]*$/) { stanza(); next }
            if ($0 ~ /^#/) next
            if ($0 ~ /^[ \t]/ && key != "") { f[key] = f[key] " " $0; next }
            if (match($0, /^[^: \t]+:/)) {
                key = tolower(substr($0, 1, RLENGTH - 1))
                f[key] = substr($0, RLENGTH + 1)
                sub(/^[ \t]+/, "", f[key])
                sub(/[ \t]+$/, "", f[key])
            }
            next
        }
        {
            line = $0
            sub(/#.*/, "", line)
            sub(/^[ \t]+/, "", line)
            if (line !~ /^deb[ \t]/)
                next
            sub(/^deb[ \t]+/, "", line)
            if (line ~ /^\[/) {
                if (!sub(/^\[[^]]*\][ \t]*/, "", line))
                    next
            }
            n = split(line, a, /[ \t]+/)
            if (n < 3 || !debian_suite(a[2]))
                next
            for (i = 3; i <= n; i++)
                if (a[i] == "main") {
                    take(a[1])
                    break
                }
        }
        END {
            stanza()
            print (best != "" ? best : any)
        }' "$@" 2>/dev/null) || found=
    # The address the scripts used before they read apt's sources: kept for a machine
    # whose apt names no Debian mirror (none configured, or only third-party archives),
    # where Debian's own redirector is the likeliest to answer.
    echo "${found:-http://deb.debian.org/debian}"
)
