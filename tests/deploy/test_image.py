"""The Dockerfile, checked without a Docker engine: two Debian 12 stages, a non-root final stage,
and a runtime package list equal to what the built gpufair binary links (ldd + dpkg -S)."""
import fnmatch
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from deploy_support import ROOT

BINARY = os.environ.get("GPUFAIR_BINARY", "")
BUILD_DIR = os.environ.get("GPUFAIR_BUILD_DIR", "")
DOCKERFILE = os.path.join(ROOT, "Dockerfile")

# Packages the final stage may list although the binary doesn't link them, and why.
EXTRA_RUNTIME = {
    "openssl": "gpufair-probe's https probes run openssl s_client",
}


def dockerfile():
    """(ARG defaults, [stages]): each stage is {"from", "name", "instructions": [(op, arg)]}."""
    with open(DOCKERFILE) as f:
        text = f.read()
    text = re.sub(r"\\\n", " ", text)  # join continuation lines
    args, stages = {}, []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        op, _, rest = line.partition(" ")
        op = op.upper()
        rest = rest.strip()
        if op == "FROM":
            parts = rest.split()
            stages.append({"from": parts[0], "name": parts[2] if len(parts) > 2 else None,
                           "instructions": []})
        elif op == "ARG" and not stages:
            name, _, value = rest.partition("=")
            args[name] = value.strip('"')
        elif stages:
            stages[-1]["instructions"].append((op, rest))
    return args, stages


def stage_arg(stage, name):
    for op, rest in stage["instructions"]:
        if op == "ARG" and rest.startswith(name + "="):
            return rest.split("=", 1)[1].strip().strip('"')
    return None


def runtime_packages():
    _, stages = dockerfile()
    value = stage_arg(stages[-1], "RUNTIME_PACKAGES")
    return set(value.split()) if value else set()


def owning_packages(libs):
    """{library path: the Debian package that ships it}, usrmerge-aware, from one dpkg -S."""
    candidates = {}
    for lib in libs:
        forms = {lib, os.path.realpath(lib)}
        for c in list(forms):
            forms.add(c[4:] if c.startswith("/usr/") else "/usr" + c)
        for c in forms:
            candidates[c] = lib
    out = subprocess.run(["dpkg", "-S"] + sorted(candidates), capture_output=True, text=True)
    owners = {}
    for line in out.stdout.splitlines():
        pkgs, _, path = line.partition(": ")
        if path in candidates and "," not in pkgs:
            owners[candidates[path]] = pkgs.split(":", 1)[0].strip()
    return owners


