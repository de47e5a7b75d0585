#!/usr/bin/env python3
"""helmlite: renders a Helm chart whose templates keep to a documented subset of Go templates.

There is no helm binary on CI (a clean Debian 12 without internet access beyond Debian packages),
so the deployment checks render deploy/helm/gpufair with this module. It implements only the
subset documented in deploy/helm/README.md, and implements it strictly: anything outside the
subset (an unknown function, a field of a missing value, comparing a number with a string) is an
error, so templates that render here render the same way with Helm.

Like Helm: values.yaml deep-merged with -f files (a null removes a key), numbers from values are
float64 (printed as Go prints them), toYaml trims its trailing newline, and files under templates/
whose names start with "_" only define named templates.

Usage: helmlite.py CHART_DIR [--release NAME] [--namespace NS] [-f VALUES.yaml]... [--notes]
"""
import argparse
import copy
import decimal
import hashlib
import json
import math
import os
import re
import sys

import yaml


class TemplateError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Lexing: text and {{ actions }}, with Go's trim markers "{{- " and " -}}".

ACTION_RE = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.S)


def split_actions(text, name):
    """Yields ("text", str) and ("action", str, line) pieces, trimming whitespace as Go does."""
    pieces = []
    pos = 0
    for m in ACTION_RE.finditer(text):
        chunk = text[pos:m.start()]
        if m.group(1):
            chunk = chunk.rstrip(" \t\r\n")
        pieces.append(["text", chunk])
        line = text.count("\n", 0, m.start()) + 1
        pieces.append(["action", m.group(2).strip(), "%s:%d" % (name, line), bool(m.group(3))])
        pos = m.end()
    pieces.append(["text", text[pos:]])
    out = []
    trim_next = False
    for p in pieces:
        if p[0] == "text":
            if trim_next:
                p[1] = p[1].lstrip(" \t\r\n")
            out.append(("text", p[1]))
            trim_next = False
        else:
            out.append(("action", p[1], p[2]))
            trim_next = p[3]
    if "{{" in "".join(p[1] for p in out if p[0] == "text"):
        raise TemplateError("%s: an unterminated or malformed {{ action" % name)
    return out


TOKEN_RE = re.compile(r"""
    (?P<ws>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<raw>`[^`]*`)
  | (?P<number>-?\d+(?:\.\d+)?)
  | (?P<declare>:=)
  | (?P<assign>=)
  | (?P<pipe>\|)
  | (?P<lparen>\()
  | (?P<rparen>\))
  | (?P<comma>,)
  | (?P<var>\$[A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<field>(?:\.[A-Za-z_][A-Za-z0-9_]*)+|\.)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
""", re.X)


def tokenize(src, where):
    tokens = []
    pos = 0
    while pos < len(src):
        m = TOKEN_RE.match(src, pos)
        if not m:
            raise TemplateError("%s: cannot read %r" % (where, src[pos:pos + 20]))
        pos = m.end()
        kind = m.lastgroup
        if kind == "ws":
            continue
        text = m.group()
        if kind == "field" and tokens and tokens[-1][0] == "rparen" and src[m.start() - 1] == ")":
            kind = "chain"  # (pipeline).field
        tokens.append((kind, text))
    return tokens


# ---------------------------------------------------------------------------------------------
# Parsing: a tree of nodes.

