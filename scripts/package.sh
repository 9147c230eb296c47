#!/usr/bin/env bash
# Builds the Debian package blackbox_<version>_amd64.deb (into OUT_DIR, default target/debian):
#   /usr/lib/x86_64-linux-gnu/libVkLayer_blackbox.so           the layer
#   /usr/share/vulkan/implicit_layer.d/VkLayer_blackbox.json   its implicit manifest: off until VK_BLACKBOX_ENABLE=1
#   /usr/share/vulkan/explicit_layer.d/VkLayer_blackbox.json   its explicit manifest: VK_INSTANCE_LAYERS=VK_LAYER_blackbox
#   /usr/bin/blackbox                                          the CLI
#   /usr/share/blackbox/shaders/blackbox.{glsl,hlsl,slang}     the assert headers
#   /usr/share/man/man1/blackbox.1.gz                          the man page, generated from the CLI's help
#   /usr/share/doc/blackbox/                                   README, report schema and docs, copyright
# The manifests name the library by file name alone, so the loader finds it on the system library path.
# Needs dpkg-deb and help2man (scripts/setup.sh installs them). PROFILE=debug packages the debug build (as the
# package test does, from what scripts/test.sh built); BUILD=0 packages what target/<profile> has.
set -euo pipefail
cd "$(dirname "$0")/.."

out_dir=${OUT_DIR:-target/debian}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
[ -n "$version" ] || { echo "package: no version in Cargo.toml" >&2; exit 1; }
deb="$out_dir/blackbox_${version}_amd64.deb"

profile=${PROFILE:-release}
bin=target/$profile
if [ "${BUILD:-1}" != 0 ]; then
  if [ "$profile" = release ]; then
    cargo build --release -q -p blackbox-layer -p blackbox-cli
  else
    cargo build -q -p blackbox-layer -p blackbox-cli
  fi
fi

root=$(mktemp -d "${TMPDIR:-/tmp}/blackbox-deb.XXXXXX")
chmod 0755 "$root"
trap 'rm -rf "$root"' EXIT
lib="$root/usr/lib/x86_64-linux-gnu"
mkdir -p "$lib" "$root/usr/bin" "$root/usr/share/vulkan/implicit_layer.d" "$root/usr/share/vulkan/explicit_layer.d" \
  "$root/usr/share/blackbox/shaders" "$root/usr/share/man/man1" "$root/usr/share/doc/blackbox" "$root/DEBIAN"

install -m 0644 $bin/libVkLayer_blackbox.so "$lib/"
install -m 0755 $bin/blackbox "$root/usr/bin/"
strip --strip-unneeded "$lib/libVkLayer_blackbox.so" "$root/usr/bin/blackbox"

# The manifests of manifest/, with the library named for the system library path.
for kind in implicit explicit; do
  src=manifest/VkLayer_blackbox.json
  [ $kind = implicit ] && src=manifest/VkLayer_blackbox_implicit.json
  python3 - "$src" "$root/usr/share/vulkan/${kind}_layer.d/VkLayer_blackbox.json" <<'PY'
import json, sys
manifest = json.load(open(sys.argv[1]))
manifest["layer"]["library_path"] = "libVkLayer_blackbox.so"
with open(sys.argv[2], "w") as f:
    json.dump(manifest, f, indent=2)
    f.write("\n")
PY
  chmod 0644 "$root/usr/share/vulkan/${kind}_layer.d/VkLayer_blackbox.json"
done

install -m 0644 shaders/blackbox.glsl shaders/blackbox.hlsl shaders/blackbox.slang "$root/usr/share/blackbox/shaders/"

# The man page: the CLI's --help, and each command's help as a section of its own.
include=$(mktemp)
{
  echo "[COMMANDS]"
  for verb in $($bin/blackbox --help | sed -n '/^Commands:/,/^$/p' | awk 'NR > 1 && $1 != "help" {print $1}'); do
    echo ".SS blackbox $verb"
    echo ".nf"
    $bin/blackbox help "$verb" | sed 's/\\/\\\\/g; s/^\./\\\&./'
    echo ".fi"
  done
  echo "[FILES]"
  echo "/usr/share/vulkan/implicit_layer.d/VkLayer_blackbox.json: the implicit layer, enabled by VK_BLACKBOX_ENABLE=1."
  echo ".br"
  echo "/usr/share/vulkan/explicit_layer.d/VkLayer_blackbox.json: the explicit layer, VK_INSTANCE_LAYERS=VK_LAYER_blackbox."
  echo ".br"
  echo "/usr/share/blackbox/shaders: the shader assert headers (GLSL, HLSL, Slang)."
  echo ".br"
  echo "vk_layer_settings.txt: settings as blackbox.<name> = <value> (see /usr/share/doc/blackbox/README.md)."
} >"$include"
help2man --no-info --version-string="$version" --name="reports GPU crashes, hangs and shader errors of Vulkan apps" \
  --include="$include" $bin/blackbox >"$root/usr/share/man/man1/blackbox.1"
rm -f "$include"
gzip -9n "$root/usr/share/man/man1/blackbox.1"

install -m 0644 README.md docs/report.md docs/report.schema.json "$root/usr/share/doc/blackbox/"
cat >"$root/usr/share/doc/blackbox/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: blackbox

Files: *
License: MIT or Apache-2.0
EOF

size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<EOF
Package: blackbox
Version: $version
Architecture: amd64
Maintainer: Blackbox developers <blackbox@localhost>
Installed-Size: $size
Depends: libc6 (>= 2.34), libgcc-s1, libvulkan1
Suggests: mesa-vulkan-drivers, vulkan-validationlayers
Section: devel
Priority: optional
Description: Vulkan layer that reports GPU crashes, hangs and shader errors
 Blackbox is a Vulkan layer that tells why and where the GPU went wrong: on a
 device loss, a GPU hang or a fatal signal it writes a report of the work in
 flight; it reports shader asserts, debugPrintf, NaN and Inf origins, runaway
 loops and integer errors with their source lines. Enable it per run with
 VK_BLACKBOX_ENABLE=1; the blackbox command prints and groups the reports.
EOF

mkdir -p "$out_dir"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
