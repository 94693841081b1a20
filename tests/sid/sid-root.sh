#!/bin/sh
# sid-root.sh: CPython 3.14 and 3.15 for the tests, from Debian unstable's own packages.
#
#   sh tests/sid/sid-root.sh [DIR]      as root; DIR defaults to build/sid
#                                        (make sid-root runs it; make test needs it)
#
# The machines the tests run on are Debian 12, which has no 3.14 or 3.15, and nothing
# but Debian's mirror can be fetched. Debian unstable ("sid") ships both, built against
# a newer glibc than Debian 12's, so they run in a root file system of their own:
#
#   DIR/root                a minimal sid made by debootstrap (variant minbase) holding
#                           python3.14 and python3.15 (static, non-PIE executables like
#                           Debian 12's python3.11), libpython3.X (the shared library, for
#                           embedding hosts) and its headers, CPython's own test suite
#                           (libpython3.X-testsuite: the allocation windows are checked
#                           against its allocator tests), liblz4 and libunwind (what
#                           libpyprof.so loads), libdw and libelf (so the pyprof tool can
#                           run inside and symbolize the root's own ELF files), and sid's
#                           python3-osprofiler and python3-graphviz (for python3.14, sid's
#                           python3: the OSProfiler tests, its `--dot` output included)
#   DIR/bin/python3.14      the interpreters, used like any other: a test runs the
#   DIR/bin/python3.15      wrapper and gets the interpreter's pid
#   DIR/bin/sid-run CMD...  any command of the root
#
# Each wrapper runs its command chrooted into DIR/root inside a private mount namespace
# (nothing stays mounted afterwards) with a fresh /proc, the host's /dev and /tmp (with
# whatever is mounted under them), and each directory of $SID_BIND (colon-separated;
# default: the directory this script was run from, the checkout) at its own path; in the
# caller's working directory; with the caller's environment, LD_PRELOAD reaching the
# command only (not unshare, mount or chroot); and with the caller's pid, since every
# step execs. A libpyprof.so built on
# Debian 12 loads under sid's glibc; children of the interpreter run inside the root too.
#
# An embedding host builds on the host against the root:
#   cc --sysroot=DIR/root -IDIR/root/usr/include/python3.14 host.c -lpython3.14
#
# Idempotent: when DIR/.sid-root names every package wanted, it only rewrites the wrappers
# and checks that they run (well under a second); packages it does not name are installed
# with apt-get inside the root, and the stamp then names the old set and the new (nothing
# is ever removed, and the root is never made anew for another package set: a run with
# SID_EXTRA_PACKAGES and a run without share one root, and after both, either is up to
# date); an interrupted run starts again. Prints "X.Y.Z WRAPPER" per interpreter on
# stdout, progress on stderr. Costs about a minute and 400 MB once (the package cache
# and lists are removed). Remove with `rm -rf --one-file-system DIR`.
#
# Environment: SID_MIRROR (default: the Debian mirror of this machine's apt sources, as
# tests/debian-mirror.sh finds it, else http://deb.debian.org/debian; it must serve sid
# too, not only the host's release); SID_EXTRA_PACKAGES:
# more of sid's packages (space-separated), appended to the fixed list (`make bench`
# passes python3-memray, the memory profiler it compares with on python3.14).
set -eu

DIR=${1:-build/sid}
. "$(dirname "$0")/../debian-mirror.sh"
MIRROR=${SID_MIRROR:-$(debian_mirror)}
VERSIONS="3.14 3.15"
PACKAGES="liblz4-1 libunwind8 libdw1t64 libelf1t64 python3-osprofiler python3-graphviz"
for v in $VERSIONS; do
    PACKAGES="$PACKAGES python$v libpython$v libpython$v-dev libpython$v-testsuite"
done
PACKAGES="$PACKAGES ${SID_EXTRA_PACKAGES:-}"
PACKAGES=$(echo $PACKAGES)  # one space between names, none at the ends