class Parser:
    def __init__(self, tokens, where):
        self.t = tokens
        self.i = 0
        self.where = where

    def peek(self, k=0):
        return self.t[self.i + k] if self.i + k < len(self.t) else (None, None)

    def take(self, kind=None):
        tok = self.peek()
        if tok[0] is None or (kind and tok[0] != kind):
            raise TemplateError("%s: expected %s, found %r" % (self.where, kind or "more",
                                                               tok[1]))
        self.i += 1
        return tok

    def done(self):
        return self.i >= len(self.t)

    def pipeline(self, allow_decl=True):
        decl = None
        if allow_decl and self.peek()[0] == "var":
            names = [self.peek()[1]]
            k = 1
            if self.peek(1)[0] == "comma" and self.peek(2)[0] == "var":
                names.append(self.peek(2)[1])
                k = 3
            if self.peek(k)[0] in ("declare", "assign"):
                decl = (names, self.peek(k)[0])
                self.i += k + 1
        cmds = [self.command()]
        while self.peek()[0] == "pipe":
            self.take()
            cmds.append(self.command())
        return ("pipeline", decl, cmds)

    def command(self):
        args = []
        while self.peek()[0] not in (None, "pipe", "rparen"):
            args.append(self.operand())
        if not args:
            raise TemplateError("%s: empty command" % self.where)
        return args

    def operand(self):
        kind, text = self.take()
        if kind == "string":
            node = ("lit", json.loads(text))
        elif kind == "raw":
            node = ("lit", text[1:-1])
        elif kind == "number":
            node = ("lit", float(text) if "." in text else int(text))
        elif kind == "field":
            node = ("field", None, [] if text == "." else text[1:].split("."))
        elif kind == "var":
            head, *rest = text.split(".")
            node = ("field", head, rest)
        elif kind == "ident":
            node = {"true": ("lit", True), "false": ("lit", False),
                    "nil": ("lit", None)}.get(text, ("func", text))
        elif kind == "lparen":
            inner = self.pipeline(allow_decl=False)
            self.take("rparen")
            node = ("paren", inner)
            if self.peek()[0] == "chain":
                node = ("chain", node, self.take()[1][1:].split("."))
        else:
            raise TemplateError("%s: unexpected %r" % (self.where, text))
        return node


def parse_template(text, name):
    """Returns (body nodes, {define name: body nodes})."""
    defines = {}
    root = []
    stack = [("root", root, None)]

    def cur():
        return stack[-1][1]

    for piece in split_actions(text, name):
        if piece[0] == "text":
            if piece[1]:
                cur().append(("text", piece[1]))
            continue
        src, where = piece[1], piece[2]
        if src.startswith("/*"):
            if not src.endswith("*/"):
                raise TemplateError("%s: unterminated comment" % where)
            continue
        tokens = tokenize(src, where)
        if not tokens:
            raise TemplateError("%s: empty action" % where)
        p = Parser(tokens, where)
        kw = tokens[0][1] if tokens[0][0] == "ident" else None
        if kw in ("if", "range", "with"):
            p.take()
            node = {"kind": kw, "branches": [], "else": None, "where": where}
            body = []
            node["branches"].append((p.pipeline(), body))
            cur().append(("block", node))
            stack.append((kw, body, node))
        elif kw == "else":
            p.take()
            kind, _, node = stack[-1]
            if node is None:
                raise TemplateError("%s: else outside if/range/with" % where)
            body = []
            if not p.done():
                if p.take("ident")[1] != "if" or kind != "if":
                    raise TemplateError("%s: only 'else if' may follow else" % where)
                node["branches"].append((p.pipeline(), body))
            else:
                node["else"] = body
            stack[-1] = (kind, body, node)
        elif kw == "end":
            p.take()
            if len(stack) == 1:
                raise TemplateError("%s: end without a block" % where)
            stack.pop()
        elif kw == "define":
            p.take()
            define_name = json.loads(p.take("string")[1])
            body = []
            defines[define_name] = body
            stack.append(("define", body, {"kind": "define", "where": where}))
        elif kw == "template":
            p.take()
            define_name = json.loads(p.take("string")[1])
            arg = p.pipeline(allow_decl=False) if not p.done() else None
            cur().append(("template", define_name, arg, where))
        elif kw in ("block", "break", "continue"):
            raise TemplateError("%s: '%s' is outside helmlite's subset" % (where, kw))
        else:
            pipe = p.pipeline()
            cur().append(("action", pipe, where))
        if not p.done():
            raise TemplateError("%s: unexpected %r" % (where, p.peek()[1]))
    if len(stack) != 1:
        raise TemplateError("%s: %s opened at %s has no end" % (name, stack[-1][0],
                                                               stack[-1][2]["where"]))
    return root, defines


# ---------------------------------------------------------------------------------------------
# Evaluation.

def truthy(v):
    if v is None or v is False:
        return False
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v != 0
    if isinstance(v, (str, list, dict)):
        return len(v) > 0
    return True


