#!/usr/bin/env bash
# Installs Stan (Debian's rstan) for the reference-sampler validation in validation/stan/.
# Not needed to build, test or run xpcsfit; only for validation/stan/compare_static.py.
# Non-interactive, idempotent: packages already present are skipped; apt-get runs only
# when something is missing. Works as root (or through sudo when available).
#
# Debian 12 (bookworm) ships r-cran-bh 1.74 as a stub that relies on libboost-dev:
# BH/include may lack boost/, and rstan's model compilation then fails with
# "boost/...hpp: No such file or directory". Where BH/include has no boost/, link
# /usr/include/boost into it (once; re-running changes nothing).
set -euo pipefail

# codetools only silences rstan's "package 'codetools' not available" notes.
packages=(r-cran-rstan r-cran-bh r-cran-codetools libboost-dev build-essential)

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo_cmd=(sudo); else sudo_cmd=(false); fi
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  if [ "${sudo_cmd[*]}" = false ]; then
    echo "install-stan: missing packages (${missing[*]}) and not root; install them with apt-get" >&2
    exit 1
  fi
  echo "install-stan: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# BH include dir: make boost/ visible there if it is not already.
bh_inc=/usr/lib/R/site-library/BH/include
if [ -d /usr/include/boost ] && [ ! -e "$bh_inc/boost" ]; then
  if [ "${sudo_cmd[*]}" = false ]; then
    echo "install-stan: $bh_inc/boost is missing and not root; run: ln -s /usr/include/boost $bh_inc/boost" >&2
    exit 1
  fi
  echo "install-stan: linking /usr/include/boost into $bh_inc" >&2
  "${sudo_cmd[@]}" mkdir -p "$bh_inc"
  "${sudo_cmd[@]}" ln -s /usr/include/boost "$bh_inc/boost"
fi
