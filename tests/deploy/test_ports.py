"""Every test that starts `gpufair serve` binds port 0 for both listeners, so no test depends on a
free fixed port (a `serve` left on the default metrics port 9090 fails whenever something else holds
it). Reads the test sources; a new test that starts serve is held to the same rule."""
import glob
import os
import re
import unittest

ROOT = os.environ.get("GPUFAIR_SOURCE_DIR",
                      os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

# A serve process started by a test: the argument list that follows the word "serve".
SERVE_START = re.compile(r'["\']serve["\']\s*,\s*["\']--(cluster|kubeconfig)["\']')


def serve_launches():
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "**", "*.*"), recursive=True)):
        if not path.endswith((".py", ".cc", ".sh")) or "layering_fixture" in path:
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for m in SERVE_START.finditer(text):
            # The launch's arguments: up to the end of the statement.
            end = min(i for i in (text.find("]", m.end()), text.find("}", m.end()), len(text))
                      if i >= 0)
            yield path, text.count("\n", 0, m.start()) + 1, text[m.start():end]


class PortsTest(unittest.TestCase):
    def test_the_scan_finds_the_serve_launches(self):
        self.assertGreaterEqual(len(list(serve_launches())), 2)

    def test_every_serve_a_test_starts_binds_port_zero(self):
        for path, line, args in serve_launches():
            with self.subTest("%s:%d" % (os.path.relpath(path, ROOT), line)):
                if "--help" in args or "no-such-strategy" in args:
                    continue  # exits before it listens
                self.assertRegex(args, r'"--listen",\s*"127\.0\.0\.1:0"')
                self.assertRegex(args, r'"--metrics-listen",\s*"(127\.0\.0\.1:0|off)"')


if __name__ == "__main__":
    unittest.main()
