#!/usr/bin/env bash
# check_format.sh [--fix] -- fails when a tracked C source differs from .clang-format.
#
# The sources are every tracked *.c and *.h (`git ls-files`; the tree vendors and generates
# none).  The style is defined by clang-format 14, Debian bookworm's clang-format-14 (`make
# deps` installs it): other versions lay some lines out differently, so this takes
# $CLANG_FORMAT, else clang-format-14, else clang-format, and says so when that is not 14.
# With --fix the files are reformatted in place (`make format`) instead of checked.
#
# Exit status: 0 and "format-check: OK (N files)" when every file is formatted; 1 with the
# files that differ listed and the command that fixes them; 2 on a usage or tool error.
set -u

fix=0
case "${1:-}" in
    --fix) fix=1 ;;
    "") ;;
    *)
        echo "usage: $0 [--fix]" >&2
        exit 2
        ;;
esac
cd "$(dirname "$0")/.." || exit 2

tool=${CLANG_FORMAT:-}
if [ -z "$tool" ]; then
    tool=$(command -v clang-format-14 || command -v clang-format) || {
        echo "format-check: clang-format is missing; run: make deps (or apt-get install clang-format-14)" >&2
        exit 2
    }
fi
version=$("$tool" --version 2>/dev/null) || {
    echo "format-check: cannot run $tool" >&2
    exit 2
}
case "$version" in
    *" version 14."*) ;;
    *) echo "format-check: warning: $tool is not clang-format 14 ($version); its layout may differ" >&2 ;;
esac

if ! files=$(git ls-files -- '*.c' '*.h' 2>/dev/null) || [ -z "$files" ]; then
    echo "format-check: no tracked C sources (not a git checkout?)" >&2
    exit 2
fi
mapfile -t files <<<"$files"

if [ "$fix" = 1 ]; then
    "$tool" -i --style=file -- "${files[@]}" || exit 2
    echo "format: formatted ${#files[@]} files"
    exit 0
fi

bad=()
for f in "${files[@]}"; do
    "$tool" --dry-run --Werror --style=file "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
    echo "format-check: ${#bad[@]} of ${#files[@]} files differ from .clang-format:"
    printf '  %s\n' "${bad[@]}"
    echo "fix with: make format   (see the changes: $tool --dry-run FILE)"
    exit 1
fi
echo "format-check: OK (${#files[@]} files)"
