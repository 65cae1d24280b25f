"""Plans the Terraform module and its examples, every variant, with
`terraform test` and a mocked AWS provider: no AWS account, no network.

A mocked provider still needs the provider's schema, so Terraform needs an AWS
provider binary. The registry cannot be reached from the machines this project
is built on, but they carry the AWS provider 5.100 in a local filesystem
mirror. The module needs 6.29, so this plans a copy of it (under
target/terraform-plan/) in which the few names that differ between 6.x and
5.100 are substituted: SUBSTITUTIONS lists every one, and the copy is checked
to differ from the module by those alone.

Then it checks `fleetlock config check --tfvars` against Terraform itself:
for each tfvars file in CONFIG_CHECK_TFVARS, `terraform console` evaluates the
functions' own environment expressions (read from main.tf and alarm_pauses.tf)
and the binary's `--env` must print the same variables.

And it checks that Terraform and `config check` read settings alike: each run
of tests/iac/terraform/agreement.tftest.hcl, refused at plan time by Terraform
(expect_failures) or planned, must be refused or accepted by
`fleetlock config check --tfvars` given the same variables.

Where Terraform or the provider is missing, it fails with one line that says
which; it never skips.
"""

import difflib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "infra"
WORK = ROOT / "target" / "terraform-plan"
TESTS = Path(__file__).resolve().parent / "terraform"
FLEETLOCK = ROOT / "target" / "debug" / "fleetlock"
# Inputs that `config check --tfvars` must render as the module does.
CONFIG_CHECK_TFVARS = [
    ROOT / "tests" / "iac" / "config-check.tfvars",
    ROOT / "tests" / "iac" / "config-check.tfvars.json",
]

# (files, the module's text, the text for provider 5.100, why)
SUBSTITUTIONS = [
    (
        "versions.tf examples/*/main.tf",
        'version = ">= 6.29.0, < 7.0.0" # invoked_via_function_url came in 6.29.0',
        'version = "5.100.0"',
        "the mirror holds 5.100.0 only",
    ),
    (
        "*.tf",
        "data.aws_region.current.region",
        "data.aws_region.current.name",
        "6.0 renamed aws_region's `name` to `region`",
    ),
    (
        "function_url.tf",
        "  invoked_via_function_url = true\n",
        "",
        "aws_lambda_permission.invoked_via_function_url came in 6.29",
    ),
    (
        "main.tf",
        '      consistency_mode            = "STRONG"\n',
        "",
        "replica.consistency_mode (MRSC) came in 6.x",
    ),
    (
        "main.tf",
        "      deletion_protection_enabled = var.table_deletion_protection\n",
        "",
        "replica.deletion_protection_enabled came in 6.x",
    ),
    (
        "main.tf",
        '  dynamic "global_table_witness" {\n'
        "    for_each = local.witness_regions\n"
        "    content {\n"
        "      region_name = global_table_witness.value\n"
        "    }\n"
        "  }\n"
        "\n",
        "",
        "global_table_witness (MRSC's witness) came in 6.x",
    ),
]


def fail(line):
    print(f"plan_terraform: {line}", file=sys.stderr)
    sys.exit(1)


def provider_mirror():
    """The folder holding registry.terraform.io/hashicorp/aws/5.100.0/..."""
    given = os.environ.get("FLEETLOCK_TF_PROVIDER_MIRROR")
    candidates = [Path(given)] if given else []
    if not given:
        found = subprocess.run(
            ["find", "/", "-xdev", "(", "-path", "/proc", "-o", "-path", "/sys", ")", "-prune",
             "-o", "-type", "f", "-name", "terraform-provider-aws_v5.100.0*", "-print"],
            capture_output=True, text=True, timeout=300,
        ).stdout.split()
        for binary in found:
            parts = Path(binary).parts
            if "registry.terraform.io" in parts:
                candidates.append(Path(*parts[: parts.index("registry.terraform.io")]))
    for mirror in candidates:
        if (mirror / "registry.terraform.io" / "hashicorp" / "aws" / "5.100.0").is_dir():
            return mirror
    fail("no AWS provider 5.100.0 in a filesystem mirror (looked for "
         "registry.terraform.io/hashicorp/aws/5.100.0 under every terraform-provider-aws_v5.100.0* "
         "on this machine; set FLEETLOCK_TF_PROVIDER_MIRROR to the mirror's folder)")


def files_of(patterns):
    return sorted({p for pattern in patterns.split() for p in INFRA.glob(pattern)})


