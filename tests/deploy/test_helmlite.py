"""The renderer itself: the Go-template subset behaves as Go and Helm do, and refuses the rest."""
import unittest

from deploy_support import helmlite

TemplateError = helmlite.TemplateError


def render(text, values=None, defines=""):
    body, defs = helmlite.parse_template(defines + text, "t.yaml")
    ctx = {"Values": helmlite.ints_to_floats(values or {}),
           "Release": {"Name": "rel", "Namespace": "ns"},
           "Chart": {"Name": "gpufair", "Version": "0.1.0", "AppVersion": "0.1.0"}}
    return helmlite.Renderer(defs).render(body, ctx, {"$": ctx})


class RenderTest(unittest.TestCase):
    CASES = [
        # (name, template, values, expected)
        ("plain text", "a: 1\n", {}, "a: 1\n"),
        ("value", "{{ .Values.x }}", {"x": "y"}, "y"),
        ("integers from values print without a decimal point", "{{ .Values.n }}", {"n": 9090},
         "9090"),
        ("large numbers print as Go does", "{{ .Values.n }}", {"n": 1000000}, "1e+06"),
        ("negative numbers", "{{ .Values.n }}", {"n": -100}, "-100"),
        ("fractions", "{{ .Values.n }}", {"n": 0.5}, "0.5"),
        ("booleans", "{{ .Values.b }}", {"b": True}, "true"),
        ("a missing value prints empty", "[{{ .Values.nope }}]", {}, "[]"),
        ("trim left and right", "a\n  {{- .Values.x -}}  \nb", {"x": "X"}, "aXb"),
        ("comment", "a{{/* ignored */}}b", {}, "ab"),
        ("if true", "{{ if .Values.on }}yes{{ end }}", {"on": True}, "yes"),
        ("if empty string is false", "{{ if .Values.s }}yes{{ else }}no{{ end }}", {"s": ""},
         "no"),
        ("if zero is false", "{{ if .Values.n }}yes{{ else }}no{{ end }}", {"n": 0}, "no"),
        ("else if", "{{ if .Values.a }}a{{ else if .Values.b }}b{{ else }}c{{ end }}",
         {"a": False, "b": True}, "b"),
        ("with rebinds dot", "{{ with .Values.m }}{{ .k }}{{ end }}", {"m": {"k": "v"}}, "v"),
        ("with skips empty", "{{ with .Values.m }}x{{ else }}none{{ end }}", {"m": {}}, "none"),
        ("range over a list", "{{ range .Values.l }}<{{ . }}>{{ end }}", {"l": ["a", "b"]},
         "<a><b>"),
        ("range over a map in key order", "{{ range $k, $v := .Values.m }}{{ $k }}={{ $v }};"
         "{{ end }}", {"m": {"b": 2, "a": 1}}, "a=1;b=2;"),
        ("root from inside range", "{{ range .Values.l }}{{ $.Release.Name }}{{ end }}",
         {"l": [1, 2]}, "relrel"),
        ("variables", "{{- $n := printf \"%s-x\" .Release.Name -}}{{ $n }}", {}, "rel-x"),
        ("pipeline passes the value last", "{{ .Values.s | trunc 3 | quote }}",
         {"s": "abcdef"}, '"abc"'),
        ("default on empty", "{{ .Values.t | default \"d\" }}", {"t": ""}, "d"),
        ("default keeps a value", "{{ .Values.t | default \"d\" }}", {"t": "v"}, "v"),
        ("toYaml sorts keys and nindent indents", "x:{{ toYaml .Values.m | nindent 2 }}",
         {"m": {"b": 1, "a": [1, 2]}}, "x:\n  a:\n  - 1\n  - 2\n  b: 1"),
        ("toYaml prints integral numbers as integers", "{{ toYaml .Values.m }}",
         {"m": {"n": 20}}, "n: 20"),
        ("include", "{{ include \"n\" . }}", {}, "gpufair",),
        ("parenthesised pipeline", "{{ printf \"%s:%s\" .Release.Name (.Values.t | default "
         "\"latest\") }}", {}, "rel:latest"),
        ("eq and ne", "{{ if eq .Values.m \"on\" }}1{{ end }}{{ if ne .Values.m \"off\" }}2"
         "{{ end }}", {"m": "on"}, "12"),
        ("and returns the first false value", "{{ and .Values.a .Values.b }}",
         {"a": "x", "b": ""}, ""),
        ("or returns the first true value", "{{ or .Values.a .Values.b }}", {"a": "", "b": "y"},
         "y"),
        ("not", "{{ not .Values.a }}", {"a": False}, "true"),
        ("contains", "{{ if contains \"fair\" .Release.Name }}y{{ else }}n{{ end }}", {}, "n"),
        ("sha256sum", "{{ \"abc\" | sha256sum }}", {},
         "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
    ]

    def test_cases(self):
        for name, text, values, want in self.CASES:
            with self.subTest(name):
                got = render(text, values, defines='{{- define "n" -}}{{ .Chart.Name }}'
                                                   '{{- end -}}')
                self.assertEqual(got, want)


class RefusalTest(unittest.TestCase):
    CASES = [
        ("unknown function", "{{ lookup \"v1\" \"Pod\" \"\" \"\" }}", {}, "outside"),
        ("tpl is outside the subset", "{{ tpl \"x\" . }}", {}, "tpl"),
        ("field of a missing value", "{{ .Values.a.b }}", {}, "cannot read .b"),
        ("unterminated block", "{{ if .Values.a }}x", {}, "has no end"),
        ("end without a block", "x{{ end }}", {}, "end without"),
        ("undefined variable", "{{ $nope }}", {}, "undefined variable"),
        ("comparing a number from values with an int literal", "{{ if eq .Values.n 1 }}{{ end }}",
         {"n": 1}, "incompatible types"),
        ("required", "{{ required \"give x\" .Values.x }}", {}, "give x"),
        ("fail", "{{ fail \"stop here\" }}", {}, "stop here"),
        ("printing a map", "{{ .Values.m }}", {"m": {"a": 1}}, "use toYaml"),
        ("include of an unknown template", "{{ include \"nope\" . }}", {}, "no template"),
        ("malformed action", "{{ .Values.x ", {}, "malformed"),
        ("assignment to an outer variable", "{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ end }}", {},
         "assignment with ="),
    ]

    def test_cases(self):
        for name, text, values, message in self.CASES:
            with self.subTest(name):
                with self.assertRaises(TemplateError) as ctx:
                    render(text, values)
                self.assertIn(message, str(ctx.exception))


class ValuesTest(unittest.TestCase):
    def test_deep_merge_overrides_and_null_removes(self):
        base = {"a": {"b": 1, "c": 2}, "d": [1]}
        merged = helmlite.deep_merge(base, {"a": {"b": 9, "c": None}, "d": [2, 3]})
        self.assertEqual(merged, {"a": {"b": 9}, "d": [2, 3]})
        self.assertEqual(base, {"a": {"b": 1, "c": 2}, "d": [1]})  # not modified

    def test_go_float_formatting(self):
        cases = [(1.0, "1"), (9090.0, "9090"), (999999.0, "999999"), (1e6, "1e+06"),
                 (1234567.0, "1.234567e+06"), (0.5, "0.5"), (0.0001, "0.0001"),
                 (0.00001, "1e-05"), (-100.0, "-100"), (0.0, "0")]
        for value, want in cases:
            with self.subTest(value):
                self.assertEqual(helmlite.go_str(value), want)


if __name__ == "__main__":
    unittest.main()
