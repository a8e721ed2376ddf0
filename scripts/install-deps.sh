#!/usr/bin/env bash
# Installs the Debian packages xpcsfit needs to build, test and run.
# Non-interactive, idempotent: packages already present are skipped; apt-get runs only
# when something is missing. Works as root (or through sudo when available).
set -euo pipefail

packages=(
  build-essential cmake pkg-config clang-format
  help2man
  libhdf5-dev hdf5-plugin-lzf liblzf1 hdf5-tools zlib1g-dev libpng-dev
  libnetcdf-dev
  libyaml-dev
  libgsl-dev
  libopenblas-dev liblapacke-dev
  libcmocka-dev
  strace
  libopenmpi-dev openmpi-bin
  libcjson-dev
  libsleef-dev
  librandom123-dev
  libplplot-dev plplot-driver-cairo
  python3 python3-numpy python3-scipy python3-h5py python3-yaml
  python3-netcdf4
  python3-xarray
)
# --fuzz: also clang (libFuzzer, ASan, UBSan) for `make fuzz-build` (docs/fuzzing.md);
# the normal build and `make test` never need it.
if [ "${1:-}" = "--fuzz" ]; then
  packages+=(clang)
fi
# --report: also chromium, for the slow test that renders report.html (adr/0034).
if [ "${1:-}" = "--report" ]; then
  packages+=(chromium)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo_cmd=(sudo); else
    echo "install-deps: missing packages (${missing[*]}) and not root; install them with apt-get" >&2
    exit 1
  fi
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
