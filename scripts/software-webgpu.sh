#!/bin/bash
# (A copy of shared/gpu/software-webgpu.sh, kept here so that a clone installs its own WebGPU.)
# Installs Mesa's lavapipe, a software Vulkan driver that Dawn (the npm package `webgpu`) accepts, so that
# WebGPU works on a Linux machine with no GPU. Debian bookworm's own Mesa is too old for Dawn; the one in
# bookworm-backports works. Idempotent: does nothing when a new enough lavapipe is already there.
# Needs root (or sudo) and Debian's package mirror.
set -euo pipefail
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
have() { dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null | grep -qE '^(2[4-9]|[3-9][0-9])\.'; }
if have; then echo "software-webgpu: lavapipe $(dpkg-query -W -f='${Version}' mesa-vulkan-drivers) already installed"; exit 0; fi
. /etc/os-release
suite="${VERSION_CODENAME:-bookworm}-backports"
if ! grep -rqs "$suite" /etc/apt/sources.list /etc/apt/sources.list.d/; then
  # the same mirror as the machine's own Debian sources
  uri=$(grep -hsE '^URIs:' /etc/apt/sources.list.d/*.sources | grep -v security | head -n1 | awk '{print $2}')
  [ -n "$uri" ] || uri=$(grep -hsE '^deb ' /etc/apt/sources.list | grep -v security | head -n1 | awk '{print $2}')
  [ -n "$uri" ] || { echo "software-webgpu: found no Debian mirror in apt's sources" >&2; exit 1; }
  echo "deb $uri $suite main" | $SUDO tee /etc/apt/sources.list.d/software-webgpu-backports.list >/dev/null
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq -t "$suite" mesa-vulkan-drivers libvulkan1 >/dev/null
have && echo "software-webgpu: lavapipe $(dpkg-query -W -f='${Version}' mesa-vulkan-drivers) installed"
