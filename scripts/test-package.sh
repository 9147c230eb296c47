#!/usr/bin/env bash
# The Debian package's test, as a user would take it: in a clean Debian 12 root (debootstrap minbase, with
# Debian's loader and lavapipe), `apt install ./blackbox_*.deb`, `blackbox doctor`, an app with
# VK_BLACKBOX_ENABLE=1 (its NaN reported, and a GPU hang written as a report that `blackbox report` prints),
# then `apt purge` and a check that the root holds exactly what it held before.
#   scripts/test-package.sh DEB TESTAPP
# Runs as root (chroot). The minbase root, with Debian's loader and lavapipe, is made once and kept under
# target/debian-root/bookworm (a minute or two; BLACKBOX_DEBIAN_ROOT names another place); each run works on
# a copy, removed after. Every mount lives in a mount namespace of the run's own (unshare), so none outlives
# it, whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
deb=$(realpath "$1"); testapp=$(realpath "$2")
[ "$(id -u)" -eq 0 ] || { echo "test-package: needs root (debootstrap, chroot)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "test-package: needs debootstrap (scripts/setup.sh)" >&2; exit 1; }

base=${BLACKBOX_DEBIAN_ROOT:-$PWD/target/debian-root/bookworm}
step() { echo "test-package: $(date +%T) $*"; }

# What a chroot needs to reach Debian's mirror as this machine does: apt's sources and proxy settings, DNS,
# certificate authorities.
network_settings() {
  local root=$1
  cp -a /etc/apt/. "$root/etc/apt/"
  [ -f "$root/etc/apt/sources.list.d/debian.sources" ] && rm -f "$root/etc/apt/sources.list"
  cp /etc/resolv.conf "$root/etc/"
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp -a /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
}

if [ ! -f "$base/.blackbox-ready" ]; then
  step "making the Debian 12 minbase root in $base (once)"
  rm -rf "$base"
  mkdir -p "$(dirname "$base")"
  debootstrap --variant=minbase bookworm "$base" >/dev/null
  network_settings "$base"
  # Lavapipe and the loader from Debian, the system a user has, installed once here rather than in every run
  # (which installs them where an older root lacks them). Their package scripts need no /proc or /dev; apt's
  # complaint of a missing /dev/pts is printed only if the install fails.
  chroot "$base" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends mesa-vulkan-drivers' >"$base.log" 2>&1 || { cat "$base.log"; exit 1; }
  rm -f "$base.log"
  touch "$base/.blackbox-ready"
fi

work=$(mktemp -d "$(dirname "$base")/run.XXXXXX")
# --one-file-system: never into a mount left under it (the host's /dev or /proc).
trap 'rm -rf --one-file-system "$work"' EXIT
step "copying the root"
cp -a "$base/." "$work/"
network_settings "$work"
cp "$deb" "$work/root/"
cp "$testapp" "$work/usr/local/bin/bb-testapp"

# Inside the root, in a mount namespace of its own: /proc and /dev for the Vulkan loader and lavapipe. Where
# none can be made private (inside a chroot, / is not a mount point), plain mounts undone at exit, and /dev
# bound without its submounts, whose unmounting could otherwise reach the host's.
if unshare --mount --propagation private true 2>/dev/null; then
  isolate=(unshare --mount --propagation private); dev_bind=--rbind
else
  step "no private mount namespace here (a chroot?): mounts undone at exit"
  isolate=(); dev_bind=--bind
fi
"${isolate[@]}" bash -euo pipefail -c '
  root=$1 dev_bind=$2
  undo() { umount -l "$root/dev" 2>/dev/null || true; umount "$root/proc" 2>/dev/null || true; }
  trap undo EXIT
  mount -t proc proc "$root/proc"
  mount "$dev_bind" /dev "$root/dev"
  chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 bash -euo pipefail -c "$3"
' inside "$work" "$dev_bind" '
  step() { echo "test-package (inside): $(date +%T) $*"; }
  # What the root holds, less what apt, dpkg and the runs themselves change (caches, logs, state, reports).
  snapshot() {
    find / -xdev \( -path /proc -o -path /dev -o -path /var/cache -o -path /var/lib/apt -o -path /var/lib/dpkg \
      -o -path /var/log -o -path /tmp -o -path /root -o -path /var/lib/systemd -o -path /etc/ld.so.cache \
      -o -path /usr/local/bin/bb-testapp \) -prune -o -print | sort
  }
  step "lavapipe and the loader from Debian (the system a user has)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mesa-vulkan-drivers >/dev/null
  snapshot >/tmp/before
  deb=$(ls /root/blackbox_*.deb)
  step "apt install ./$(basename "$deb")"
  cd /root
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "./$(basename "$deb")" >/dev/null
  for f in /usr/bin/blackbox /usr/lib/x86_64-linux-gnu/libVkLayer_blackbox.so \
    /usr/share/vulkan/implicit_layer.d/VkLayer_blackbox.json /usr/share/vulkan/explicit_layer.d/VkLayer_blackbox.json \
    /usr/share/blackbox/shaders/blackbox.glsl /usr/share/blackbox/shaders/blackbox.hlsl \
    /usr/share/blackbox/shaders/blackbox.slang /usr/share/man/man1/blackbox.1.gz; do
    [ -f "$f" ] || { echo "test-package: $f is not installed" >&2; exit 1; }
  done
  step "blackbox doctor"
  blackbox doctor >/tmp/doctor.txt 2>&1 || { cat /tmp/doctor.txt; echo "test-package: blackbox doctor failed" >&2; exit 1; }
  cat /tmp/doctor.txt
  step "an app with VK_BLACKBOX_ENABLE=1"
  VK_BLACKBOX_ENABLE=1 VK_BLACKBOX_NAN=ops bb-testapp nan-compute >/tmp/nan.txt 2>&1 || { cat /tmp/nan.txt; exit 1; }
  grep -F "[blackbox] info: Blackbox " /tmp/nan.txt
  grep -F "[blackbox] warn: NaN from normalize() at nan.comp:" /tmp/nan.txt \
    || { cat /tmp/nan.txt; echo "test-package: no NaN line" >&2; exit 1; }
  # Off without the variable: the implicit layer is the loader'"'"'s to enable.
  bb-testapp nan-compute >/tmp/off.txt 2>&1
  if grep -F "[blackbox]" /tmp/off.txt; then echo "test-package: the layer ran without VK_BLACKBOX_ENABLE" >&2; exit 1; fi
  step "a GPU hang, its report, blackbox report"
  # 2,000 workgroups: about 2 s of lavapipe in the long dispatch, twice the watchdog (the default 8,000 took
  # 15 s of the test).
  VK_BLACKBOX_ENABLE=1 VK_BLACKBOX_WATCHDOG_MS=1000 bb-testapp hang --hang-groups 2000 >/tmp/hang.txt 2>&1 || true
  grep -F "GPU hang report written to /root/.local/state/blackbox/" /tmp/hang.txt \
    || { cat /tmp/hang.txt; echo "test-package: no hang report" >&2; exit 1; }
  NO_COLOR=1 blackbox report /root/.local/state/blackbox >/tmp/report.txt
  head -5 /tmp/report.txt
  grep -q "in flight" /tmp/report.txt || { cat /tmp/report.txt; echo "test-package: the report names nothing in flight" >&2; exit 1; }
  man -w blackbox >/dev/null 2>&1 || zcat /usr/share/man/man1/blackbox.1.gz | grep -q "^.SH COMMANDS" \
    || { echo "test-package: the man page has no COMMANDS section" >&2; exit 1; }
  step "apt purge blackbox"
  DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq --autoremove blackbox >/dev/null
  if dpkg-query -W -f="\${Status}" blackbox 2>/dev/null | grep -q installed; then echo "test-package: still installed" >&2; exit 1; fi
  snapshot >/tmp/after
  if ! diff /tmp/before /tmp/after; then echo "test-package: the root differs from before the install (above)" >&2; exit 1; fi
  step "nothing left"
'
step "passed"
