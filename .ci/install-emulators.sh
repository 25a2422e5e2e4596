#!/usr/bin/env bash
# Installs the node tools the test suite starts by itself into
# ${AIOZARR_CI_CACHE:-~/.cache/aiozarr-ci}: azurite (Azure Blob emulator, from npm;
# tests/storage/conftest.py looks for it there) and zarrita (zarrita.js, a Zarr
# client aiozarr did not write; tests/cli/test_zarrita.py reads `aiozarr serve` with it).
# Idempotent and quiet: a second run with the pinned versions in place does nothing.
# (No GCS emulator: obstore's GCSStore cannot use gcp-storage-emulator, see
# docs/decisions/storage.md; the GCS tests use aiozarr's own emulator.)
set -euo pipefail

AZURITE_VERSION="3.35.0"
ZARRITA_VERSION="0.7.5"
CACHE="${AIOZARR_CI_CACHE:-$HOME/.cache/aiozarr-ci}"

# has NAME VERSION: whether the cache holds that version of the npm package.
has() {
  grep -q "\"version\": \"$2\"" "$CACHE/node_modules/$1/package.json" 2>/dev/null
}

wanted=()
if ! has azurite "$AZURITE_VERSION" || [ ! -x "$CACHE/node_modules/.bin/azurite-blob" ]; then
  wanted+=("azurite@$AZURITE_VERSION")
fi
has zarrita "$ZARRITA_VERSION" || wanted+=("zarrita@$ZARRITA_VERSION")
[ "${#wanted[@]}" -eq 0 ] && exit 0

if ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "install-emulators: installing nodejs and npm (Debian packages)" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
  else
    echo "install-emulators: npm not found; the Azure and zarrita tests will be skipped" >&2
    exit 0
  fi
fi

mkdir -p "$CACHE"
# --no-save/--no-package-lock: no package.json or lock file is written into the cache.
# All pinned packages in one install: npm prunes what a --no-save install does not name.
npm install --prefix "$CACHE" --no-save --no-package-lock --no-audit --no-fund \
  --loglevel=error "azurite@$AZURITE_VERSION" "zarrita@$ZARRITA_VERSION" >/dev/null
"$CACHE/node_modules/.bin/azurite-blob" --version >/dev/null
has zarrita "$ZARRITA_VERSION"