def go_str(v):
    """Formats a value as Go's fmt %v does for the kinds values can hold."""
    if v is None:
        return ""  # Helm renders a missing value as an empty string
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return go_float(v)
    if isinstance(v, str):
        return v
    raise TemplateError("cannot print a %s (%r): use toYaml" % (type(v).__name__, v))


def go_float(v):
    """strconv.FormatFloat(v, 'g', -1, 64): shortest digits, an exponent from 1e+06 on."""
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if math.isnan(v):
        return "NaN"
    if v == 0:
        return "0"
    sign, digits, exp10 = decimal.Decimal(repr(abs(v))).normalize().as_tuple()
    digs = "".join(str(d) for d in digits)
    nd = len(digs)
    dp = nd + exp10  # v = 0.digs x 10^dp
    exp = dp - 1
    prefix = "-" if v < 0 else ""
    if exp < -4 or exp >= 6:
        mantissa = digs[0] + ("." + digs[1:] if nd > 1 else "")
        return "%s%se%s%02d" % (prefix, mantissa, "+" if exp >= 0 else "-", abs(exp))
    if dp >= nd:
        return prefix + digs + "0" * (dp - nd)
    if dp <= 0:
        return prefix + "0." + "0" * (-dp) + digs
    return prefix + digs[:dp] + "." + digs[dp:]


def is_empty(v):
    return not truthy(v)


def go_quote(v):
    return json.dumps(go_str(v), ensure_ascii=False)


def integral_floats_to_int(v):
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, list):
        return [integral_floats_to_int(x) for x in v]
    if isinstance(v, dict):
        return {k: integral_floats_to_int(x) for k, x in v.items()}
    return v


def to_yaml(v):
    if v is None:
        return "null"
    text = yaml.safe_dump(integral_floats_to_int(v), default_flow_style=False, sort_keys=True,
                          allow_unicode=True, width=1 << 20)
    if text.endswith("\n...\n"):
        text = text[:-5]
    return text.rstrip("\n")


def indent(n, s):
    pad = " " * int(n)
    return pad + go_str(s).replace("\n", "\n" + pad)


def compare_args(a, b, op):
    na = isinstance(a, (int, float)) and not isinstance(a, bool)
    nb = isinstance(b, (int, float)) and not isinstance(b, bool)
    if na and nb:
        if isinstance(a, float) != isinstance(b, float):
            raise TemplateError("%s: incompatible types for comparison (%r, %r): values are "
                                "float64, use float literals or int" % (op, a, b))
        return a, b
    if type(a) is not type(b) and not (a is None or b is None):
        raise TemplateError("%s: incompatible types for comparison (%r, %r)" % (op, a, b))
    return a, b


def go_printf(fmt, *args):
    out = []
    i = 0
    args = list(args)
    while i < len(fmt):
        c = fmt[i]
        if c != "%":
            out.append(c)
            i += 1
            continue
        verb = fmt[i + 1] if i + 1 < len(fmt) else ""
        i += 2
        if verb == "%":
            out.append("%")
            continue
        if not args:
            raise TemplateError("printf %r: missing argument for %%%s" % (fmt, verb))
        a = args.pop(0)
        if verb in ("s", "v"):
            out.append(go_str(a))
        elif verb == "d":
            if not isinstance(a, int) or isinstance(a, bool):
                raise TemplateError("printf %%d needs an int, got %r" % (a,))
            out.append(str(a))
        elif verb == "q":
            out.append(go_quote(a))
        else:
            raise TemplateError("printf verb %%%s is outside helmlite's subset" % verb)
    if args:
        raise TemplateError("printf %r: too many arguments" % fmt)
    return "".join(out)


def fail(msg):
    raise TemplateError("fail: " + go_str(msg))


def required(msg, v):
    if v is None or v == "":
        raise TemplateError("required: " + go_str(msg))
    return v


def to_int(v):
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, float)):
        return int(v)
    if isinstance(v, str):
        try:
            return int(float(v))
        except ValueError:
            return 0
    return 0


def go_and(*args):
    for a in args:
        if not truthy(a):
            return a
    return args[-1]


def go_or(*args):
    for a in args:
        if truthy(a):
            return a
    return args[-1]


