"""Go templates, the subset helmlite renders: lexing {{ actions }} and parsing them into a tree.
deploy/helm/README.md lists the subset; gotemplate_eval.py evaluates the tree."""
import json
import re


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
            if self.peek(k)[0] == "assign":
                # Go assigns to the variable of an enclosing block; helmlite's block scopes are
                # copies, so it would silently differ: refuse rather than guess.
                raise TemplateError("%s: assignment with = is outside helmlite's subset (use :=)"
                                    % self.where)
            if self.peek(k)[0] == "declare":
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
