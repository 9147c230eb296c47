#!/usr/bin/env bash
# Installs every system package Blackbox needs, on Debian 12 (bookworm). Safe to run again: it installs only
# what is missing. Run as root, or as a user with sudo.
#   Vulkan loader + headers, lavapipe (Mesa's CPU driver), the Khronos validation layers, vulkan-tools
#   (vulkaninfo, vkcube), glslang (GLSL/HLSL -> SPIR-V), spirv-tools, Xvfb (vkcube needs a display).
set -euo pipefail

packages=(
  libvulkan1 libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  glslang-tools spirv-tools xvfb xauth
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} system packages are installed"
  exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: installing ${missing[*]} needs root or sudo" >&2; exit 1; }
  sudo=(sudo)
fi
echo "setup: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
