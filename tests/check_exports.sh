#!/usr/bin/env bash
# check_exports.sh LIB [MAP] -- fails when LIB exports a symbol that MAP does not list.
#
# libpyprof.so is loaded into other people's processes, so every symbol it exports can
# interpose on one of theirs.  The version script preload/exports.map is the one list of
# what may be exported; this compares it with what the linker really exported
# (`nm -D --defined-only`), as libunwind's check-namespace.sh does.  The patterns of the
# map's `global:` sections are shell globs, matched here the same way.
#
# Exit status: 0 and "check-exports: OK (N symbols)" when every exported symbol matches a
# pattern and every plain name of the map is exported; 1 with the offending symbols
# listed otherwise; 2 on a usage or tool error.
set -u

lib=${1:-}
map=${2:-$(dirname "$0")/../preload/exports.map}
if [ -z "$lib" ] || [ $# -gt 2 ]; then
    echo "usage: $0 LIB [EXPORTS_MAP]" >&2
    exit 2
fi
for f in "$lib" "$map"; do
    if [ ! -r "$f" ]; then
        echo "check-exports: cannot read $f" >&2
        exit 2
    fi
done

# The map without comments ("/* */", "#", "//"), one token per line: every ';', '{', '}'
# and blank separates tokens.
if ! stripped=$(perl -0777 -pe 's{/\*.*?\*/}{ }gs; s{(?:#|//)[^\n]*}{}g' "$map"); then
    echo "check-exports: cannot parse $map" >&2
    exit 2
fi
tokens=$(printf '%s\n' "$stripped" | tr -s ';{} \t' '\n')

# Names in a global section are the patterns.  A named version node ("PYPROF_1 { ... };")
# shows up in nm as an absolute symbol of that name, so node names are collected to be
# ignored.
patterns=()
nodes=()
section=""
while IFS= read -r t; do
    case "$t" in
        "") ;;
        global:) section=global ;;
        local:) section=local ;;
        *) [ "$section" = global ] && patterns+=("$t") ;;
    esac
done <<<"$tokens"
while IFS= read -r n; do
    [ -n "$n" ] && nodes+=("$n")
done < <(printf '%s\n' "$stripped" | grep -o '[A-Za-z_][A-Za-z0-9_.]*[[:space:]]*{' |
         tr -d '{ \t')

if [ ${#patterns[@]} -eq 0 ]; then
    echo "check-exports: no global patterns found in $map" >&2
    exit 2
fi

if ! out=$(nm -D --defined-only "$lib" 2>/dev/null); then
    echo "check-exports: nm -D failed on $lib (not a shared object?)" >&2
    exit 2
fi

# Version names seen as suffixes ("sym@@PYPROF_1") are version definitions too.
while IFS= read -r n; do
    [ -n "$n" ] && nodes+=("$n")
done < <(printf '%s\n' "$out" | grep -o '@@\?[^@[:space:]]*$' | tr -d '@' | sort -u)

count=0
offenders=()
exported=()
while read -r _addr _type name _rest; do
    # Lines of nm's output are "ADDRESS TYPE NAME"; undefined-weak and odd lines have
    # fewer fields.
    if [ -z "${name:-}" ]; then
        name=$_type
    fi
    [ -z "$name" ] && continue
    name=${name%%@*} # "sym@@VERSION" / "sym@VERSION": the name alone.
    skip=0
    for n in "${nodes[@]+"${nodes[@]}"}"; do
        [ "$name" = "$n" ] && skip=1
    done
    [ $skip = 1 ] && continue
    count=$((count + 1))
    exported+=("$name")
    ok=0
    for p in "${patterns[@]}"; do
        # shellcheck disable=SC2053  # The pattern is a glob on purpose.
        if [[ $name == $p ]]; then
            ok=1
            break
        fi
    done
    [ $ok = 0 ] && offenders+=("$name")
done <<<"$out"

if [ ${#offenders[@]} -gt 0 ]; then
    echo "check-exports: FAILED: $lib exports ${#offenders[@]} symbol(s) not in $map:"
    printf '  %s\n' "${offenders[@]}" | sort -u
    exit 1
fi
# And the other way: a name the map lists (not a glob) that the library does not define
# is a stale entry, so the map stays the exact list of what is interposed.
stale=()
for p in "${patterns[@]}"; do
    case "$p" in *[*?[]*) continue ;; esac
    found=0
    for n in "${exported[@]+"${exported[@]}"}"; do
        [ "$n" = "$p" ] && found=1 && break
    done
    [ $found = 0 ] && stale+=("$p")
done
if [ ${#stale[@]} -gt 0 ]; then
    echo "check-exports: FAILED: $map lists ${#stale[@]} name(s) $lib does not define:"
    printf '  %s\n' "${stale[@]}"
    exit 1
fi
echo "check-exports: OK ($count symbols)"