def explains(text, line):
    """Whether a substitution's text accounts for a changed line: the line
    holds a one-line substitution, or is a line of a multi-line one."""
    if not text:
        return False
    if "\n" in text.strip():
        return line in text.splitlines()
    return text.strip() in line


def copy_with_substitutions():
    """infra/ into WORK/infra with SUBSTITUTIONS applied. Each must apply and
    leave none of its 6.x text, and the copy must differ from the module only
    in lines that a substitution explains."""
    if WORK.exists():
        shutil.rmtree(WORK)
    copy = WORK / "infra"
    shutil.copytree(INFRA, copy, ignore=shutil.ignore_patterns(".terraform*", "terraform.tfstate*"))
    for patterns, new6, old5, why in SUBSTITUTIONS:
        applied = 0
        for original in files_of(patterns):
            target = copy / original.relative_to(INFRA)
            text = target.read_text()
            applied += text.count(new6)
            target.write_text(text.replace(new6, old5))
        if applied == 0:
            fail(f"the substitution for '{why}' ({new6!r}) matches nothing: remove it from SUBSTITUTIONS")
    for target in sorted(copy.rglob("*.tf")):
        module = (INFRA / target.relative_to(copy)).read_text().splitlines()
        planned = target.read_text().splitlines()
        for line in difflib.unified_diff(module, planned, lineterm="", n=0):
            if line.startswith(("---", "+++", "@@")):
                continue
            side = 1 if line.startswith("-") else 2
            if not any(explains(sub[side], line[1:]) for sub in SUBSTITUTIONS):
                fail(f"{target.relative_to(WORK)} differs from the module beyond SUBSTITUTIONS: {line!r}")
        planned_text = target.read_text()
        for _, new6, _, why in SUBSTITUTIONS:
            if new6 in planned_text:
                fail(f"{target.relative_to(WORK)} still has {new6!r} ({why})")
    # The tests, and stand-ins for the zips the module and the examples hash.
    shutil.copytree(TESTS, copy / "tests")
    (copy / "tests" / "fleetlock.zip").write_bytes(b"a stand-in for the Lambda zip")
    (WORK / "target" / "lambda").mkdir(parents=True)
    (WORK / "target" / "lambda" / "fleetlock-arm64.zip").write_bytes(b"a stand-in")
    return copy


# Where a deployment runs, not what it decides: the table (a resource's name)
# and the region (the provider's), which config check cannot know.
DEPLOYMENT_FACTS = {"FLEETLOCK_TABLE", "FLEETLOCK_REGION"}


def function_environment():
    """The FLEETLOCK_* settings of the API and alarm-pauses functions, as
    `NAME = expression` from their `environment` blocks; DEPLOYMENT_FACTS
    left out."""
    expressions = {}
    for name in ["main.tf", "alarm_pauses.tf"]:
        for block in re.findall(r"environment \{\n    variables = \{\n(.*?)\n    \}", (INFRA / name).read_text(), re.S):
            for line in block.splitlines():
                key, expression = (part.strip() for part in line.split("=", 1))
                if key.startswith("FLEETLOCK_") and key not in DEPLOYMENT_FACTS:
                    expressions[key] = expression
    if len(expressions) < 8:
        fail(f"found only {sorted(expressions)} in the functions' environment blocks")
    return expressions


def compare_config_check(terraform, copy, env):
    if not FLEETLOCK.exists():
        fail(f"{FLEETLOCK.relative_to(ROOT)} is missing: cargo build first")
    expressions = function_environment()
    console = "nonsensitive(jsonencode({%s}))" % ", ".join(f"{k} = {v}" for k, v in sorted(expressions.items()))
    for tfvars in CONFIG_CHECK_TFVARS:
        done = subprocess.run([terraform, "console", f"-var-file={tfvars}", "-var=lambda_zip_path=tests/fleetlock.zip"],
                              cwd=copy, env=env, input=console + "\n", capture_output=True, text=True)
        if done.returncode != 0:
            fail(f"terraform console -var-file={tfvars.name} failed: {done.stderr.strip()}")
        planned = json.loads(json.loads(done.stdout.strip()))
        checked = subprocess.run([str(FLEETLOCK), "config", "check", "--tfvars", str(tfvars), "--env"],
                                 capture_output=True, text=True)
        if checked.returncode != 0:
            fail(f"fleetlock config check --tfvars {tfvars.name}: {checked.stderr.strip()}")
        printed = {}
        for line in checked.stdout.splitlines():
            key, value = line.split("=", 1)
            printed[key] = " ".join(shlex.split(value)) if value else ""
        if printed != planned:
            fail(f"{tfvars.name}: config check --env printed {printed}, the module sets {planned}")
        print(f"config check --tfvars {tfvars.name}: the {len(planned)} variables Terraform sets, "
              f"{planned['FLEETLOCK_GROUPS']!r} among them", flush=True)