def linked_libraries(binary):
    """(directly needed library paths, all library paths) of a binary, from objdump and ldd."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    by_soname = {}
    for line in out.splitlines():
        if "not found" in line:
            raise AssertionError("ldd: " + line.strip())
        m = re.match(r"\s*(\S+)\s+=>\s+(/\S+)", line)
        if m:
            by_soname[m.group(1)] = m.group(2)
    dump = subprocess.run(["objdump", "-p", binary], capture_output=True, text=True,
                          check=True).stdout
    direct = [by_soname[n] for n in re.findall(r"^\s*NEEDED\s+(\S+)", dump, re.M)]
    return direct, sorted(by_soname.values())


def apt_closure(packages):
    """The packages apt installs for `packages` (Depends and Pre-Depends, recursively), or None
    without apt package lists."""
    out = subprocess.run(["apt-cache", "depends", "--recurse", "--no-recommends",
                          "--no-suggests", "--no-conflicts", "--no-breaks", "--no-replaces",
                          "--no-enhances"] + sorted(packages), capture_output=True, text=True)
    if out.returncode != 0:
        return None
    closure = set(packages)
    for line in out.stdout.splitlines():
        m = re.match(r"\s+\|?(?:Pre)?Depends:\s+<?([^\s>:]+)", line)
        if m:
            closure.add(m.group(1))
        elif not line.startswith(" "):
            closure.add(line.strip())
    return closure


def dockerignore_allows(path):
    """Whether a path is sent to the build (last matching .dockerignore rule wins)."""
    with open(os.path.join(ROOT, ".dockerignore")) as f:
        rules = [l.strip() for l in f if l.strip() and not l.startswith("#")]
    allowed = True
    parts = path.strip("/").split("/")
    for rule in rules:
        negate = rule.startswith("!")
        pattern = rule.lstrip("!").rstrip("/")
        for i in range(1, len(parts) + 1):  # a rule on a directory covers what is inside
            if fnmatch.fnmatch("/".join(parts[:i]), pattern):
                allowed = negate
                break
    return allowed


class DockerfileTest(unittest.TestCase):
    def test_stages(self):
        args, stages = dockerfile()
        self.assertEqual(args.get("DEBIAN_IMAGE"), "debian:12-slim")
        self.assertEqual(len(stages), 2)
        for stage in stages:
            self.assertEqual(stage["from"], "${DEBIAN_IMAGE}")
        build, final = stages
        runs = " ".join(rest for op, rest in build["instructions"] if op == "RUN")
        self.assertIn("make deps", runs)  # the Makefile's DEB_PACKAGES, one list for all
        self.assertIn("-DCMAKE_BUILD_TYPE=Release", runs)
        self.assertIn("--target gpufair", runs)

    def test_final_stage_is_small_and_unprivileged(self):
        _, stages = dockerfile()
        final = stages[-1]["instructions"]
        users = [rest for op, rest in final if op == "USER"]
        self.assertEqual(users, ["65532:65532"])
        entry = [rest for op, rest in final if op == "ENTRYPOINT"]
        self.assertEqual(entry, ['["/usr/local/bin/gpufair"]'])
        copies = [rest for op, rest in final if op == "COPY"]
        self.assertIn("--from=build /build/src/app/gpufair /usr/local/bin/gpufair", copies)
        for c in copies:  # no sources, no build tree: the binary and the probe only
            self.assertTrue("--from=build" in c or "gpufair-probe" in c, c)
        runs = " ".join(rest for op, rest in final if op == "RUN")
        self.assertIn("--no-install-recommends", runs)
        self.assertIn("rm -rf /var/lib/apt/lists/*", runs)
        for dev in [p for p in runtime_packages() if p.endswith("-dev")]:
            self.fail("the final stage installs a -dev package: " + dev)

    def test_build_context_holds_what_copy_needs(self):
        _, stages = dockerfile()
        for stage in stages:
            for op, rest in stage["instructions"]:
                if op != "COPY" or "--from=" in rest:
                    continue
                sources = [s for s in rest.split() if not s.startswith("--")][:-1]
                for src in sources:
                    with self.subTest(src):
                        self.assertTrue(os.path.exists(os.path.join(ROOT, src)), src)
                        self.assertTrue(dockerignore_allows(src), "%s is in .dockerignore" % src)
        self.assertFalse(dockerignore_allows("build/src/app/gpufair"))
        self.assertFalse(dockerignore_allows(".git/config"))

    def test_build_stage_configures_from_what_it_copies(self):
        """CMake configures the Release build from only the files the build stage copies, so the
        image build doesn't depend on anything .dockerignore leaves out."""
        if not shutil.which("cmake") or not shutil.which("ninja"):
            self.skipTest("cmake or ninja is not installed")
        _, stages = dockerfile()
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "src")
            os.makedirs(src)
            for op, rest in stages[0]["instructions"]:
                if op != "COPY":
                    continue
                *sources, dest = rest.split()
                for item in sources:
                    target = os.path.join(src, dest.rstrip("/").lstrip("./"),
                                          os.path.basename(item)) if dest.endswith("/") and \
                        dest != "./" else os.path.join(src, dest if dest != "./" else item)
                    if os.path.isdir(os.path.join(ROOT, item)):
                        shutil.copytree(os.path.join(ROOT, item), target)
                    else:
                        os.makedirs(os.path.dirname(target), exist_ok=True)
                        shutil.copy(os.path.join(ROOT, item), target)
            build = os.path.join(tmp, "build")
            out = subprocess.run(["cmake", "-S", src, "-B", build, "-G", "Ninja",
                                  "-DCMAKE_BUILD_TYPE=Release", "-DGPUFAIR_BUILD_TESTS=OFF",
                                  "-DGPUFAIR_BUILD_BENCH=OFF"], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            targets = subprocess.run(["ninja", "-C", build, "-t", "targets", "all"],
                                     capture_output=True, text=True).stdout
            self.assertRegex(targets, r"(?m)^src/app/gpufair: ")

    def test_probe_is_executable(self):
        probe = os.path.join(ROOT, "deploy", "image", "gpufair-probe")
        self.assertTrue(os.access(probe, os.X_OK))


def copied_paths():
    """Source-tree paths the build stage copies (files or directories)."""
    _, stages = dockerfile()
    paths = []
    for op, rest in stages[0]["instructions"]:
        if op == "COPY" and "--from=" not in rest:
            paths += [p for p in rest.split() if not p.startswith("--")][:-1]
    return paths


@unittest.skipUnless(BUILD_DIR and shutil.which("ninja"), "GPUFAIR_BUILD_DIR is not set")
class BuildContextTest(unittest.TestCase):
    def test_every_file_compiled_into_gpufair_is_copied(self):
        """From the build's own dependency records (ninja -t inputs, -t deps): every source and
        header of the project that goes into gpufair is in a path the build stage copies."""
        inputs = subprocess.run(["ninja", "-C", BUILD_DIR, "-t", "inputs", "src/app/gpufair"],
                                capture_output=True, text=True, check=True).stdout.split()
        objects = [i for i in inputs if i.endswith(".o")]
        self.assertGreater(len(objects), 10)
        deps = subprocess.run(["ninja", "-C", BUILD_DIR, "-t", "deps"] + objects,
                              capture_output=True, text=True, check=True).stdout
        files = set()
        for line in deps.splitlines():
            if line.startswith((" ", "\t")):
                path = os.path.normpath(os.path.join(BUILD_DIR, line.strip()))
                if path.startswith(ROOT + os.sep) and not path.startswith(
                        os.path.abspath(BUILD_DIR) + os.sep):
                    files.add(os.path.relpath(path, ROOT))
        self.assertTrue(any(f.startswith("include/") for f in files), sorted(files)[:5])
        copied = copied_paths()
        outside = sorted(f for f in files
                         if not any(f == c or f.startswith(c.rstrip("/") + "/") for c in copied)
                         or not dockerignore_allows(f))
        self.assertEqual(outside, [], "compiled into gpufair but not in the image's build stage")


@unittest.skipUnless(BINARY, "GPUFAIR_BINARY is not set (ctest sets it)")
class RuntimeLibrariesTest(unittest.TestCase):
    def test_every_linked_library_is_installed_and_nothing_else(self):
        listed = runtime_packages()
        direct, everything = linked_libraries(BINARY)
        owners = owning_packages(everything)
        for lib in everything:
            self.assertIn(lib, owners, "no Debian package ships %s" % lib)
        needed = {}
        for lib in direct:
            needed.setdefault(owners[lib], []).append(lib)
        missing = sorted("%s (for %s)" % (p, ", ".join(libs)) for p, libs in needed.items()
                         if p not in listed)
        self.assertEqual(missing, [], "add to RUNTIME_PACKAGES in the Dockerfile")
        unneeded = sorted(p for p in listed if p not in needed and p not in EXTRA_RUNTIME)
        self.assertEqual(unneeded, [], "the binary doesn't link these directly; drop them")
        closure = apt_closure(listed)
        if closure is None:
            self.skipTest("apt-cache has no package lists here (run apt-get update)")
        # Libraries of libraries (brotli, zlib, ...) come in as apt dependencies.
        stray = sorted("%s (%s)" % (owners[lib], lib) for lib in everything
                       if owners[lib] not in closure)
        self.assertEqual(stray, [], "linked, but no listed package depends on them")

    def test_listed_packages_exist_in_debian(self):
        known = subprocess.run(["apt-cache", "show", "libc6"], capture_output=True)
        if known.returncode != 0:
            self.skipTest("apt-cache has no package lists here (run apt-get update)")
        listed = sorted(runtime_packages())
        if subprocess.run(["apt-cache", "show"] + listed, capture_output=True).returncode != 0:
            for pkg in listed:
                with self.subTest(pkg):
                    out = subprocess.run(["apt-cache", "show", pkg], capture_output=True)
                    self.assertEqual(out.returncode, 0, "%s: not a Debian package" % pkg)
        # What the final stage's apt-get install does, simulated: every package resolves.
        simulated = subprocess.run(["apt-get", "install", "-s", "-qq", "--no-install-recommends"]
                                   + listed, capture_output=True, text=True)
        self.assertEqual(simulated.returncode, 0, simulated.stderr)

if __name__ == "__main__":
    unittest.main()
