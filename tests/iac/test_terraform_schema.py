"""Every resource and data block in infra/ against the AWS provider's schema.

`terraform validate` needs the provider binary, which cannot be downloaded
here; the provider's schema still can: cdktf's prebuilt AWS provider on PyPI
carries it in its jsii assembly (each resource's configuration interface, with
the Terraform name of every argument and block in its registry docs link, and
whether it is optional). This check fails on an unknown argument or block and
on a missing required one, like `terraform validate` would.

Run by scripts/test with PROVIDER_SCHEMA_WHEEL set to the downloaded wheel.
"""

import json
import os
import re
import tarfile
import unittest
import zipfile
from pathlib import Path

import hcl2

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "infra"
LINK = re.compile(r"registry\.terraform\.io/providers/hashicorp/aws/([\d.]+)/docs/(resources|data-sources)/(\w+)#(\w+)")
# Terraform's own meta-arguments, valid on every resource and data block.
META = {"count", "for_each", "provider", "depends_on", "lifecycle"}
# Arguments the provider added after the schema we can read (cdktf's last
# prebuilt provider is 6.25.0), with the version that added each: allowed only
# while infra/versions.tf requires at least that version.
NEWER_THAN_SCHEMA = {("aws_lambda_permission", "invoked_via_function_url"): "6.29.0"}


def load_assembly(wheel):
    with zipfile.ZipFile(wheel) as whl:
        [member] = [n for n in whl.namelist() if n.endswith(".jsii.tgz")]
        with whl.open(member) as tgz, tarfile.open(fileobj=tgz, mode="r:gz") as tar:
            return json.load(tar.extractfile("package/.jsii"))


class Block:
    """Arguments (name -> required) and nested blocks (name -> (Block, required))."""

    def __init__(self):
        self.arguments, self.blocks = {}, {}


def link_of(prop):
    docs = prop.get("docs", {})
    return LINK.search(docs.get("summary", "") + " " + docs.get("remarks", ""))


def nested_fqn(prop_type):
    """The interface a property is typed with, alone or as a list of it."""
    if "fqn" in prop_type:
        return prop_type["fqn"]
    collection = prop_type.get("collection")
    if collection and "fqn" in collection.get("elementtype", {}):
        return collection["elementtype"]["fqn"]
    union = prop_type.get("union")
    if union:
        # A list block is typed "IResolvable | list of its interface": the
        # interface, not cdktf's token type, is the block.
        for option in union["types"]:
            found = nested_fqn(option)
            if found and not found.startswith("cdktf."):
                return found
    return None


def build_block(types, fqn, seen=()):
    block = Block()
    for prop in types[fqn].get("properties", []):
        link = link_of(prop)
        if not link:
            continue  # a cdktf meta-argument (count, provider, ...)
        name, required = link.group(4), not prop.get("optional", False)
        inner = nested_fqn(prop["type"])
        if inner and types.get(inner, {}).get("datatype") and inner not in seen:
            block.blocks[name] = (build_block(types, inner, seen + (fqn,)), required)
        else:
            block.arguments[name] = required
    return block


def load_schema(wheel):
    """{("resource" | "data", "aws_x"): Block} for every configuration interface."""
    types = load_assembly(wheel)["types"]
    schema, version = {}, None
    for fqn, t in types.items():
        if not (t.get("datatype") and "cdktf.TerraformMetaArguments" in t.get("interfaces", [])):
            continue
        links = [link_of(p) for p in t.get("properties", [])]
        links = [l for l in links if l]
        if not links:
            continue
        version = links[0].group(1)
        kind = "resource" if links[0].group(2) == "resources" else "data"
        schema[(kind, "aws_" + links[0].group(3))] = build_block(types, fqn)
    return schema, version


def problems_in(body, block, where, newer=()):
    found = []
    given = {k for k in body if not k.startswith("__")}
    for name in sorted(given):
        if name in block.arguments or name in newer:
            continue
        if name == "dynamic":
            # dynamic "LABEL" { for_each = ..., content { ... } }: LABEL must be
            # a block here, and content is checked as that block.
            for generated in body[name]:
                for label, spec in generated.items():
                    if label not in block.blocks:
                        found.append(f"{where}: dynamic block '{label}' is not a block here")
                        continue
                    inner, _ = block.blocks[label]
                    for content in spec.get("content", []):
                        found.extend(problems_in(content, inner, f"{where}.{label}(dynamic)", newer))
            continue
        if name in block.blocks:
            inner, _ = block.blocks[name]
            for i, item in enumerate(body[name]):
                if not isinstance(item, dict):
                    found.append(f"{where}.{name}: is a block, given as an argument")
                    continue
                found.extend(problems_in(item, inner, f"{where}.{name}[{i}]"))
            continue
        found.append(f"{where}: unknown argument or block '{name}'")
    for name, required in block.arguments.items():
        if required and name not in given:
            found.append(f"{where}: required argument '{name}' is missing")
    generated = {label for d in body.get("dynamic", []) for label in d}
    for name, (_, required) in block.blocks.items():
        if required and name not in given and name not in generated:
            found.append(f"{where}: required block '{name}' is missing")
    return found


