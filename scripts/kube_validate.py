"""Validates rendered Kubernetes manifests offline (scripts/kube-validate runs it).

Every object is checked against the schema of its kind: Kubernetes' own kinds with
kubernetes-validate's strict JSON schemas, for each Kubernetes version in VERSIONS; KEDA's
ScaledObject with KEDA's CRD types (cloudcoil-models-keda), where a field the types do not know
is an error, as the strict schemas make it for the others. A kind neither knows is an error:
nothing goes unchecked. The alert rules must parse and name only metrics the code exposes; the
compose file must match the Compose Specification's schema, and name services that exist.
"""

import argparse
import json
import re
import sys

import jsonschema
import kubernetes_validate
import yaml
from cloudcoil.models.keda.v1alpha1 import ScaledObject

# The oldest Kubernetes we support and the newest the schemas know.
VERSIONS = ["1.30.0", "1.37.0"]
CUSTOM = {("keda.sh/v1alpha1", "ScaledObject"): ScaledObject}


def unknown_fields(given, kept, path=""):
    """Paths present in `given` that the model dropped (pydantic ignores unknown fields)."""
    if isinstance(given, dict):
        missing = []
        for key, value in given.items():
            if not isinstance(kept, dict) or key not in kept:
                missing.append(f"{path}.{key}")
            else:
                missing += unknown_fields(value, kept[key], f"{path}.{key}")
        return missing
    if isinstance(given, list) and isinstance(kept, list):
        return [m for i, (g, k) in enumerate(zip(given, kept)) for m in unknown_fields(g, k, f"{path}[{i}]")]
    return []


def check_object(doc):
    kind, api = doc.get("kind"), doc.get("apiVersion")
    name = f"{kind}/{doc.get('metadata', {}).get('name')}"
    model = CUSTOM.get((api, kind))
    if model is not None:
        try:
            parsed = model.model_validate(doc)
        except Exception as e:  # pydantic's ValidationError, with every problem listed
            return [f"{name}: {e}"]
        kept = parsed.model_dump(by_alias=True, exclude_none=True, mode="json")
        problems = [f"{name}: unknown field {p}" for p in unknown_fields(doc, kept)]
        return problems + check_triggers(name, doc)
    problems = []
    for version in VERSIONS:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as e:
            path = ".".join(str(p) for p in e.path)
            problems.append(f"{name} (Kubernetes {version}): {path}: {e.message}")
        except kubernetes_validate.SchemaNotFoundError as e:
            problems.append(f"{name}: no schema ({e.message})")
    return problems


# What KEDA's CRD types leave as free strings, checked as KEDA checks them when it admits the
# object: the metric types, and each metrics-api trigger's required metadata.
METRIC_TYPES = {"AverageValue", "Value", "Utilization"}
METRICS_API_REQUIRED = {"url", "valueLocation", "targetValue"}


def check_triggers(name, doc):
    problems = []
    for i, trigger in enumerate(doc.get("spec", {}).get("triggers", [])):
        where = f"{name}: triggers[{i}]"
        if trigger.get("metricType", "AverageValue") not in METRIC_TYPES:
            problems.append(f"{where}: metricType {trigger['metricType']!r} is not one of {sorted(METRIC_TYPES)}")
        if trigger.get("type") == "metrics-api":
            meta = trigger.get("metadata", {})
            for key in sorted(METRICS_API_REQUIRED - meta.keys()):
                problems.append(f"{where}: metrics-api needs metadata.{key}")
            if meta.get("format", "json") not in {"json", "xml", "yaml", "prometheus"}:
                problems.append(f"{where}: unknown format {meta['format']!r}")
            try:
                float(meta.get("targetValue", "x"))
            except ValueError:
                problems.append(f"{where}: targetValue must be a number")
    return problems


def check_rules(path, sources):
    exposed = set()
    for source in sources:
        exposed |= set(re.findall(r"grove_[a-z_]+", open(source).read()))
    rules = yaml.safe_load(open(path))
    problems, count = [], 0
    for group in rules.get("groups", []):
        for rule in group.get("rules", []):
            count += 1
            for field in ("alert", "expr", "for", "labels", "annotations"):
                if field not in rule:
                    problems.append(f"rule {rule.get('alert')}: no {field}")
            for metric in re.findall(r"grove_[a-z_]+", rule.get("expr", "")):
                if metric not in exposed:
                    problems.append(f"rule {rule.get('alert')}: {metric} is not a metric Grove exposes")
    if count == 0:
        problems.append(f"{path}: no rules")
    return problems, count


def check_compose(path, schema_path):
    compose = yaml.safe_load(open(path))
    schema = json.load(open(schema_path))
    problems = [
        f"{path}: {'.'.join(str(p) for p in e.path)}: {e.message}"
        for e in jsonschema.Draft7Validator(schema).iter_errors(compose)
    ]
    services = compose.get("services", {})
    for name, service in services.items():
        deps = service.get("depends_on", {})
        for dep in deps if isinstance(deps, (list, dict)) else []:
            if dep not in services:
                problems.append(f"{path}: {name} depends on unknown service {dep}")
    return problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rules")
    parser.add_argument("--metrics-source", action="append", default=[])
    parser.add_argument("--compose")
    parser.add_argument("--compose-schema")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    problems, seen = [], {}
    for f in args.files:
        for doc in yaml.safe_load_all(open(f)):
            if not doc:
                continue
            seen[doc["kind"]] = seen.get(doc["kind"], 0) + 1
            problems += [f"{f}: {p}" for p in check_object(doc)]
    if args.rules:
        rule_problems, rules = check_rules(args.rules, args.metrics_source)
        problems += rule_problems
    if args.compose:
        problems += check_compose(args.compose, args.compose_schema)
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(seen.items()))
    print(f"manifests valid ({kinds}; Kubernetes {' and '.join(VERSIONS)}, KEDA 2.16 CRD types); "
          f"{rules if args.rules else 0} alert rules name only exposed metrics; compose file valid")


if __name__ == "__main__":
    main()
