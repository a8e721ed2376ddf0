#!/usr/bin/env bash
# Proves the README's claim on a machine that has nothing installed: builds a minimal
# Debian 12 (bookworm) root with debootstrap, adds only `make`, clones this repository
# into it and runs CI's command (.ci/run: format-check + make test) and `make demo`.
# Needs root, debootstrap and the Debian mirror; takes about two minutes.
set -euo pipefail
root=${1:-/tmp/xpcsfit-fresh-debian}
repo=$(cd "$(dirname "$0")/.." && pwd)
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

if [ ! -x "$root/bin/bash" ]; then
	debootstrap --variant=minbase bookworm "$root" "$mirror" >/dev/null
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
rm -rf "$root/root/xpcsfit"
git clone -q "$repo" "$root/root/xpcsfit"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
trap 'umount "$root/proc" "$root/dev" 2>/dev/null || true' EXIT
chroot "$root" /bin/bash -c '
	set -e
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq && apt-get install -y -qq make >/dev/null
	cd /root/xpcsfit
	CI=true bash .ci/run
	make demo
'
echo "fresh Debian 12: .ci/run and make demo passed"
