#!/usr/bin/env bash
# Build the sandbox base root file system: minimal Debian bookworm with Python 3.
# There is no image registry here, so `sand up` imports this tarball into the
# Docker engine (`docker import`). About a minute, once; the result is cached.
set -euo pipefail
out=${1:?usage: build-rootfs.sh OUT.tar}
mirror=${SAND_DEBIAN_MIRROR:-http://deb.debian.org/debian}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# python3 (not python3-minimal): grain workers need the standard library (json, ...).
debootstrap --variant=minbase --include=python3 bookworm "$work/root" "$mirror" >"$work/log" 2>&1 || {
  echo "debootstrap failed; its log:" >&2; tail -n 30 "$work/log" >&2; exit 1; }
rm -rf "$work/root/var/cache/apt/archives"/*.deb "$work/root/var/lib/apt/lists"/*
# Grains are hostile (decision 0016): no program in the image may raise privileges. Sandboxes run
# with no-new-privileges anyway; removing the setuid and setgid bits (su, mount, passwd, chfn,
# unix_chkpwd, ...) is the second wall. Directories keep their setgid bit: it only picks the
# group of new files, and the root file system is read-only in a sandbox.
find "$work/root" -xdev -type f -perm /6000 -exec chmod ug-s {} +
mkdir -p "$(dirname "$out")"
tar -C "$work/root" -cf "$out.partial" .
mv "$out.partial" "$out"
