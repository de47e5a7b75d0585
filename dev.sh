#!/bin/sh
# Bootstrap for a fresh Debian 12 machine: installs make if it is missing, then runs the Makefile,
# which installs the remaining Debian packages, configures, builds and runs the target.
#   ./dev.sh run    serve the webhooks on the bundled example cluster
#   ./dev.sh test   build and run the whole test suite
set -eu
cd "$(dirname "$0")"
if ! command -v make >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  echo "Installing make (Debian package)..."
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends make
fi
exec make "$@"