def go_eq(a, *bs):
    return any(compare_args(a, b, "eq")[0] == compare_args(a, b, "eq")[1] for b in bs)


def ordered(op, fn):
    def f(a, b):
        x, y = compare_args(a, b, op)
        if not isinstance(x, (int, float, str)):
            raise TemplateError("%s: cannot order %r" % (op, x))
        return fn(x, y)
    return f


def go_index(v, *keys):
    for k in keys:
        if isinstance(v, dict):
            v = v.get(k)
        elif isinstance(v, list):
            if not isinstance(k, int) or not 0 <= k < len(v):
                raise TemplateError("index %r out of range" % (k,))
            v = v[k]
        else:
            raise TemplateError("cannot index %r" % (v,))
    return v


def has_key(d, k):
    if not isinstance(d, dict):
        raise TemplateError("hasKey needs a map, got %r" % (d,))
    return k in d


FUNCS = {
    "toYaml": to_yaml,
    "nindent": lambda n, s: "\n" + indent(n, s),
    "indent": indent,
    "quote": lambda *a: " ".join(go_quote(x) for x in a if x is not None),
    "squote": lambda *a: " ".join("'" + go_str(x) + "'" for x in a if x is not None),
    "default": lambda d, *v: d if not v or is_empty(v[0]) else v[0],
    "empty": is_empty,
    "required": required,
    "fail": fail,
    "printf": go_printf,
    "print": lambda *a: "".join(go_str(x) for x in a),
    "toString": go_str,
    "int": to_int,
    "trunc": lambda n, s: go_str(s)[:int(n)] if int(n) >= 0 else go_str(s)[int(n):],
    "trimSuffix": lambda suf, s: s[:-len(suf)] if suf and s.endswith(suf) else s,
    "trimPrefix": lambda pre, s: s[len(pre):] if pre and s.startswith(pre) else s,
    "replace": lambda old, new, s: go_str(s).replace(old, new),
    "lower": lambda s: go_str(s).lower(),
    "upper": lambda s: go_str(s).upper(),
    "contains": lambda sub, s: sub in go_str(s),
    "hasPrefix": lambda pre, s: go_str(s).startswith(pre),
    "sha256sum": lambda s: hashlib.sha256(go_str(s).encode()).hexdigest(),
    "eq": go_eq,
    "ne": lambda a, b: not go_eq(a, b),
    "lt": ordered("lt", lambda x, y: x < y),
    "le": ordered("le", lambda x, y: x <= y),
    "gt": ordered("gt", lambda x, y: x > y),
    "ge": ordered("ge", lambda x, y: x >= y),
    "and": go_and,
    "or": go_or,
    "not": lambda v: not truthy(v),
    "len": lambda v: len(v) if isinstance(v, (str, list, dict)) else fail("len of %r" % (v,)),
    "index": go_index,
    "hasKey": has_key,
}


