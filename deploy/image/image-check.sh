#!/usr/bin/env bash
# image-check: builds the Dockerfile for real without any container registry, and runs what is in
# it (`make image-check`, as root on Debian 12 with mmdebstrap and buildah):
#   1. a Debian 12 (bookworm) base made locally by mmdebstrap from the Debian archive (cached as
#      $CACHE/debian12.tar), imported into buildah as localhost/gpufair-debian:12;
#   2. the Dockerfile built on it (DEBIAN_IMAGE build argument) with vfs storage and chroot
#      isolation, as localhost/gpufair:check;
#   3. `gpufair version`, and gpufair-probe against a `gpufair serve` on the example cluster, both
#      run inside the image (buildah run). The image's size is printed at the end.
# MIRROR (default: the host's Debian mirror) is where mmdebstrap fetches the base from.
set -euo pipefail
cd "$(dirname "$0")/../.."
CACHE=${CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpufair}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
BASE=localhost/gpufair-debian:12
IMAGE=localhost/gpufair:check
export STORAGE_DRIVER=vfs BUILDAH_ISOLATION=chroot
mkdir -p "$CACHE"

if [ "$(id -u)" != 0 ]; then
  echo "image-check: run as root (buildah with vfs storage and chroot isolation)" >&2
  exit 2
fi
if [ ! -s "$CACHE/debian12.tar" ]; then
  echo "== mmdebstrap: Debian 12 base from $MIRROR"
  mmdebstrap --variant=minbase --mode=root --format=tar bookworm "$CACHE/debian12.tar.part" \
    "deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main" \
    "deb http://deb.debian.org/debian-security bookworm-security main"
  mv "$CACHE/debian12.tar.part" "$CACHE/debian12.tar"
fi
if ! buildah inspect --type image "$BASE" >/dev/null 2>&1; then
  echo "== buildah: import the base as $BASE"
  ctr=$(buildah from scratch)
  buildah add "$ctr" "$CACHE/debian12.tar" /
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --cmd /bin/bash "$ctr"
  buildah commit --rm "$ctr" "$BASE"
fi

echo "== buildah bud: the Dockerfile on $BASE"
buildah bud --pull=never --layers --build-arg DEBIAN_IMAGE="$BASE" -t "$IMAGE" .

echo "== inside the image"
ctr=$(buildah from --pull-never "$IMAGE")
trap 'buildah rm "$ctr" >/dev/null' EXIT
buildah run "$ctr" -- /usr/local/bin/gpufair version
buildah copy --chown 65532:65532 "$ctr" examples/cluster-4x10.yaml /tmp/cluster.yaml
# serve in the background on a port it picks, then the probe against its health endpoints, all
# in one container run (the host's network: chroot isolation).
buildah run "$ctr" -- /bin/bash -c '
  /usr/local/bin/gpufair serve --cluster /tmp/cluster.yaml --listen 127.0.0.1:0 \
    --metrics-listen off >/tmp/serve.log 2>&1 &
  pid=$!
  url=
  for _ in $(seq 100); do
    url=$(grep -o "webhooks on http://127.0.0.1:[0-9]*" /tmp/serve.log | head -n1 | cut -d" " -f3)
    [ -n "$url" ] && break
    sleep 0.1
  done
  rc=1
  if [ -n "$url" ]; then
    /usr/local/bin/gpufair-probe "$url/healthz" && /usr/local/bin/gpufair-probe "$url/readyz" \
      && echo "gpufair-probe $url/healthz and /readyz: ok" && rc=0
  fi
  kill $pid; wait $pid 2>/dev/null
  [ $rc = 0 ] || cat /tmp/serve.log
  exit $rc'
echo "probe: ok"
echo "image-check: ok: $(buildah images --format '{{.Name}}:{{.Tag}} {{.Size}}' "$IMAGE")"
