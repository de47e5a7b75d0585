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
import json
import os
import sys

import yaml

# The template engine; re-exported for the tests, which use helmlite as the one entry point.
from gotemplate_eval import Renderer, go_str, integral_floats_to_int  # noqa: F401
from gotemplate_parse import TemplateError, parse_template  # noqa: F401


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