AGREEMENT = TESTS / "agreement.tftest.hcl"


def block_bodies(text, opener):
    """The bodies of every block `opener {` in `text` (an HCL file's text),
    with the text before each opener's brace: braces inside strings and
    comments do not count."""
    found = []
    for match in re.finditer(opener, text):
        depth, i, start = 0, match.end() - 1, match.end()
        while True:
            char = text[i]
            if char == '"':
                i += 1
                while text[i] != '"':
                    i += 2 if text[i] == "\\" else 1
            elif char == "#":
                i = text.index("\n", i)
            elif char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    found.append((match, text[start:i]))
                    break
            i += 1
    return found


def agreement_cases():
    """(run name, its variables as tfvars text, whether Terraform must refuse it)."""
    cases = []
    for match, body in block_bodies(AGREEMENT.read_text(), r'\nrun "([a-z0-9_]+)" \{'):
        variables = block_bodies(body, r"variables \{")
        if len(variables) != 1:
            fail(f"agreement.tftest.hcl run {match.group(1)}: one variables block, not {len(variables)}")
        refused = "expect_failures" in body
        if match.group(1).startswith("bad_") != refused:
            fail(f"agreement.tftest.hcl run {match.group(1)}: bad_ runs, and only they, expect failures")
        cases.append((match.group(1), variables[0][1], refused))
    if len(cases) < 10:
        fail(f"agreement.tftest.hcl has {len(cases)} runs: the corpus is not read")
    return cases


def compare_agreement():
    """Each corpus run's verdict from `config check` is Terraform's (which
    `terraform test` has just confirmed for every run)."""
    folder = WORK / "agreement"
    folder.mkdir(exist_ok=True)
    disagreements = []
    cases = agreement_cases()
    for name, variables, refused in cases:
        tfvars = folder / f"{name}.tfvars"
        tfvars.write_text(variables)
        checked = subprocess.run([str(FLEETLOCK), "config", "check", "--tfvars", str(tfvars)],
                                 capture_output=True, text=True)
        if (checked.returncode != 0) != refused:
            disagreements.append(f"{name}: Terraform {'refuses' if refused else 'plans'} it, config check "
                                 f"exits {checked.returncode}: {(checked.stderr or checked.stdout).strip()}")
        elif refused:
            print(f"  {name}: both refuse; config check says: "
                  f"{checked.stderr.strip().splitlines()[-1]}", flush=True)
    if disagreements:
        fail("Terraform and config check disagree:\n  " + "\n  ".join(disagreements))
    print(f"agreement corpus: Terraform and config check agree on all {len(cases)} runs "
          f"({sum(r for _, _, r in cases)} refused)", flush=True)


def main():
    terraform = shutil.which("terraform")
    if not terraform:
        fail("terraform is not on PATH: the module cannot be planned (Terraform 1.11 or later)")
    mirror = provider_mirror()
    copy = copy_with_substitutions()
    config = WORK / "terraform.tfrc"
    config.write_text(
        "provider_installation {\n"
        f'  filesystem_mirror {{\n    path    = "{mirror}"\n'
        '    include = ["registry.terraform.io/hashicorp/aws"]\n  }\n}\n'
    )
    env = dict(os.environ, TF_CLI_CONFIG_FILE=str(config), TF_IN_AUTOMATION="1",
               CHECKPOINT_DISABLE="1")
    for args in (["init", "-backend=false", "-input=false", "-no-color"], ["test", "-no-color"]):
        print(f"$ terraform {' '.join(args)}   (in {copy.relative_to(ROOT)}, provider mirror {mirror})",
              flush=True)
        # init's own words (the scratch copy's lock file, which a mirror
        # fills for this platform only) only when it fails.
        quiet = args[0] == "init"
        done = subprocess.run([terraform, *args], cwd=copy, env=env, capture_output=quiet, text=True)
        if done.returncode != 0:
            if quiet:
                print(done.stdout + done.stderr, flush=True)
            fail(f"terraform {args[0]} failed (exit {done.returncode})")
    compare_config_check(terraform, copy, env)
    compare_agreement()


if __name__ == "__main__":
    main()
