"""The webhook server's TLS as an administrator meets it, with the built binary and the openssl
and curl command-line tools: the cipher policy seen by `openssl s_client`, allowed client names,
the start-up banner's commands run as printed, and certificate rotation (SIGHUP and the periodic
check; a broken replacement keeps the old certificate)."""
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.request

from deploy_support import ROOT

BINARY = os.environ.get("GPUFAIR_BINARY", "")
CLUSTER = os.path.join(ROOT, "examples", "cluster-4x10.yaml")


def openssl(*args, **kwargs):
    return subprocess.run(["openssl", *args], capture_output=True, text=True, timeout=60,
                          **kwargs)


class Pki:
    """A CA and certificates it signs, written with the openssl CLI into a directory."""

    def __init__(self, directory):
        self.dir = directory
        self.serial = 0x1000
        done = openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                       "-nodes", "-days", "2", "-subj", "/CN=test-ca", "-keyout", self.path("ca.key"),
                       "-out", self.path("ca.crt"), "-addext",
                       "basicConstraints=critical,CA:TRUE", "-addext",
                       "keyUsage=critical,keyCertSign,cRLSign")
        assert done.returncode == 0, done.stderr

    def path(self, name):
        return os.path.join(self.dir, name)

    def issue(self, name, cn, usage, alt=None, rsa=False, serial=None):
        """Writes NAME.crt and NAME.key; returns the serial (hex, as openssl prints it)."""
        self.serial += 1
        serial = serial or self.serial
        key = ["-newkey", "rsa:2048"] if rsa else ["-newkey", "ec", "-pkeyopt",
                                                    "ec_paramgen_curve:P-256"]
        done = openssl("req", *key, "-nodes", "-subj", "/CN=" + cn, "-keyout",
                       self.path(name + ".key"), "-out", self.path(name + ".csr"))
        assert done.returncode == 0, done.stderr
        with open(self.path(name + ".ext"), "w") as f:
            f.write("extendedKeyUsage=%s\n" % usage)
            if alt:
                f.write("subjectAltName=%s\n" % alt)
        done = openssl("x509", "-req", "-in", self.path(name + ".csr"), "-CA", self.path("ca.crt"),
                       "-CAkey", self.path("ca.key"), "-set_serial", str(serial), "-days", "1",
                       "-extfile", self.path(name + ".ext"), "-out", self.path(name + ".crt"))
        assert done.returncode == 0, done.stderr
        return "%X" % serial


