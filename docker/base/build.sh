#!/usr/bin/env bash
# The local stand-in for debian:<suite>-slim where no image registry is in reach:
# `debootstrap --variant=minbase <suite>` from the Debian mirror, imported as one layer.
#   docker/base/build.sh SUITE TAG [LABEL=VALUE...]
set -euo pipefail
suite=$1 tag=$2
shift 2
root=$(mktemp -d /var/tmp/cogr-base-XXXXXX)
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase "$suite" "$root" http://deb.debian.org/debian >"$root.log" 2>&1 \
  || { echo "debootstrap $suite failed; see $root.log" >&2; exit 1; }
# Like the official images: no apt caches or docs, security updates in the sources.
cat > "$root/etc/apt/sources.list" <<SOURCES
deb http://deb.debian.org/debian $suite main
deb http://deb.debian.org/debian $suite-updates main
deb http://deb.debian.org/debian-security $suite-security main
SOURCES
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
changes=(--change 'CMD ["bash"]')
for label in "$@"; do changes+=(--change "LABEL $label"); done
tar -C "$root" -c . | podman import "${changes[@]}" - "$tag" >/dev/null
rm -f "$root.log"
echo "$tag: debootstrap --variant=minbase $suite"