class Renderer:
    def __init__(self, defines):
        self.defines = defines
        self.depth = 0

    def render(self, nodes, dot, scope):
        out = []
        for node in nodes:
            kind = node[0]
            if kind == "text":
                out.append(node[1])
            elif kind == "action":
                _, pipe, where = node
                value = self.pipeline(pipe, dot, scope, where)
                if pipe[1] is None:
                    out.append(self.printable(value, where))
            elif kind == "template":
                _, name, arg, where = node
                data = self.pipeline(arg, dot, scope, where) if arg else None
                out.append(self.include(name, data, where))
            elif kind == "block":
                out.append(self.block(node[1], dot, scope))
        return "".join(out)

    def printable(self, value, where):
        try:
            return go_str(value)
        except TemplateError as e:
            raise TemplateError("%s: %s" % (where, e))

    def block(self, node, dot, scope):
        where = node["where"]
        if node["kind"] == "if":
            for pipe, body in node["branches"]:
                inner = dict(scope)
                if truthy(self.pipeline(pipe, dot, inner, where)):
                    return self.render(body, dot, inner)
            return self.render(node["else"], dot, dict(scope)) if node["else"] else ""
        pipe, body = node["branches"][0]
        inner = dict(scope)
        decl = pipe[1]
        value = self.pipeline(("pipeline", None, pipe[2]), dot, inner, where)
        if node["kind"] == "with":
            if truthy(value):
                if decl:
                    inner[decl[0][-1]] = value
                return self.render(body, value, inner)
            return self.render(node["else"], dot, dict(scope)) if node["else"] else ""
        # range over a list, or over a map in sorted key order (as Go does).
        if value is None or (isinstance(value, (list, dict)) and not value):
            return self.render(node["else"], dot, dict(scope)) if node["else"] else ""
        if isinstance(value, dict):
            items = [(k, value[k]) for k in sorted(value)]
        elif isinstance(value, list):
            items = list(enumerate(value))
        elif isinstance(value, int) and not isinstance(value, bool):
            items = list(enumerate(range(value)))
        else:
            raise TemplateError("%s: cannot range over %r" % (where, value))
        out = []
        for k, v in items:
            it = dict(inner)
            if decl:
                names = decl[0]
                if len(names) == 2:
                    it[names[0]], it[names[1]] = k, v
                else:
                    it[names[0]] = v
            out.append(self.render(body, v, it))
        return "".join(out)

    def include(self, name, data, where):
        if name not in self.defines:
            raise TemplateError("%s: no template named %r" % (where, name))
        self.depth += 1
        if self.depth > 100:
            raise TemplateError("%s: templates include each other too deeply" % where)
        try:
            return self.render(self.defines[name], data, {"$": data})
        finally:
            self.depth -= 1

    def pipeline(self, pipe, dot, scope, where):
        _, decl, cmds = pipe
        value = None
        for n, cmd in enumerate(cmds):
            value = self.command(cmd, dot, scope, where, value if n > 0 else _NONE)
        if decl:
            names, op = decl
            if op == "assign" and names[0] not in scope:
                raise TemplateError("%s: %s is not declared" % (where, names[0]))
            scope[names[-1]] = value
        return value

    def command(self, cmd, dot, scope, where, piped):
        head = cmd[0]
        if head[0] == "func":
            name = head[1]
            args = [self.operand(a, dot, scope, where) for a in cmd[1:]]
            if piped is not _NONE:
                args.append(piped)
            if name in ("include", "tpl"):
                if name == "tpl":
                    raise TemplateError("%s: tpl is outside helmlite's subset" % where)
                if len(args) != 2:
                    raise TemplateError("%s: include needs a name and a value" % where)
                return self.include(args[0], args[1], where)
            fn = FUNCS.get(name)
            if fn is None:
                raise TemplateError("%s: function %r is outside helmlite's subset" % (where, name))
            try:
                return fn(*args)
            except TemplateError as e:
                raise TemplateError("%s: %s" % (where, e))
            except TypeError as e:
                raise TemplateError("%s: %s: wrong arguments (%s)" % (where, name, e))
        if len(cmd) > 1 or piped is not _NONE:
            raise TemplateError("%s: %r is not a function" % (where, head))
        return self.operand(head, dot, scope, where)

    def operand(self, node, dot, scope, where):
        kind = node[0]
        if kind == "lit":
            return node[1]
        if kind == "paren":
            return self.pipeline(node[1], dot, dict(scope), where)
        if kind == "func":
            return self.command([node], dot, scope, where, _NONE)
        if kind == "chain":
            return self.walk(self.operand(node[1], dot, scope, where), node[2], where, "(...)")
        _, var, path = node
        if var is None:
            base, label = dot, "."
        else:
            if var not in scope:
                raise TemplateError("%s: undefined variable %s" % (where, var))
            base, label = scope[var], var
        return self.walk(base, path, where, label)

    def walk(self, base, path, where, label):
        value = base
        for i, key in enumerate(path):
            if not isinstance(value, dict):
                raise TemplateError("%s: %s%s: cannot read .%s of %r" % (
                    where, label, "".join("." + p for p in path[:i]), key, value))
            value = value.get(key)
        return value


_NONE = object()


# ---------------------------------------------------------------------------------------------
# Charts.

def deep_merge(base, override):
    out = copy.deepcopy(base)
    for k, v in override.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def ints_to_floats(v):
    """Helm reads values through JSON, so every number is a float64."""
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return float(v)
    if isinstance(v, list):
        return [ints_to_floats(x) for x in v]
    if isinstance(v, dict):
        return {k: ints_to_floats(x) for k, x in v.items()}
    return v