@unittest.skipUnless(BINARY, "GPUFAIR_BINARY is not set (ctest sets it)")
@unittest.skipUnless(shutil.which("openssl") and shutil.which("curl"), "needs openssl and curl")
class TlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.pki = Pki(cls.tmp.name)
        # An RSA server certificate: with it OpenSSL's defaults would accept RSA key exchange and
        # CBC suites, so a refusal is the policy's.
        cls.first_serial = cls.pki.issue("server", "gpufair", "serverAuth",
                                         "IP:127.0.0.1,DNS:localhost", rsa=True)
        shutil.copy(cls.pki.path("server.crt"), cls.pki.path("tls.crt"))
        shutil.copy(cls.pki.path("server.key"), cls.pki.path("tls.key"))
        cls.pki.issue("scheduler", "kube-scheduler", "clientAuth")
        cls.pki.issue("intruder", "random-workload", "clientAuth", "DNS:random-workload")
        cls.log = open(cls.pki.path("serve.log"), "w+")
        cls.server = subprocess.Popen(
            [BINARY, "serve", "--cluster", CLUSTER, "--listen", "127.0.0.1:0",
             "--metrics-listen", "127.0.0.1:0", "--tls-cert", cls.pki.path("tls.crt"),
             "--tls-key", cls.pki.path("tls.key"), "--client-ca", cls.pki.path("ca.crt"),
             "--client-allowed-names", "kube-scheduler", "--tls-reload-period", "200ms",
             "--reclaim", "off"],
            stdout=subprocess.PIPE, stderr=cls.log, text=True, cwd=ROOT)
        cls.banner = []
        for line in cls.server.stdout:
            cls.banner.append(line.rstrip("\n"))
            if line.startswith("Press Ctrl-C"):
                break
        text = "\n".join(cls.banner)
        m = re.search(r"webhooks on https://127\.0\.0\.1:(\d+)", text)
        if not m:
            cls.log.seek(0)
            raise AssertionError("no banner: %s\n%s" % (text, cls.log.read()))
        cls.port = int(m.group(1))
        cls.metrics_url = re.search(r"metrics on (http://\S+)", text).group(1)

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        cls.server.wait(timeout=30)
        cls.log.close()
        cls.tmp.cleanup()

    def s_client(self, *args, client="scheduler"):
        return openssl("s_client", "-connect", "127.0.0.1:%d" % self.port, "-CAfile",
                       self.pki.path("ca.crt"), "-cert", self.pki.path(client + ".crt"), "-key",
                       self.pki.path(client + ".key"), "-verify_return_error", "-ign_eof", *args,
                       input="GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")

    def served_serial(self):
        done = self.s_client("-tls1_3")
        cert = openssl("x509", "-noout", "-serial", input=done.stdout)
        return cert.stdout.strip().split("=")[-1].lstrip("0")

    def metric(self, name):
        with urllib.request.urlopen(self.metrics_url, timeout=10) as r:
            text = r.read().decode()
        m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
        return float(m.group(1)) if m else None

    def test_cipher_policy_with_openssl_s_client(self):
        for cipher, accepted in [("ECDHE-RSA-AES128-GCM-SHA256", True),
                                 ("ECDHE-RSA-CHACHA20-POLY1305", True),
                                 ("AES128-SHA", False), ("AES128-GCM-SHA256", False),
                                 ("ECDHE-RSA-AES128-SHA", False)]:
            with self.subTest(cipher):
                done = self.s_client("-tls1_2", "-cipher", cipher)
                self.assertEqual("HTTP/1.1 200" in done.stdout, accepted, done.stdout[-500:])
                if accepted:
                    self.assertIn("Cipher is " + cipher, done.stdout)
        done = self.s_client("-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0")
        self.assertNotIn("HTTP/1.1 200", done.stdout)
        done = self.s_client("-tls1_3")
        self.assertIn("HTTP/1.1 200", done.stdout)

    def test_only_the_allowed_client_name_is_served(self):
        before = self.metric('gpufair_webhook_events_total{event="client_name_refused"}') or 0
        done = self.s_client("-tls1_3", client="intruder")
        self.assertNotIn("HTTP/1.1 200", done.stdout)
        self.assertIn("HTTP/1.1 200", self.s_client("-tls1_3").stdout)
        after = self.metric('gpufair_webhook_events_total{event="client_name_refused"}')
        self.assertEqual(after, before + 1)

    def test_the_banners_commands_work_as_printed(self):
        commands = [line.split("try:", 1)[-1].strip() for line in self.banner
                    if line.startswith(" ") and line.lstrip().startswith(("try:", "curl",
                                                                          "gpufair"))]
        self.assertEqual(len(commands), 3, self.banner)
        self.assertTrue(any("CLIENT.pem" in line and self.pki.path("ca.crt") in line
                            for line in self.banner), self.banner)
        for command in commands:
            with self.subTest(command):
                argv = shlex.split(command.replace("CLIENT.pem", self.pki.path("scheduler.crt"))
                                   .replace("CLIENT-KEY.pem", self.pki.path("scheduler.key")))
                if argv[0] == "gpufair":
                    argv = [BINARY] + argv[1:] + ["--once"]  # the printed one refreshes forever
                done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=ROOT)
                self.assertEqual(done.returncode, 0, done.stderr)
                self.assertTrue(done.stdout.strip(), command)
                if argv[0] == "curl":
                    self.assertTrue(done.stdout.startswith("{"), done.stdout[:300])
        # Without the client certificate top says what to check.
        top = [c for c in commands if c.startswith("gpufair")][0]
        argv = shlex.split(top.split(" --cert ")[0])
        done = subprocess.run([BINARY] + argv[1:] + ["--once"], capture_output=True, text=True,
                              timeout=60)
        self.assertEqual(done.returncode, 1)
        self.assertIn("--cert and --key", done.stderr)

    def test_rotation_sighup_and_a_broken_replacement(self):
        self.assertGreater(self.metric("gpufair_tls_certificate_expiry_seconds"), 3600)
        served = self.served_serial()
        new = self.pki.issue("renewed", "gpufair", "serverAuth", "IP:127.0.0.1,DNS:localhost",
                             rsa=True)
        self.assertNotEqual(served, new)
        # A renewal as kubectl cp or an editor makes it: the same paths, new contents.
        shutil.copy(self.pki.path("renewed.key"), self.pki.path("tls.key"))
        shutil.copy(self.pki.path("renewed.crt"), self.pki.path("tls.crt"))
        self.server.send_signal(1)  # SIGHUP
        deadline = time.time() + 10
        while self.served_serial() != new and time.time() < deadline:
            time.sleep(0.1)
        self.assertEqual(self.served_serial(), new)
        errors = self.metric("gpufair_tls_reload_errors_total")
        with open(self.pki.path("tls.crt"), "w") as f:
            f.write("-----BEGIN CERTIFICATE-----\nbroken\n-----END CERTIFICATE-----\n")
        deadline = time.time() + 10
        while self.metric("gpufair_tls_reload_errors_total") == errors and time.time() < deadline:
            time.sleep(0.1)
        self.assertEqual(self.metric("gpufair_tls_reload_errors_total"), errors + 1)
        self.assertEqual(self.served_serial(), new, "the old certificate stays in service")
        ready = subprocess.run(
            ["curl", "-s", "--cacert", self.pki.path("ca.crt"), "--cert",
             self.pki.path("scheduler.crt"), "--key", self.pki.path("scheduler.key"),
             "https://127.0.0.1:%d/readyz" % self.port], capture_output=True, text=True,
            timeout=30)
        self.assertIn('"status":"ready"', ready.stdout)
        self.assertRegex(ready.stdout, r'"message":"a changed certificate was refused[^"]*",'
                                       r'"name":"tls","ok":false')
        shutil.copy(self.pki.path("renewed.crt"), self.pki.path("tls.crt"))  # repaired


if __name__ == "__main__":
    unittest.main()