say() { echo "sid-root: $*" >&2; }
die() { say "$*"; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, chroot and unshare need it)"
case $DIR in /*) ;; *) DIR=$(pwd -P)/$DIR ;; esac
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd -P)
[ "$DIR" != / ] || die "DIR must not be /"
case $DIR in *"'"*|*:*) die "DIR must not contain a quote or a colon: $DIR" ;; esac
BIND_DEFAULT=$(pwd -P)
ROOT=$DIR/root
STAMP=$DIR/.sid-root
WANT="sid $PACKAGES"

tidy() {
    # The package cache and lists (about 130 MB) are not needed to run anything.
    chroot "$ROOT" apt-get clean
    find "$ROOT/var/lib/apt/lists" -maxdepth 1 -type f -delete
}

# The wanted names the stamp does not name (all of them when there is no stamp).
HAVE=$(cat "$STAMP" 2>/dev/null || true)
MISSING=
for p in $PACKAGES; do
    case " $HAVE " in *" $p "*) ;; *) MISSING="$MISSING $p" ;; esac
done

if [ -f "$STAMP" ] && [ -z "$MISSING" ]; then
    say "up to date: $ROOT"
elif [ -f "$STAMP" ] && [ "$HAVE" != incomplete ] && [ -x "$ROOT/usr/bin/apt-get" ]; then
    say "installing into $ROOT:$MISSING"
    # A mirror may serve a frozen snapshot of sid whose Release file has expired; its
    # packages are still the ones debootstrap checked against Debian's keys.  (Only
    # update reads the Release file; install is given the option too, so that no apt
    # run in the root ever refuses it.)
    chroot "$ROOT" apt-get -o Acquire::Check-Valid-Until=false update -q >&2
    chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive \
        apt-get -o Acquire::Check-Valid-Until=false \
        install -y -q --no-install-recommends $MISSING >&2
    tidy
    echo "$HAVE$MISSING" > "$STAMP"
else
    # A DIR this script did not make is left alone.
    [ -f "$STAMP" ] || [ -z "$(ls -A "$DIR")" ] ||
        die "$DIR is not empty and is not one this script made; not touching it"
    [ ! -e "$ROOT" ] || { say "removing the unfinished root $ROOT"; rm -rf --one-file-system "$ROOT"; }
    if ! command -v debootstrap >/dev/null 2>&1; then
        say "installing debootstrap"
        apt-get update -q >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >&2
    fi
    echo incomplete > "$STAMP"
    mkdir -p "$ROOT"
    say "debootstrap sid into $ROOT from $MIRROR (about a minute)"
    debootstrap --variant=minbase --include="$(echo $PACKAGES | tr ' ' ',')" \
        sid "$ROOT" "$MIRROR" >&2
    tidy
    echo "$WANT" > "$STAMP"
fi

# The wrappers: three small scripts, each exec'ing the next, so the pid stays the command's.
#   DIR/bin/sid-run                   on the host: LD_PRELOAD set aside, a new mount namespace
#   DIR/bin/sid-enter                 in it: the mounts, then chroot
#   DIR/root/usr/local/sbin/sid-exec  inside the root: the working directory, LD_PRELOAD back
mkdir -p "$DIR/bin" "$ROOT/usr/local/sbin"

# unshare makes the namespace's mounts private, except where / is no mount point (some
# containers): there it leaves them as they are, and sid-enter checks them.
if unshare --mount --propagation private true 2>/dev/null; then
    PROPAGATION=private
else
    PROPAGATION=unchanged
fi

cat > "$DIR/bin/sid-run.tmp" <<EOF
#!/bin/sh
# sid-run CMD [ARG...]: CMD inside the Debian sid root $ROOT (tests/sid/sid-root.sh).
SID_PRELOAD=\${LD_PRELOAD-}
SID_CWD=\$PWD
export SID_PRELOAD SID_CWD
unset LD_PRELOAD
exec unshare --mount --propagation $PROPAGATION -- /bin/sh '$DIR/bin/sid-enter' "\$@"
EOF

cat > "$DIR/bin/sid-enter.tmp" <<EOF
#!/bin/sh
# Run by sid-run inside its new mount namespace (tests/sid/sid-root.sh).
root='$ROOT'
# Nothing mounted here may reach the host's namespace.
if grep -q ' shared:' /proc/self/mountinfo; then
    echo "sid-enter: a mount here is shared with the host; not mounting anything" >&2
    exit 125
fi
# The caller's directories, each bound once (not recursively), then /tmp with what is
# mounted under it (a test's read-only or full file system), /proc and /dev.
ifs=\$IFS
IFS=:
for d in \${SID_BIND:-$BIND_DEFAULT}; do
    IFS=\$ifs
    case \$d in /|/tmp|/tmp/*|"") continue ;; esac
    [ -d "\$d" ] || continue
    mkdir -p "\$root\$d" && mount --bind "\$d" "\$root\$d" || exit 125
done
IFS=\$ifs
mount --rbind /tmp "\$root/tmp" || exit 125
mount -t proc proc "\$root/proc" || exit 125
mount --rbind /dev "\$root/dev" || exit 125
exec chroot -- "\$root" /usr/local/sbin/sid-exec "\$@"
EOF

cat > "$ROOT/usr/local/sbin/sid-exec" <<'EOF'
#!/bin/sh
# Inside the root (tests/sid/sid-root.sh): the caller's directory, then the command with
# the caller's LD_PRELOAD.
cd "${SID_CWD:-/}" 2>/dev/null || cd /
unset SID_CWD
if [ -n "${SID_PRELOAD-}" ]; then
    LD_PRELOAD=$SID_PRELOAD
    export LD_PRELOAD
fi
unset SID_PRELOAD
exec "$@"
EOF
chmod +x "$DIR/bin/sid-run.tmp" "$DIR/bin/sid-enter.tmp" "$ROOT/usr/local/sbin/sid-exec"
mv "$DIR/bin/sid-run.tmp" "$DIR/bin/sid-run"
mv "$DIR/bin/sid-enter.tmp" "$DIR/bin/sid-enter"

for v in $VERSIONS; do
    cat > "$DIR/bin/python$v.tmp" <<EOF
#!/bin/sh
# python$v of the Debian sid root $ROOT (see sid-run beside this file).
exec '$DIR/bin/sid-run' /usr/bin/python$v "\$@"
EOF
    chmod +x "$DIR/bin/python$v.tmp"
    mv "$DIR/bin/python$v.tmp" "$DIR/bin/python$v"
done

for v in $VERSIONS; do
    got=$("$DIR/bin/python$v" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])') ||
        die "$DIR/bin/python$v does not run"
    echo "$got $DIR/bin/python$v"
done