def load_values(chart_dir, value_files=(), overrides=None):
    with open(os.path.join(chart_dir, "values.yaml")) as f:
        values = yaml.safe_load(f) or {}
    for path in value_files:
        with open(path) as f:
            values = deep_merge(values, yaml.safe_load(f) or {})
    if overrides:
        values = deep_merge(values, overrides)
    return values


def validate_values(chart_dir, values):
    """Errors of values against values.schema.json (JSON Schema draft 7), as Helm checks."""
    path = os.path.join(chart_dir, "values.schema.json")
    if not os.path.exists(path):
        return []
    import jsonschema  # Debian: python3-jsonschema
    with open(path) as f:
        schema = json.load(f)
    validator = jsonschema.Draft7Validator(schema)
    return sorted("%s: %s" % ("/".join(str(p) for p in e.absolute_path) or "(root)", e.message)
                  for e in validator.iter_errors(integral_floats_to_int(values)))


def render_chart(chart_dir, release="gpufair", namespace="gpufair-system", value_files=(),
                 overrides=None, notes=False):
    """Renders like `helm template`: {template path: text}; NOTES.txt only when notes=True."""
    with open(os.path.join(chart_dir, "Chart.yaml")) as f:
        chart = yaml.safe_load(f)
    values = load_values(chart_dir, value_files, overrides)
    errors = validate_values(chart_dir, values)
    if errors:
        raise TemplateError("values don't meet values.schema.json:\n  " + "\n  ".join(errors))
    tdir = os.path.join(chart_dir, "templates")
    names = sorted(os.listdir(tdir))
    defines = {}
    bodies = {}
    for name in names:
        with open(os.path.join(tdir, name)) as f:
            text = f.read()
        rel = "%s/templates/%s" % (chart["name"], name)
        body, defs = parse_template(text, rel)
        for k in defs:
            if k in defines:
                raise TemplateError("%s: template %r defined twice" % (rel, k))
        defines.update(defs)
        defines[rel] = body  # include (print $.Template.BasePath "/x.yaml") as Helm allows
        if not name.startswith("_"):
            bodies[rel] = body
    top = {
        "Values": ints_to_floats(values),
        "Release": {"Name": release, "Namespace": namespace, "Service": "Helm",
                    "IsInstall": True, "IsUpgrade": False, "Revision": 1},
        "Chart": {"Name": chart["name"], "Version": chart["version"],
                  "AppVersion": chart.get("appVersion", "")},
    }
    renderer = Renderer(defines)
    out = {}
    for rel, body in bodies.items():
        is_notes = rel.endswith("/NOTES.txt")
        if is_notes != notes:
            continue
        ctx = dict(top, Template={"Name": rel, "BasePath": "%s/templates" % chart["name"]})
        out[rel] = renderer.render(body, ctx, {"$": ctx})
    return out


def render_objects(chart_dir, **kwargs):
    """The chart's objects, as parsed YAML documents, each with the template it came from."""
    objects = []
    for rel, text in render_chart(chart_dir, **kwargs).items():
        try:
            docs = list(yaml.safe_load_all(text))
        except yaml.YAMLError as e:
            raise TemplateError("%s renders invalid YAML: %s\n%s" % (rel, e, text))
        for doc in docs:
            if doc is not None:
                objects.append((rel, doc))
    return objects


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("chart")
    ap.add_argument("--release", default="gpufair")
    ap.add_argument("--namespace", default="gpufair-system")
    ap.add_argument("-f", "--values", action="append", default=[])
    ap.add_argument("--notes", action="store_true", help="render NOTES.txt instead")
    args = ap.parse_args(argv)
    try:
        rendered = render_chart(args.chart, args.release, args.namespace, args.values,
                                notes=args.notes)
    except (TemplateError, OSError, yaml.YAMLError) as e:
        print("helmlite: %s" % e, file=sys.stderr)
        return 1
    for rel, text in rendered.items():
        if args.notes:
            sys.stdout.write(text)
        elif text.strip():
            sys.stdout.write("---\n# Source: %s\n%s\n" % (rel, text.strip("\n")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
