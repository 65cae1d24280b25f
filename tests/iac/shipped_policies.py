"""The IAM policies the templates ship, read from template.yaml, infra/ and
contrib/drain-hook/template.yaml themselves, for the enforcing stand-in
(iam_enforcer.py) and the tests that run each principal under its own.

Every principal's statements are resolved to ARN patterns with named holes:
`{region}`, `{account}` and `{table}`, `{function}`, `{bus}`, `{queue}`, each
of which matches one name (no `/` or `:`) and is bound by the enforcer from
the request and the caller's access key. The SAM and the Terraform form of a
principal must resolve to the same statements; where only one template ships
a principal (the deploy check's invoker is SAM's; Terraform invokes the check
with the deployer's own credentials) that one is used.

Run as a script, it writes the policies as JSON:
    python tests/iac/shipped_policies.py OUT.json
"""

import json
import re
import sys
from pathlib import Path

import hcl2
from cfnlint.decode import decode

ROOT = Path(__file__).resolve().parents[2]

TABLE = "arn:aws:dynamodb:{region}:{account}:table/{table}"
FUNCTION = "arn:aws:lambda:{region}:{account}:function:{function}"
QUEUE = "arn:aws:sqs:{region}:{account}:{queue}"
LOG_GROUP = "arn:aws:logs:{region}:{account}:log-group:{log_group}:*"

# What each template's names resolve to.
SAM_ATTRIBUTES = {
    ("LocksTable", "Arn"): TABLE,
    ("FleetLockFunction", "Arn"): FUNCTION,
    ("ConfigCheckFunction", "Arn"): FUNCTION,
    ("DrainedFunction", "Arn"): FUNCTION,
    ("SlotEventsFailures", "Arn"): QUEUE,
}
SAM_REFS = {
    "AWS::Partition": "aws",
    "AWS::Region": "{region}",
    "AWS::AccountId": "{account}",
    "ExistingTableName": "{table}",
    "EventBusName": "{bus}",
    "DrainedFunctionArn": FUNCTION,
}
TF_NAMES = {
    "local.table_arn": TABLE,
    "local.event_bus_arn": "arn:aws:events:{region}:{account}:event-bus/{bus}",
    "aws_lambda_function.this.arn": FUNCTION,
    "aws_lambda_function.drained[0].arn": FUNCTION,
    "aws_sqs_queue.slot_events_failures[0].arn": QUEUE,
    "data.aws_partition.current.partition": "aws",
    "data.aws_region.current.region": "{region}",
    "data.aws_caller_identity.current.account_id": "{account}",
}

# principal: (SAM template, resource holding the policy, Terraform policy
# document or None)
PRINCIPALS = {
    "function": ("template.yaml", "FleetLockFunctionRole", "function"),
    "check-config": ("template.yaml", "ConfigCheckFunctionRole", "config_check"),
    "check-config-invoker": ("template.yaml", "ConfigCheckInvokerRole", None),
    "slot-events": ("template.yaml", "SlotEventsFunctionRole", "slot_events"),
    "alarm-pauses": ("template.yaml", "AlarmPausesFunctionRole", "alarm_pauses"),
    "drained": ("template.yaml", "DrainedFunctionRole", "drained"),
    "operator": ("template.yaml", "OperatorPolicy", "operator"),
    "kube-agent": ("template.yaml", "KubernetesAgentPolicy", "kube_agent"),
    "drain-hook": ("contrib/drain-hook/template.yaml", "DrainHookRole", None),
}


def _sam_value(value):
    """A SAM value with every intrinsic resolved; a condition's true branch
    (the features on, the stack's own table), `AWS::NoValue` dropped."""
    if isinstance(value, dict) and len(value) == 1:
        (name, argument), = value.items()
        if name == "Ref":
            if argument == "AWS::NoValue":
                return None
            if argument == "TableKmsKeyArn":
                return "arn:aws:kms:{region}:{account}:key/{key}"
            if argument == "TargetGroupArns":
                return "arn:aws:elasticloadbalancing:{region}:{account}:targetgroup/{target_group}"
            return SAM_REFS[argument]
        if name == "Fn::GetAtt":
            resource, attribute = argument if isinstance(argument, list) else argument.split(".", 1)
            if resource.endswith("LogGroup"):
                return LOG_GROUP
            return SAM_ATTRIBUTES[(resource, attribute)]
        if name == "Fn::Sub":
            def hole(match):
                inner = match.group(1)
                if "." in inner:
                    return _sam_value({"Fn::GetAtt": inner.split(".", 1)})
                return SAM_REFS[inner]
            return re.sub(r"\$\{([^}]+)\}", hole, argument)
        if name == "Fn::If":
            return _sam_value(argument[1])
    if isinstance(value, dict):
        return {k: v for k, v in ((k, _sam_value(v)) for k, v in value.items()) if v is not None}
    if isinstance(value, list):
        return [v for v in (_sam_value(v) for v in value) if v is not None]
    return value


