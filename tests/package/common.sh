# common.sh: what install_test.sh and hardening_test.sh share; sourced by them, from the
# repository's top directory, with their arguments ([DEB [DIR]]) and PROG (their name).
#
#   version     the project's version (include/pyprof/pyprof.h)
#   DEB         the package: $1, or build/deb/pyprof_VERSION_ARCH.deb
#   DIR         the work directory: $2, or build/package-test
#   step TEXT   prints a step's heading
#   fail TEXT   says PROG failed, why, and exits 1
#   in_root CMD...  CMD chrooted into $ROOT, with /proc and /dev/pts mounted in a mount
#               namespace of its own (nothing stays mounted)
[ "$(id -u)" = 0 ] || { echo "$PROG: must run as root (debootstrap, chroot, unshare)" >&2; exit 1; }

version=$(sed -n 's/^#define PYPROF_VERSION_STRING "\(.*\)"/\1/p' include/pyprof/pyprof.h)
DEB=$(readlink -f "${1:-build/deb/pyprof_${version}_$(dpkg --print-architecture).deb}")
DIR=$(readlink -f "${2:-build/package-test}")

step() { printf '\n== %s\n' "$*"; }
fail() { echo "$PROG: FAIL: $*" >&2; exit 1; }
in_root() {
    unshare --mount --propagation private --fork -- /bin/sh -c '
        root=$1; shift
        mount -t proc proc "$root/proc" || exit 125
        mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts" || exit 125
        exec chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
            LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"' sh "$ROOT" "$@"
}
