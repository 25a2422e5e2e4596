#!/usr/bin/env bash
# Installs the storage emulators the test suite starts by itself: azurite (Azure Blob,
# from npm) into ${AIOZARR_CI_CACHE:-~/.cache/aiozarr-ci}. Idempotent and quiet: a second
# run with the pinned version in place does nothing. tests/stores/azure_gcs_fixtures.py
# looks for azurite there. (No GCS emulator: obstore's GCSStore cannot use
# gcp-storage-emulator, see CONTRIBUTING.md; the GCS tests use aiozarr's own emulator.)
set -euo pipefail

AZURITE_VERSION="3.35.0"
CACHE="${AIOZARR_CI_CACHE:-$HOME/.cache/aiozarr-ci}"
MANIFEST="$CACHE/node_modules/azurite/package.json"

if [ -f "$MANIFEST" ] && grep -q "\"version\": \"$AZURITE_VERSION\"" "$MANIFEST" \
    && [ -x "$CACHE/node_modules/.bin/azurite-blob" ]; then
  exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "install-emulators: installing nodejs and npm (Debian packages)" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
  else
    echo "install-emulators: npm not found; the Azure tests will be skipped" >&2
    exit 0
  fi
fi

mkdir -p "$CACHE"
# --no-save/--no-package-lock: no package.json or lock file is written into the cache.
npm install --prefix "$CACHE" --no-save --no-package-lock --no-audit --no-fund \
  --loglevel=error "azurite@$AZURITE_VERSION" >/dev/null
"$CACHE/node_modules/.bin/azurite-blob" --version >/dev/null