def _listed(value):
    return sorted(value) if isinstance(value, list) else [value]


def _statements(raw):
    """The Allow statements as {sid, actions, resources}, logs apart (no
    stand-in serves CloudWatch Logs), KMS apart (DynamoDB Local encrypts
    nothing with a key of ours)."""
    statements = []
    for statement in raw:
        if statement.get("Sid") in ("Logs", "TableKey"):
            continue
        assert statement.get("Effect", "Allow") == "Allow", statement
        entry = {"sid": statement.get("Sid"), "actions": _listed(statement["Action"]),
                 "resources": _listed(statement["Resource"])}
        if statement.get("Condition"):
            entry["condition"] = statement["Condition"]
        statements.append(entry)
    return sorted(statements, key=lambda s: s["sid"] or "")


def sam_policy(template, resource):
    parsed, problems = decode(str(ROOT / template))
    assert not problems, f"{template} does not parse: {problems}"
    properties = parsed["Resources"][resource]["Properties"]
    documents = ([p["PolicyDocument"] for p in properties["Policies"]]
                 if "Policies" in properties else [properties["PolicyDocument"]])
    raw = [s for document in documents for s in _sam_value(document)["Statement"]]
    return _statements(raw)


def _tf_string(text):
    if text in TF_NAMES:
        return TF_NAMES[text]
    if text.startswith("${") and text.endswith("}") and text[2:-1] in TF_NAMES:
        return TF_NAMES[text[2:-1]]
    if re.fullmatch(r"\$\{aws_cloudwatch_log_group\.[a-z_]+(\[0\])?\.arn\}:\*", text):
        return LOG_GROUP
    resolved = re.sub(r"\$\{([^}]+)\}", lambda m: TF_NAMES[m.group(1)], text)
    return resolved


def _unwrap(value):
    if isinstance(value, list) and len(value) == 1:
        return _unwrap(value[0])
    if isinstance(value, dict):
        return {k: _unwrap(v) for k, v in value.items() if not k.startswith("__")}
    return value


def tf_policy(document):
    for path in sorted((ROOT / "infra").glob("*.tf")):
        with open(path) as f:
            parsed = hcl2.load(f)
        for block in parsed.get("data", []):
            body = block.get("aws_iam_policy_document", {}).get(document)
            if body is None:
                continue
            body = _unwrap(body)
            raw = body["statement"] if isinstance(body["statement"], list) else [body["statement"]]
            statements = []
            for statement in map(_unwrap, raw):
                statements.append({
                    "Sid": statement.get("sid"),
                    "Action": statement["actions"],
                    "Resource": [_tf_string(r) for r in _listed(statement["resources"])],
                })
            return _statements(statements)
    raise AssertionError(f"no aws_iam_policy_document {document!r} in infra/")


def without_conditions(statements):
    return [{k: v for k, v in s.items() if k != "condition"} for s in statements]


def shipped():
    """Every principal's statements, the SAM and Terraform forms checked
    equal."""
    policies = {}
    for principal, (template, resource, tf_document) in PRINCIPALS.items():
        sam = sam_policy(template, resource)
        if tf_document is not None:
            tf = tf_policy(tf_document)
            if without_conditions(tf) != without_conditions(sam):
                raise AssertionError(
                    f"{principal}: template.yaml's {resource} and infra/'s "
                    f"aws_iam_policy_document.{tf_document} differ:\n  SAM {sam}\n  TF  {tf}")
        policies[principal] = sam
    return policies


if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.write_text(json.dumps(shipped(), indent=2, sort_keys=True) + "\n")
