"""Go templates, the subset helmlite renders: evaluation of a parsed tree, and the functions
(Go's and Helm's) it knows, with Go's truthiness, printing and comparison rules."""
import decimal
import hashlib
import json
import math

import yaml

from gotemplate_parse import TemplateError

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
            names, _ = decl
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