def check_file(path, schema):
    with open(path) as f:
        parsed = hcl2.load(f)
    found, checked = [], 0
    for kind in ["resource", "data"]:
        for entry in parsed.get(kind, []):
            for rtype, named in entry.items():
                for name, body in named.items():
                    where = f"{path.relative_to(ROOT)}: {kind} {rtype}.{name}"
                    block = schema.get((kind, rtype))
                    if block is None:
                        found.append(f"{where}: the provider has no such {kind} type")
                        continue
                    body = {k: v for k, v in body.items() if k not in META}
                    newer = {arg for (t, arg) in NEWER_THAN_SCHEMA if t == rtype}
                    found.extend(problems_in(body, block, where, newer))
                    checked += 1
    return found, checked


WHEEL = os.environ.get("PROVIDER_SCHEMA_WHEEL")
SCHEMA, VERSION = load_schema(WHEEL) if WHEEL else ({}, None)


@unittest.skipUnless(WHEEL or os.environ.get("CI"), "PROVIDER_SCHEMA_WHEEL is unset (scripts/test sets it)")
class TerraformAgainstProviderSchema(unittest.TestCase):
    def test_schema_was_read(self):
        self.assertIsNotNone(WHEEL, "PROVIDER_SCHEMA_WHEEL must be set under CI")
        self.assertGreater(len(SCHEMA), 1000, "the provider has well over a thousand types")
        lambda_fn = SCHEMA[("resource", "aws_lambda_function")]
        self.assertTrue(lambda_fn.arguments["function_name"], "function_name is required")
        self.assertIn("environment", lambda_fn.blocks)
        print(f"\nAWS provider schema {VERSION}: {len(SCHEMA)} resource and data types")

    def test_every_block_in_infra_matches_the_schema(self):
        total = 0
        for path in sorted(INFRA.rglob("*.tf")):
            found, checked = check_file(path, SCHEMA)
            total += checked
            with self.subTest(path=str(path.relative_to(ROOT))):
                self.assertEqual(found, [])
        self.assertGreaterEqual(total, 15, "every resource and data block was checked")

    def test_every_resource_that_takes_tags_is_given_the_modules(self):
        untagged, tagged = [], 0
        for path in sorted(INFRA.glob("*.tf")):
            with open(path) as f:
                parsed = hcl2.load(f)
            for entry in parsed.get("resource", []):
                for rtype, named in entry.items():
                    for name, body in named.items():
                        if "tags" not in SCHEMA[("resource", rtype)].arguments:
                            continue
                        tagged += 1
                        if body.get("tags") != ["${var.tags}"]:
                            untagged.append(f"{rtype}.{name}")
        self.assertEqual(untagged, [])
        self.assertGreaterEqual(tagged, 20)

    def test_arguments_newer_than_the_schema_need_the_provider_that_has_them(self):
        versions = (INFRA / "versions.tf").read_text()
        minimum = re.search(r'"hashicorp/aws"\s*version\s*=\s*">=\s*([\d.]+)', versions).group(1)
        as_tuple = lambda v: tuple(int(p) for p in v.split("."))
        for (rtype, arg), added in NEWER_THAN_SCHEMA.items():
            with self.subTest(argument=f"{rtype}.{arg}"):
                self.assertNotIn(arg, SCHEMA[("resource", rtype)].arguments, "the schema has it now: drop the exception")
                self.assertGreaterEqual(as_tuple(minimum), as_tuple(added))

    def test_a_misspelt_argument_a_wrong_block_and_a_missing_one_are_caught(self):
        block = SCHEMA[("resource", "aws_lambda_function")]
        body = {
            "function_name": ["f"],
            "role": ["r"],
            "runtim": ["provided.al2023"],
            "environment": [{"variable": [{"A": "b"}]}],
        }
        self.assertEqual(
            problems_in(body, block, "x"),
            [
                "x.environment[0]: unknown argument or block 'variable'",
                "x: unknown argument or block 'runtim'",
            ],
        )
        del body["role"]
        self.assertIn("x: required argument 'role' is missing", problems_in(body, block, "x"))
        alarm = SCHEMA[("resource", "aws_cloudwatch_metric_alarm")]
        missing = problems_in({"alarm_name": ["a"]}, alarm, "y")
        self.assertIn("y: required argument 'comparison_operator' is missing", missing)


if __name__ == "__main__":
    unittest.main()
