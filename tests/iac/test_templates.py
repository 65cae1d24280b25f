"""The SAM template and the Terraform module describe the same service.

Both are parsed (the SAM template with its intrinsic-function tags by
cfn-lint's decoder, the HCL by python-hcl2) and compared with each other and
with what the code itself does: the table `fleetlock create-table --dry-run`
makes, the environment variables `fleetlock help` lists, and the metrics the
functions print when the binary runs under each template's handler
(lambda_run.py). Never with the Rust source's text.
Run by scripts/test after `cargo test` has built target/debug/fleetlock,
with DynamoDB Local started (AWS_ENDPOINT_URL).
"""

import ast
import functools
import json
import os
import re
import subprocess
import sys
import unittest
from pathlib import Path

import hcl2
import iam_enforcer
import lambda_run
import shipped_policies
from cfnlint.decode import decode
from lambda_run import fleetlock

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "infra"


def unwrap(value):
    """python-hcl2 wraps attribute values in one-element lists."""
    if isinstance(value, list) and len(value) == 1:
        return unwrap(value[0])
    if isinstance(value, dict):
        return {k: unwrap(v) for k, v in value.items() if not k.startswith("__")}
    return value


def load_sam():
    template, problems = decode(str(ROOT / "template.yaml"))
    if problems:
        raise AssertionError(f"template.yaml does not parse: {problems}")
    return template


def load_tf(folder):
    resources, data, variables, outputs, locals_ = {}, {}, {}, {}, {}
    for path in sorted(folder.glob("*.tf")):
        with open(path) as f:
            parsed = hcl2.load(f)
        for block in parsed.get("resource", []):
            for rtype, named in block.items():
                for name, body in named.items():
                    resources[(rtype, name)] = unwrap(body)
        for block in parsed.get("data", []):
            for dtype, named in block.items():
                for name, body in named.items():
                    data[(dtype, name)] = body
        for block in parsed.get("variable", []):
            for name, body in block.items():
                variables[name] = unwrap(body)
        for block in parsed.get("output", []):
            for name, body in block.items():
                outputs[name] = unwrap(body)
        for block in parsed.get("locals", []):
            locals_.update(unwrap(block))
    return resources, data, variables, outputs, locals_


def tf_statements(document):
    statements = unwrap(TF_DATA[("aws_iam_policy_document", document)])["statement"]
    return [unwrap(s) for s in (statements if isinstance(statements, list) else [statements])]


def iam_policy(*args):
    return json.loads(fleetlock("iam-policy", *args))


SAM = load_sam()
SHIPPED_POLICIES = shipped_policies.shipped()
TF, TF_DATA, TF_VARS, TF_OUTPUTS, TF_LOCALS = load_tf(INFRA)
SAM_RESOURCES = SAM["Resources"]
SAM_FUNCTION = SAM_RESOURCES["FleetLockFunction"]


def sam_role_statements(function):
    """The statements of a function's own role (every function has one)."""
    role = SAM_RESOURCES[function]["Properties"]["Role"]
    assert role == {"Fn::GetAtt": [f"{function}Role", "Arn"]}, role
    (policy,) = SAM_RESOURCES[f"{function}Role"]["Properties"]["Policies"]
    return policy["PolicyDocument"]["Statement"]


def without_logs(statements, log_group):
    """The statements but the one on the function's own log group, checked."""
    logs = [s for s in statements if s.get("Sid") == "Logs"]
    assert len(logs) == 1, statements
    assert set(logs[0]["Action"]) == {"logs:CreateLogStream", "logs:PutLogEvents"}, logs
    assert logs[0]["Resource"] == {"Fn::GetAtt": [log_group, "Arn"]}, logs
    return [s for s in statements if s.get("Sid") != "Logs"]
SAM_TABLE = SAM_RESOURCES["LocksTable"]["Properties"]
# The table the stack makes, or a global table's replica (ExistingTableName).
SAM_TABLE_NAME = {"Fn::If": ["MakesTable", {"Ref": "LocksTable"}, {"Ref": "ExistingTableName"}]}
SAM_TABLE_ARN = {"Fn::If": ["MakesTable", {"Fn::GetAtt": ["LocksTable", "Arn"]}, {
    "Fn::Sub": "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${ExistingTableName}"}]}
TF_FUNCTION = TF[("aws_lambda_function", "this")]
TF_TABLE = TF[("aws_dynamodb_table", "locks")]


def sam_function_property(name):
    props = SAM_FUNCTION["Properties"]
    return props.get(name, SAM.get("Globals", {}).get("Function", {}).get(name))


def sam_param_default(name):
    return SAM["Parameters"][name]["Default"]


class EveryFileParses(unittest.TestCase):
    def test_every_tf_file_parses(self):
        files = sorted(INFRA.rglob("*.tf"))
        self.assertGreaterEqual(len(files), 5)
        for path in files:
            with self.subTest(path=str(path.relative_to(ROOT))):
                with open(path) as f:
                    self.assertIsInstance(hcl2.load(f), dict)

    def test_module_layout(self):
        for name in ["main.tf", "variables.tf", "outputs.tf", "versions.tf", "README.md"]:
            self.assertTrue((INFRA / name).exists(), name)
        self.assertTrue((INFRA / "examples" / "basic" / "main.tf").exists())

    def test_every_variable_and_output_is_in_the_module_readme(self):
        readme = (INFRA / "README.md").read_text()
        for name in list(TF_VARS) + list(TF_OUTPUTS):
            self.assertIn(f"`{name}`", readme, name)

    def test_roles_take_a_permissions_boundary_and_names_cannot_collide(self):
        for role in ["FleetLockFunctionRole", "SlotEventsFunctionRole", "AlarmPausesFunctionRole"]:
            self.assertEqual(
                SAM_RESOURCES[role]["Properties"]["PermissionsBoundary"],
                {"Fn::If": ["HasPermissionsBoundary", {"Ref": "PermissionsBoundary"}, {"Ref": "AWS::NoValue"}]},
            )
            # No RoleName: CloudFormation makes one no other stack has.
            self.assertNotIn("RoleName", SAM_RESOURCES[role]["Properties"])
        self.assertEqual(sam_param_default("PermissionsBoundary"), "")
        self.assertIsNone(TF_VARS["permissions_boundary"]["default"])
        for role in ["function", "slot_events", "alarm_pauses", "drained"]:
            body = TF[("aws_iam_role", role)]
            self.assertEqual(body["permissions_boundary"], "${var.permissions_boundary}")
            self.assertEqual(body["path"], "${var.role_path}")
            # IAM names are account-wide: a prefix, never a fixed name.
            self.assertNotIn("name", body)
            self.assertTrue(body["name_prefix"].startswith("${local.iam_prefix}-"))
        self.assertNotIn("name", TF[("aws_iam_policy", "operator")])
        self.assertIn("data.aws_region.current", TF[("aws_cloudwatch_dashboard", "this")]["dashboard_name"])

    def test_the_same_outputs_in_both_where_both_have_the_thing(self):
        pairs = {
            "BaseUrl": "base_url", "ZincatiConfigCommand": "zincati_config_command", "TableName": "table_name",
            "TableArn": "table_arn", "FunctionName": "function_name", "FunctionArn": "function_arn",
            "FunctionRoleArn": "function_role_arn", "FunctionLogGroupName": "function_log_group_name",
            "ApiId": "api_id", "OperatorPolicyArn": "operator_policy_arn",
            "KubernetesAgentPolicyArn": "kube_agent_policy_arn",
            "CustomDomainTarget": "custom_domain_target", "CustomDomainHostedZoneId": "custom_domain_hosted_zone_id",
            "AlarmTopicArn": "alarm_topic_arn", "DashboardUrl": "dashboard_url",
            "SlotEventsFunctionName": "slot_events_function_name",
            "SlotEventsFailureQueueUrl": "slot_events_failure_queue_url",
            "AlarmPausesFunctionName": "alarm_pauses_function_name",
            "DrainedFunctionArn": "drained_function_arn",
            "PrivateDnsBaseUrl": "private_dns_base_url", "PrivateRestApiId": "private_rest_api_id",
            "PrivateVpcEndpointId": "private_vpc_endpoint_ids",
        }
        self.assertEqual(set(pairs), set(SAM["Outputs"]))
        for sam, tf in pairs.items():
            self.assertIn(tf, TF_OUTPUTS, sam)
        self.assertIn("hosted_zone_id", TF_OUTPUTS["custom_domain_hosted_zone_id"]["value"])
        self.assertEqual(SAM["Outputs"]["CustomDomainHostedZoneId"]["Value"],
                         {"Fn::GetAtt": ["CustomDomain", "RegionalHostedZoneId"]})

    def test_every_variable_is_typed_and_described(self):
        for name, body in TF_VARS.items():
            with self.subTest(variable=name):
                self.assertIn("type", body)
                self.assertTrue(body.get("description"))


class RuntimeAndBuild(unittest.TestCase):
    def test_runtime_handler_and_architecture(self):
        self.assertEqual(sam_function_property("Runtime"), "provided.al2023")
        self.assertEqual(TF_FUNCTION["runtime"], "provided.al2023")
        self.assertEqual(sam_function_property("Handler"), "bootstrap")
        self.assertEqual(TF_FUNCTION["handler"], "bootstrap")
        self.assertEqual(SAM_FUNCTION["Properties"]["Architectures"], [{"Ref": "Architecture"}])
        # [var.architecture], a one-element list, unwrapped.
        self.assertEqual(TF_FUNCTION["architectures"], "${var.architecture}")
        self.assertEqual(sam_param_default("Architecture"), "arm64")
        self.assertEqual(TF_VARS["architecture"]["default"], "arm64")
        sam_allowed = set(SAM["Parameters"]["Architecture"]["AllowedValues"])
        self.assertEqual(sam_allowed, {"arm64", "x86_64"})
        condition = TF_VARS["architecture"]["validation"]["condition"]
        self.assertEqual(set(re.findall(r"""['"]([a-z0-9_]+)['"]""", condition)), sam_allowed)

    def test_sam_builds_the_function_binary_with_cargo_lambda(self):
        # Every function is the slim binary of src/bin/, never the command line's.
        functions = [r for r in SAM["Resources"].values() if r["Type"] == "AWS::Serverless::Function"]
        self.assertEqual(len(functions), 5)
        for function in functions:
            metadata = function["Metadata"]
            self.assertEqual(metadata["BuildMethod"], "rust-cargolambda")
            self.assertEqual(metadata["BuildProperties"]["Binary"], "fleetlock-lambda")
        self.assertTrue((ROOT / "src" / "bin" / "fleetlock-lambda.rs").exists())
        build = (ROOT / "scripts" / "build-lambda").read_text()
        self.assertIn("--bin fleetlock-lambda", build)

    def test_same_memory_and_timeout(self):
        # The memory: one parameter and one variable of one default (Endpoint).
        self.assertEqual(
            (SAM_FUNCTION["Properties"]["MemorySize"], TF_FUNCTION["memory_size"]),
            ({"Ref": "ApiMemorySize"}, "${var.api_memory_size}"))
        self.assertEqual(SAM_FUNCTION["Properties"]["Timeout"], TF_FUNCTION["timeout"])

    def test_json_logs_with_retention(self):
        self.assertEqual(SAM_FUNCTION["Properties"]["LoggingConfig"]["LogFormat"], "JSON")
        self.assertEqual(TF_FUNCTION["logging_config"]["log_format"], "JSON")
        self.assertIn("RetentionInDays", SAM_RESOURCES["FunctionLogGroup"]["Properties"])
        self.assertIn("retention_in_days", TF[("aws_cloudwatch_log_group", "function")])


class Table(unittest.TestCase):
    def test_key_schema_and_billing_match_create_table(self):
        expected = json.loads(fleetlock("create-table", "--dry-run"))
        sam = {k: SAM_TABLE[k] for k in ["AttributeDefinitions", "KeySchema", "BillingMode"]}
        self.assertEqual(json.loads(json.dumps(sam)), expected)
        attributes = TF_TABLE["attribute"]
        attributes = attributes if isinstance(attributes, list) else [attributes]
        tf = {
            "AttributeDefinitions": [
                {"AttributeName": a["name"], "AttributeType": a["type"]} for a in attributes
            ],
            "KeySchema": [{"AttributeName": TF_TABLE["hash_key"], "KeyType": "HASH"}],
            "BillingMode": TF_TABLE["billing_mode"],
        }
        self.assertEqual(tf, expected)
        self.assertNotIn("range_key", TF_TABLE)

    def test_recovery_encryption_and_deletion_protection(self):
        self.assertIs(SAM_TABLE["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"], True)
        self.assertIs(TF_TABLE["point_in_time_recovery"]["enabled"], True)
        self.assertIs(SAM_TABLE["SSESpecification"]["SSEEnabled"], True)
        self.assertIs(TF_TABLE["server_side_encryption"]["enabled"], True)
        self.assertEqual(SAM_TABLE["DeletionProtectionEnabled"], {"Ref": "TableDeletionProtection"})
        self.assertEqual(sam_param_default("TableDeletionProtection"), "true")
        self.assertEqual(TF_TABLE["deletion_protection_enabled"], "${var.table_deletion_protection}")
        self.assertIs(TF_VARS["table_deletion_protection"]["default"], True)
        self.assertEqual(SAM_RESOURCES["LocksTable"]["DeletionPolicy"], "Retain")


class Environment(unittest.TestCase):
    def test_same_variables_and_all_read_by_the_code(self):
        sam = SAM_FUNCTION["Properties"]["Environment"]["Variables"]
        tf = TF_FUNCTION["environment"]["variables"]
        self.assertEqual(set(sam), set(tf))
        documented = fleetlock("help").split("ENVIRONMENT:")[1]
        for name in sam:
            self.assertIn(name, documented, f"{name} is not read by fleetlock")

    def test_table_and_settings_are_wired_the_same_way(self):
        sam = SAM_FUNCTION["Properties"]["Environment"]["Variables"]
        tf = TF_FUNCTION["environment"]["variables"]
        self.assertEqual(sam["FLEETLOCK_TABLE"], SAM_TABLE_NAME)
        self.assertEqual(tf["FLEETLOCK_TABLE"], "${local.table_name}")
        # Terraform takes the settings typed and joins them as SAM's strings
        # are written (the plans in tests/iac/terraform check the joined text).
        self.assertEqual(sam["FLEETLOCK_GROUPS"], {"Ref": "Groups"})
        self.assertEqual(tf["FLEETLOCK_GROUPS"], "${local.groups_env}")
        self.assertIn("var.groups", TF_LOCALS["groups_env"])
        default_groups = ",".join(f"{g}={n}" for g, n in sorted(TF_VARS["groups"]["default"].items()))
        self.assertEqual(sam_param_default("Groups"), default_groups)
        self.assertEqual(sam["FLEETLOCK_SETTLE"], {"Ref": "Settle"})
        self.assertEqual(tf["FLEETLOCK_SETTLE"], "${local.settle_env}")
        self.assertIn("var.settle", TF_LOCALS["settle_env"])
        self.assertEqual((sam_param_default("Settle"), TF_VARS["settle"]["default"]), ("", {}))
        self.assertEqual(sam["FLEETLOCK_LEASE"], {"Ref": "Lease"})
        self.assertEqual(tf["FLEETLOCK_LEASE"], "${local.lease_env}")
        self.assertIn("var.lease", TF_LOCALS["lease_env"])
        self.assertEqual((sam_param_default("Lease"), TF_VARS["lease"]["default"]), ("", {}))
        self.assertEqual(SAM["Parameters"]["Lease"]["AllowedPattern"], SAM["Parameters"]["Settle"]["AllowedPattern"])
        # The range the binary enforces (as its help says it), in both
        # templates' words.
        shortest, longest = re.search(r"FLEETLOCK_LEASE\s+per group, from (\d+)m to (\d+)h", fleetlock("help")).groups()
        self.assertIn(
            f"seconds >= {int(shortest) * 60} && seconds <= {int(longest) * 3600}",
            TF_VARS["lease"]["validation"]["condition"],
        )
        self.assertIn(f"from {shortest}m to {longest}h", SAM["Parameters"]["Lease"]["Description"])
        self.assertIn(f"from {shortest}m to {longest}h", TF_VARS["lease"]["description"])
        self.assertEqual(sam["FLEETLOCK_MAX_WILDCARD_GROUPS"], {"Ref": "MaxWildcardGroups"})
        self.assertEqual(tf["FLEETLOCK_MAX_WILDCARD_GROUPS"], "${tostring(var.max_wildcard_groups)}")
        self.assertEqual(int(sam_param_default("MaxWildcardGroups")), TF_VARS["max_wildcard_groups"]["default"])
        for bound, value in [("MinValue", 1), ("MaxValue", 2000)]:
            self.assertEqual(SAM["Parameters"]["MaxWildcardGroups"][bound], value)
        self.assertIn("var.max_wildcard_groups <= 2000", TF_VARS["max_wildcard_groups"]["validation"]["condition"])
        self.assertEqual(SAM["Parameters"]["LogLevel"]["AllowedValues"], ["error", "warn", "info", "debug"])
        self.assertIn("['error', 'warn', 'info', 'debug']", TF_VARS["log_level"]["validation"]["condition"])
        self.assertEqual(sam["FLEETLOCK_WINDOWS"], {"Ref": "MaintenanceWindows"})
        self.assertEqual(tf["FLEETLOCK_WINDOWS"], "${local.windows_env}")
        self.assertEqual((sam_param_default("MaintenanceWindows"), TF_VARS["maintenance_windows"]["default"]), ("", {}))
        self.assertEqual(sam["FLEETLOCK_TIME_ZONE"], {"Ref": "TimeZone"})
        self.assertEqual(tf["FLEETLOCK_TIME_ZONE"], "${var.time_zone}")
        self.assertEqual(sam_param_default("TimeZone"), TF_VARS["time_zone"]["default"])
        self.assertEqual(
            SAM["Parameters"]["TimeZone"]["AllowedPattern"],
            re.search(r'regex\("([^"]+)"', TF_VARS["time_zone"]["validation"]["condition"]).group(1),
        )
        self.assertEqual(sam_param_default("TimeZone"), "UTC")
        self.assertEqual(sam_param_default("LogLevel"), TF_VARS["log_level"]["default"])
        self.assertEqual(sam_param_default("LogRetentionDays"), TF_VARS["log_retention_days"]["default"])


class AuthAndLimits(unittest.TestCase):
    def test_auth_is_required_unless_anonymous_is_chosen(self):
        sam = SAM_FUNCTION["Properties"]["Environment"]["Variables"]
        tf = TF_FUNCTION["environment"]["variables"]
        self.assertEqual(sam["FLEETLOCK_CLIENTS"], {"Ref": "Clients"})
        self.assertEqual(tf["FLEETLOCK_CLIENTS"], "${local.clients_env}")
        self.assertRegex(TF_LOCALS["clients_env"], r'^\$\{join\(" ", ?var\.clients\)\}$')
        self.assertTrue(SAM["Parameters"]["Clients"].get("NoEcho"))
        self.assertIs(TF_VARS["clients"].get("sensitive"), True)
        condition, when_true, when_false = sam["FLEETLOCK_AUTH"]["Fn::If"]
        self.assertEqual(SAM["Conditions"][condition], {"Fn::Equals": [{"Ref": "AllowAnonymous"}, "true"]})
        self.assertEqual((when_true, when_false), ("disabled", "required"))
        self.assertRegex(tf["FLEETLOCK_AUTH"], r"var\.allow_anonymous \? .disabled. : .required.")
        self.assertEqual(sam_param_default("AllowAnonymous"), "false")
        self.assertIs(TF_VARS["allow_anonymous"]["default"], False)
        # Both refuse a deployment with neither clients nor anonymous access.
        rule = SAM["Rules"]["ClientsUnlessAnonymous"]
        self.assertEqual(rule["Assertions"][0]["Assert"], {"Fn::Not": [{"Fn::Equals": [{"Ref": "Clients"}, ""]}]})
        conditions = [unwrap(p)["condition"] for p in TF_FUNCTION["lifecycle"]["precondition"]]
        self.assertTrue(any("var.allow_anonymous" in c and "var.clients" in c for c in conditions), conditions)

    def test_reserved_concurrency_is_a_parameter_off_by_default(self):
        # SAM: 0 for "the default"; Terraform: null, and AWS's own numbers
        # otherwise (-1 reserves none, 0 stops every call).
        self.assertEqual(sam_param_default("ReservedConcurrency"), 0)
        self.assertIsNone(TF_VARS["reserved_concurrency"]["default"])
        self.assertIn("var.reserved_concurrency", TF_LOCALS["reserved_concurrency"])

    def test_the_api_functions_memory_is_one_parameter_and_one_variable_of_one_default(self):
        self.assertEqual(SAM_FUNCTION["Properties"]["MemorySize"], {"Ref": "ApiMemorySize"})
        self.assertEqual(TF_FUNCTION["memory_size"], "${var.api_memory_size}")
        self.assertEqual(sam_param_default("ApiMemorySize"), 128)
        self.assertEqual(TF_VARS["api_memory_size"]["default"], 128)
        parameter = SAM["Parameters"]["ApiMemorySize"]
        self.assertEqual((parameter["MinValue"], parameter["MaxValue"]), (128, 10240))
        self.assertIn("var.api_memory_size >= 128 && var.api_memory_size <= 10240",
                      TF_VARS["api_memory_size"]["validation"]["condition"])
        # Every other function keeps 128, in both.
        for name, resource in SAM_RESOURCES.items():
            if name != "FleetLockFunction" and "MemorySize" in resource.get("Properties", {}):
                self.assertEqual(resource["Properties"]["MemorySize"], 128, name)
        # Through SAM's own transform, 256 reaches the API function alone.
        defaults = {name: p.get("Default", "") for name, p in SAM["Parameters"].items()}
        resources = sam_transform({"ApiMemorySize": "256"})["Resources"]
        sizes = {name: resolved(r["Properties"]["MemorySize"], {"ApiMemorySize": "256"}, defaults)
                 for name, r in resources.items()
                 if r["Type"] == "AWS::Lambda::Function" and "MemorySize" in r["Properties"]}
        self.assertEqual(sizes.pop("FleetLockFunction"), "256")
        self.assertTrue(sizes and set(sizes.values()) == {128}, sizes)


@functools.cache
def api_function_run():
    """The API function, under the handler the template gives it, answering
    one pre-reboot: (answers, stdout lines)."""
    table = "iac-api-" + os.urandom(4).hex()
    endpoint = lambda_run.table(table)
    return lambda_run.invoke(
        SAM["Globals"]["Function"]["Handler"],
        [lambda_run.api_gateway_event("pre-reboot", "iac-node")],
        {**lambda_run.aws_env(endpoint), "FLEETLOCK_TABLE": table, "FLEETLOCK_AUTH": "disabled"})


@functools.cache
def unservable_run():
    """The API function asked for a group it does not serve: (answers, stdout lines)."""
    table = "iac-unservable-" + os.urandom(4).hex()
    endpoint = lambda_run.table(table)
    return lambda_run.invoke(
        SAM["Globals"]["Function"]["Handler"],
        [lambda_run.api_gateway_event("pre-reboot", "iac-node", "never-configured")],
        {**lambda_run.aws_env(endpoint), "FLEETLOCK_TABLE": table, "FLEETLOCK_AUTH": "disabled"})


@functools.cache
def slot_events_run():
    """The slot-events function, under its template's handler, given a record
    it cannot read (which needs no EventBridge): (answers, stdout lines)."""
    # Port 9 (discard): no AWS service is reached, nor needed.
    return lambda_run.invoke(SAM_RESOURCES["SlotEventsFunction"]["Properties"]["Handler"],
                             [lambda_run.unreadable_stream_record()],
                             lambda_run.aws_env("http://127.0.0.1:9"))


@functools.cache
def alarm_pauses_run():
    """The alarm-pauses function, under its template's handler, told of an
    alarm that gates nothing: (answers, stdout lines)."""
    table = "iac-pauses-" + os.urandom(4).hex()
    endpoint = lambda_run.table(table)
    event = {"detail-type": "CloudWatch Alarm State Change",
             "detail": {"alarmName": "gates-nothing", "state": {"value": "ALARM"}}}
    return lambda_run.invoke(SAM_RESOURCES["AlarmPausesFunction"]["Properties"]["Handler"], [event],
                             {**lambda_run.aws_env(endpoint), "FLEETLOCK_TABLE": table,
                              "FLEETLOCK_ALARM_PAUSES": "api-5xx=*"})


def emitted_by(run):
    """{(namespace, name): (unit, dimensions, values)} of the metrics a run emitted."""
    return lambda_run.emitted_metrics(run()[1])


def the_one_metric(run):
    """The one metric a function's lines declare: ((namespace, name), (unit, dimensions, values))."""
    emitted = emitted_by(run)
    if len(emitted) != 1:
        raise AssertionError(f"expected one metric, the lines declare {emitted}")
    return next(iter(emitted.items()))


class Alarms(unittest.TestCase):
    def metric_names_in_code(self):
        """The namespace and name of the metric the API function emits."""
        (namespace, metric), (unit, dimensions, values) = the_one_metric(api_function_run)
        self.assertEqual((unit, dimensions, values), ("Seconds", ["Service"], {"Service": "fleetlock-test"}))
        return namespace, metric

    def test_oldest_holder_alarm_watches_the_metric_the_code_emits(self):
        namespace, metric = self.metric_names_in_code()
        sam = SAM_RESOURCES["OldestHolderAlarm"]["Properties"]
        tf = TF[("aws_cloudwatch_metric_alarm", "oldest_holder")]
        self.assertEqual((sam["Namespace"], sam["MetricName"]), (namespace, metric))
        self.assertEqual((tf["namespace"], tf["metric_name"]), (namespace, metric))
        self.assertEqual(sam["Dimensions"], [{"Name": "Service", "Value": {"Ref": "FleetLockFunction"}}])
        self.assertEqual(tf["dimensions"], {"Service": "${aws_lambda_function.this.function_name}"})
        self.assertEqual(sam["Threshold"], {"Ref": "OldestHolderAlarmSeconds"})
        self.assertEqual(sam_param_default("OldestHolderAlarmSeconds"), TF_VARS["oldest_holder_alarm_seconds"]["default"])
        for key in ["Statistic", "Period", "ComparisonOperator", "TreatMissingData"]:
            tf_key = re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower()
            self.assertEqual(sam[key], tf[tf_key], key)

    def test_unservable_requests_alarm_watches_the_metric_an_unknown_group_emits(self):
        answers, _ = unservable_run()
        self.assertIn("unknown_group", json.dumps(answers))
        (namespace, metric), (unit, dimensions, values) = the_one_metric(unservable_run)
        self.assertEqual((unit, dimensions, values), ("Count", ["Service"], {"Service": "fleetlock-test"}))
        sam = SAM_RESOURCES["UnservableRequestsAlarm"]["Properties"]
        tf = TF[("aws_cloudwatch_metric_alarm", "unservable_requests")]
        self.assertEqual((sam["Namespace"], sam["MetricName"]), (namespace, metric))
        self.assertEqual((tf["namespace"], tf["metric_name"]), (namespace, metric))
        self.assertEqual(sam["Dimensions"], [{"Name": "Service", "Value": {"Ref": "FleetLockFunction"}}])
        self.assertEqual(tf["dimensions"], {"Service": "${aws_lambda_function.this.function_name}"})
        for key in ["Statistic", "Period", "EvaluationPeriods", "DatapointsToAlarm", "Threshold",
                    "ComparisonOperator", "TreatMissingData"]:
            tf_key = re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower()
            self.assertEqual(sam[key], tf[tf_key], key)

    def test_server_error_alarm_on_the_api(self):
        sam = SAM_RESOURCES["ServerErrorAlarm"]["Properties"]
        tf = TF[("aws_cloudwatch_metric_alarm", "server_errors")]
        self.assertEqual((sam["Namespace"], sam["MetricName"]), ("AWS/ApiGateway", "5xx"))
        self.assertEqual((tf["namespace"], tf["metric_name"]), ("AWS/ApiGateway", "5xx"))
        self.assertEqual(sam["Dimensions"][0]["Value"], {"Ref": "HttpApi"})
        self.assertEqual(tf["dimensions"], {"ApiId": "${aws_apigatewayv2_api.this[0].id}"})
        self.assertEqual(sam_param_default("ServerErrorAlarmThreshold"), TF_VARS["server_error_alarm_threshold"]["default"])


class Permissions(unittest.TestCase):
    def sam_statements(self):
        return without_logs(sam_role_statements("FleetLockFunction"), "FunctionLogGroup")


    def test_same_dynamodb_actions_on_the_table_only(self):
        sam_actions, tf_actions = set(), set()
        for statement in self.sam_statements():
            actions = {a for a in statement["Action"] if a.startswith("dynamodb:")}
            if actions:
                self.assertEqual(statement["Resource"], SAM_TABLE_ARN)
            sam_actions |= actions
        for statement in tf_statements("function"):
            raw = statement["actions"]
            actions = {a for a in (raw if isinstance(raw, list) else [raw]) if a.startswith("dynamodb:")}
            if actions:
                self.assertEqual(statement["resources"], "${local.table_arn}")
            tf_actions |= actions
        self.assertEqual(sam_actions, tf_actions)
        # Exactly what the code says the function calls (status and release are CLI).
        self.assertEqual(sam_actions, set(iam_policy("--for", "function")["Statement"][0]["Action"]))

    def test_operator_policy_is_exactly_what_the_cli_calls(self):
        table, function, tags = [set(s["Action"]) for s in iam_policy()["Statement"]]
        self.assertNotIn("dynamodb:CreateTable", table)
        self.assertEqual(tags, {"tag:GetResources"})
        sam = SAM_RESOURCES["OperatorPolicy"]
        self.assertEqual(sam["Type"], "AWS::IAM::ManagedPolicy")
        sam_table, sam_function, sam_tags, sam_key = sam["Properties"]["PolicyDocument"]["Statement"]
        # The table key's statement, only with a customer managed key (class TableKey).
        self.assertEqual(sam_key["Fn::If"][0], "HasTableKey")
        self.assertEqual(sam_key["Fn::If"][2], {"Ref": "AWS::NoValue"})
        self.assertEqual(set(sam_tags["Action"]), tags)
        self.assertEqual(sam_tags["Resource"], "*")
        self.assertEqual(set(sam_table["Action"]), table)
        self.assertEqual(sam_table["Resource"], SAM_TABLE_ARN)
        self.assertEqual(set(sam_function["Action"]), function)
        self.assertEqual(sam_function["Resource"], {"Fn::GetAtt": ["FleetLockFunction", "Arn"]})
        self.assertEqual(SAM["Outputs"]["OperatorPolicyArn"]["Value"], {"Ref": "OperatorPolicy"})
        tf_table, tf_function, tf_tags = tf_statements("operator")
        self.assertEqual(set(tf_tags["actions"]) if isinstance(tf_tags["actions"], list) else {tf_tags["actions"]}, tags)
        resources = tf_tags["resources"]
        self.assertEqual(resources if isinstance(resources, list) else [resources], ["*"])
        self.assertEqual(set(tf_table["actions"]), table)
        self.assertEqual(tf_table["resources"], "${local.table_arn}")
        self.assertEqual(set(tf_function["actions"]) if isinstance(tf_function["actions"], list) else {tf_function["actions"]}, function)
        self.assertEqual(tf_function["resources"], "${aws_lambda_function.this.arn}")
        policy = TF[("aws_iam_policy", "operator")]
        self.assertEqual(policy["policy"], "${data.aws_iam_policy_document.operator.json}")
        self.assertEqual(TF_OUTPUTS["operator_policy_arn"]["value"], "${aws_iam_policy.operator.arn}")

    def test_kube_agent_policy_is_exactly_what_the_agent_calls(self):
        (agent,) = iam_policy("--for", "kube-agent")["Statement"]
        self.assertEqual(set(agent["Action"]), {"dynamodb:GetItem", "dynamodb:UpdateItem"})
        sam = SAM_RESOURCES["KubernetesAgentPolicy"]
        self.assertEqual(sam["Type"], "AWS::IAM::ManagedPolicy")
        sam_table, sam_key = sam["Properties"]["PolicyDocument"]["Statement"]
        self.assertEqual(sam_key["Fn::If"][0], "HasTableKey")
        self.assertEqual(set(sam_table["Action"]), set(agent["Action"]))
        self.assertEqual(sam_table["Resource"], SAM_TABLE_ARN)
        (tf_table,) = tf_statements("kube_agent")
        self.assertEqual(set(tf_table["actions"]), set(agent["Action"]))
        self.assertEqual(tf_table["resources"], "${local.table_arn}")
        policy = TF[("aws_iam_policy", "kube_agent")]
        self.assertEqual(policy["policy"], "${data.aws_iam_policy_document.kube_agent.json}")
        self.assertNotIn("name", policy)
        self.assertEqual(SAM["Outputs"]["KubernetesAgentPolicyArn"]["Value"], {"Ref": "KubernetesAgentPolicy"})
        self.assertEqual(TF_OUTPUTS["kube_agent_policy_arn"]["value"], "${aws_iam_policy.kube_agent.arn}")

    def test_the_description_names_every_command_the_policy_allows(self):
        commands = ["status", "release", "drained", "returned", "forget", "pause", "resume", "exclude", "include", "hosts"]
        for description in [SAM_RESOURCES["OperatorPolicy"]["Properties"]["Description"],
                            TF[("aws_iam_policy", "operator")]["description"]]:
            for command in commands:
                self.assertRegex(description, rf"\b{command}\b", description)

    def test_no_wildcard_actions(self):
        for statement in self.sam_statements():
            for action in statement["Action"]:
                self.assertNotIn("*", action)
        for statement in tf_statements("function"):
            raw = statement["actions"]
            for action in raw if isinstance(raw, list) else [raw]:
                self.assertNotIn("*", action)


def sam_condition(resource):
    return SAM_RESOURCES[resource].get("Condition")


def tf_count(rtype, name):
    return TF[(rtype, name)].get("count")


class Endpoints(unittest.TestCase):
    """Both templates offer both endpoints, chosen by one parameter/variable."""

    def test_the_choice_is_the_same_in_both(self):
        self.assertEqual(SAM["Parameters"]["Endpoint"]["AllowedValues"], ["HttpApi", "FunctionUrl", "PrivateRestApi"])
        self.assertEqual(sam_param_default("Endpoint"), "HttpApi")
        self.assertEqual(TF_VARS["endpoint"]["default"], "http_api")
        condition = TF_VARS["endpoint"]["validation"]["condition"]
        self.assertEqual(set(re.findall(r"""['"]([a-z_]+)['"]""", condition)),
                         {"http_api", "function_url", "private_rest_api"})
        self.assertEqual(SAM["Conditions"]["UseHttpApi"], {"Fn::Equals": [{"Ref": "Endpoint"}, "HttpApi"]})
        self.assertEqual(SAM["Conditions"]["UseFunctionUrl"], {"Fn::Equals": [{"Ref": "Endpoint"}, "FunctionUrl"]})
        self.assertEqual(TF_LOCALS["use_http_api"], '${var.endpoint == "http_api"}')
        self.assertEqual(TF_LOCALS["use_function_url"], '${var.endpoint == "function_url"}')
        self.assertEqual(SAM["Conditions"]["UsePrivateRestApi"], {"Fn::Equals": [{"Ref": "Endpoint"}, "PrivateRestApi"]})
        self.assertEqual(TF_LOCALS["use_private_rest_api"], '${var.endpoint == "private_rest_api"}')

    def test_http_api_default_route_payload_v2_throttling_and_permission(self):
        for resource in ["HttpApi", "HttpApiIntegration", "HttpApiDefaultRoute", "HttpApiDefaultStage", "HttpApiInvokePermission"]:
            self.assertEqual(sam_condition(resource), "UseHttpApi", resource)
        for rtype, name in [
            ("aws_apigatewayv2_api", "this"),
            ("aws_apigatewayv2_integration", "function"),
            ("aws_apigatewayv2_route", "default"),
            ("aws_apigatewayv2_stage", "default"),
            ("aws_lambda_permission", "api"),
        ]:
            self.assertEqual(tf_count(rtype, name), "${local.use_http_api ? 1 : 0}", name)
        route = SAM_RESOURCES["HttpApiDefaultRoute"]["Properties"]
        self.assertEqual(route["RouteKey"], "$default")
        self.assertEqual(TF[("aws_apigatewayv2_route", "default")]["route_key"], "$default")
        integration = SAM_RESOURCES["HttpApiIntegration"]["Properties"]
        self.assertEqual((integration["IntegrationType"], integration["PayloadFormatVersion"]), ("AWS_PROXY", "2.0"))
        tf_integration = TF[("aws_apigatewayv2_integration", "function")]
        self.assertEqual(
            (tf_integration["integration_type"], tf_integration["payload_format_version"]), ("AWS_PROXY", "2.0")
        )
        stage = SAM_RESOURCES["HttpApiDefaultStage"]["Properties"]
        self.assertEqual(stage["StageName"], "$default")
        self.assertEqual(stage["DefaultRouteSettings"]["ThrottlingRateLimit"], {"Ref": "ThrottlingRateLimit"})
        self.assertEqual(stage["DefaultRouteSettings"]["ThrottlingBurstLimit"], {"Ref": "ThrottlingBurstLimit"})
        tf_stage = TF[("aws_apigatewayv2_stage", "default")]
        self.assertEqual(tf_stage["name"], "$default")
        self.assertEqual(tf_stage["default_route_settings"]["throttling_rate_limit"], "${var.throttling_rate_limit}")
        self.assertEqual(sam_param_default("ThrottlingRateLimit"), TF_VARS["throttling_rate_limit"]["default"])
        self.assertEqual(sam_param_default("ThrottlingBurstLimit"), TF_VARS["throttling_burst_limit"]["default"])
        permission = SAM_RESOURCES["HttpApiInvokePermission"]["Properties"]
        self.assertEqual((permission["Action"], permission["Principal"]), ("lambda:InvokeFunction", "apigateway.amazonaws.com"))
        tf_permission = TF[("aws_lambda_permission", "api")]
        self.assertEqual((tf_permission["action"], tf_permission["principal"]), ("lambda:InvokeFunction", "apigateway.amazonaws.com"))

    def test_the_access_log_is_optional_and_on_by_default(self):
        self.assertEqual(sam_param_default("ApiAccessLog"), "true")
        self.assertIs(TF_VARS["api_access_log"]["default"], True)
        self.assertEqual(sam_condition("ApiAccessLogGroup"), "HasAccessLog")
        self.assertEqual(tf_count("aws_cloudwatch_log_group", "api_access"), "${local.has_access_log ? 1 : 0}")
        self.assertEqual(TF_LOCALS["has_access_log"], "${local.use_http_api && var.api_access_log}")
        condition, *_ = SAM_RESOURCES["HttpApiDefaultStage"]["Properties"]["AccessLogSettings"]["Fn::If"]
        self.assertEqual(condition, "HasAccessLog")

    def test_function_url_is_public_and_needs_both_permissions(self):
        url = SAM_RESOURCES["FunctionUrl"]
        self.assertEqual((url["Condition"], url["Properties"]["AuthType"]), ("UseFunctionUrl", "NONE"))
        tf_url = TF[("aws_lambda_function_url", "this")]
        self.assertEqual((tf_url["count"], tf_url["authorization_type"]), ("${local.use_function_url ? 1 : 0}", "NONE"))
        public = SAM_RESOURCES["FunctionUrlPublicAccess"]["Properties"]
        invoke = SAM_RESOURCES["FunctionUrlInvoke"]["Properties"]
        self.assertEqual((public["Action"], public["Principal"], public["FunctionUrlAuthType"]), ("lambda:InvokeFunctionUrl", "*", "NONE"))
        self.assertEqual((invoke["Action"], invoke["Principal"], invoke["InvokedViaFunctionUrl"]), ("lambda:InvokeFunction", "*", True))
        tf_public = TF[("aws_lambda_permission", "url_public_access")]
        tf_invoke = TF[("aws_lambda_permission", "url_invoke")]
        self.assertEqual((tf_public["action"], tf_public["principal"], tf_public["function_url_auth_type"]), ("lambda:InvokeFunctionUrl", "*", "NONE"))
        self.assertEqual((tf_invoke["action"], tf_invoke["principal"], tf_invoke["invoked_via_function_url"]), ("lambda:InvokeFunction", "*", True))
        for name in ["FunctionUrlPublicAccess", "FunctionUrlInvoke"]:
            self.assertEqual(sam_condition(name), "UseFunctionUrl")

    def test_function_url_reserves_concurrency_by_default(self):
        sam = SAM_FUNCTION["Properties"]["ReservedConcurrentExecutions"]["Fn::If"]
        self.assertEqual(sam[0], "HasReservedConcurrency")
        self.assertEqual(sam[1], {"Ref": "ReservedConcurrency"})
        self.assertEqual(sam[2], {"Fn::If": ["UseFunctionUrl", 10, {"Ref": "AWS::NoValue"}]})
        self.assertEqual(TF_FUNCTION["reserved_concurrent_executions"], "${local.reserved_concurrency}")
        self.assertEqual(
            TF_LOCALS["reserved_concurrency"],
            "${var.reserved_concurrency != None ? var.reserved_concurrency : local.use_function_url ? 10 : -1}",
        )

    def test_a_custom_domain_needs_the_http_api(self):
        self.assertEqual(
            SAM["Rules"]["DomainNeedsHttpApi"]["Assertions"][0]["Assert"],
            {"Fn::Equals": [{"Ref": "Endpoint"}, "HttpApi"]},
        )
        preconditions = TF_FUNCTION["lifecycle"]["precondition"]
        self.assertTrue(any("local.use_http_api" in unwrap(p)["condition"] for p in preconditions))

    def test_platform_log_level_is_the_same_in_both(self):
        self.assertEqual(SAM_FUNCTION["Properties"]["LoggingConfig"]["SystemLogLevel"], {"Ref": "PlatformLogLevel"})
        self.assertEqual(TF_FUNCTION["logging_config"]["system_log_level"], "${var.platform_log_level}")
        self.assertEqual(sam_param_default("PlatformLogLevel"), TF_VARS["platform_log_level"]["default"])
        self.assertEqual(SAM["Parameters"]["PlatformLogLevel"]["AllowedValues"], ["DEBUG", "INFO", "WARN"])

    def test_server_errors_alarm_on_whichever_endpoint(self):
        url = SAM_RESOURCES["FunctionUrlServerErrorAlarm"]
        self.assertEqual(url["Condition"], "UseFunctionUrl")
        self.assertEqual((url["Properties"]["Namespace"], url["Properties"]["MetricName"]), ("AWS/Lambda", "Url5xxCount"))
        tf = TF[("aws_cloudwatch_metric_alarm", "function_url_server_errors")]
        self.assertEqual((tf["namespace"], tf["metric_name"]), ("AWS/Lambda", "Url5xxCount"))
        self.assertEqual(tf["dimensions"], {"FunctionName": "${aws_lambda_function.this.function_name}"})
        self.assertEqual(sam_condition("ServerErrorAlarm"), "UseHttpApi")
        self.assertEqual(tf_count("aws_cloudwatch_metric_alarm", "server_errors"), "${local.use_http_api ? 1 : 0}")

    def test_base_url_outputs_end_with_a_slash(self):
        condition, private, public = SAM["Outputs"]["BaseUrl"]["Value"]["Fn::If"]
        self.assertEqual(condition, "UsePrivateRestApi")
        self.assertTrue(private["Fn::Sub"][0].endswith("/fleetlock/"), private)
        function_url, api = public["Fn::If"][1:]
        self.assertEqual(function_url, {"Fn::GetAtt": ["FunctionUrl", "FunctionUrl"]})  # ends with /
        for branch in api["Fn::If"][1:]:
            self.assertTrue(branch["Fn::Sub"].endswith("/"), branch)
        tf = TF_LOCALS["base_url"]
        self.assertIn("aws_lambda_function_url.this[0].function_url", tf)
        self.assertTrue(tf.startswith("${local.use_private_rest_api ? local.private_base_url : "), tf)
        branches = re.findall(r'"(https://[^"]*|\$\{aws_apigatewayv2_api[^"]*)"', tf)
        self.assertEqual(len(branches), 2, tf)  # custom domain, or the API's own URL
        for branch in branches:
            self.assertTrue(branch.endswith("/"), tf)
        self.assertEqual(TF_OUTPUTS["base_url"]["value"], "${local.base_url}")
        # No output is a drop-in without credentials (every call a 401):
        # the command that prints one with them, in both.
        for value in [str(SAM["Outputs"]["ZincatiConfigCommand"]["Value"]),
                      TF_OUTPUTS["zincati_config_command"]["value"]]:
            self.assertIn("fleetlock credential --name NAME --groups GROUPS --url ", value)
            self.assertNotIn("[updates", value)


def sam_transform(parameters=None, code_uri="s3://bucket/fleetlock.zip", defaults=None, managed=None):
    """SAM's own transform of the template, as CloudFormation runs it with
    these parameter values (the rest their defaults, changed by `defaults`),
    SAM's managed policies named by `managed`."""
    from samtranslator.translator.transform import transform
    from samtranslator.yaml_helper import yaml_parse

    class Policies:
        def load(self):
            return managed or {}

    text = (ROOT / "template.yaml").read_text().replace("      CodeUri: .\n", f"      CodeUri: {code_uri}\n")
    template = yaml_parse(text)
    for name, value in (defaults or {}).items():
        template["Parameters"][name]["Default"] = value
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    return transform(template, parameters or {}, Policies())


def resolved(value, parameters, defaults):
    """`value` with each parameter's Ref replaced by the value CloudFormation
    would give it: what a custom resource's properties become."""
    if isinstance(value, dict):
        if set(value) == {"Ref"} and value["Ref"] in defaults:
            return parameters.get(value["Ref"], defaults[value["Ref"]])
        return {k: resolved(v, parameters, defaults) for k, v in value.items()}
    if isinstance(value, list):
        return [resolved(v, parameters, defaults) for v in value]
    return value


class DeployCheck(unittest.TestCase):
    """A deploy that would break refuses itself: ConfigCheck runs the new code
    and settings in a function that takes no traffic before any serving
    function is updated, on every change of either."""

    SERVING = ["FleetLockFunction", "SlotEventsFunction", "AlarmPausesFunction", "DrainedFunction"]

    def test_every_serving_function_waits_for_the_check(self):
        for function in self.SERVING:
            self.assertEqual(SAM_RESOURCES[function].get("DependsOn"), "ConfigCheck", function)
        transformed = sam_transform({"SlotEvents": "true", "AlarmPauses": "api-5xx=*", "Drain": "default=15m"})
        for function in self.SERVING:
            self.assertIn("ConfigCheck", transformed["Resources"][function].get("DependsOn", []), function)

    def test_the_checked_function_has_the_serving_settings(self):
        checker = SAM_RESOURCES["ConfigCheckFunction"]["Properties"]
        api = SAM_FUNCTION["Properties"]["Environment"]["Variables"]
        pauses = SAM_RESOURCES["AlarmPausesFunction"]["Properties"]["Environment"]["Variables"]
        self.assertEqual(checker["Handler"], "check-config")
        variables = checker["Environment"]["Variables"]
        self.assertEqual({k: v for k, v in variables.items() if k != "FLEETLOCK_ALARM_PAUSES"}, api)
        self.assertEqual(variables["FLEETLOCK_ALARM_PAUSES"], pauses["FLEETLOCK_ALARM_PAUSES"])
        # Every parameter the check's environment reads is a property of
        # ConfigCheck, so a change of any of them runs the check again.
        settings = SAM_RESOURCES["ConfigCheck"]["Properties"]["Settings"]
        named = {v["Ref"] for v in settings.values() if isinstance(v, dict) and "Ref" in v}
        read = {v["Ref"] for v in variables.values() if isinstance(v, dict) and "Ref" in v} - {"LogLevel"}
        self.assertEqual(read - named, set())
        self.assertIn("AllowAnonymous", named)
        self.assertEqual(SAM_RESOURCES["ConfigCheck"]["Properties"]["ServiceTimeout"], 120)

    def test_a_new_setting_or_new_code_runs_the_check_again(self):
        # SAM's AutoPublishAlias publishes no version when only a parameter
        # changes (aws/serverless-application-model#3820): the check is
        # carried by ConfigCheck's properties, which CloudFormation compares
        # resolved, and by the version of new code.
        defaults = {name: p.get("Default", "") for name, p in SAM["Parameters"].items()}
        seen = []
        for parameters in [{"Groups": "default=1"}, {"Groups": "default=1,workers=3"},
                           {"Groups": "default=1,workers=3", "Clients": "fleet:*:00:00"}]:
            resources = sam_transform(parameters)["Resources"]
            seen.append(json.dumps(resolved(resources["ConfigCheck"]["Properties"], parameters, defaults),
                                   sort_keys=True))
        self.assertEqual(len(set(seen)), 3, "each new parameter set is a new ConfigCheck")
        versions = []
        for code in ["s3://bucket/a.zip", "s3://bucket/b.zip"]:
            resources = sam_transform({}, code)["Resources"]
            (version,) = [n for n, r in resources.items()
                          if r["Type"] == "AWS::Lambda::Version" and n.startswith("ConfigCheckFunction")]
            self.assertEqual(resources["ConfigCheck"]["Properties"]["CodeVersion"], {"Ref": version})
            versions.append(version)
        self.assertNotEqual(versions[0], versions[1], "new code is a new version, so a new ConfigCheck")

    def test_the_checks_role_reads_and_never_writes(self):
        statements = SAM_RESOURCES["ConfigCheckFunctionRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
        actions = {a for s in statements for a in s["Action"]}
        self.assertEqual(actions, {"dynamodb:DescribeTable", "cloudwatch:DescribeAlarms",
                                   "logs:CreateLogStream", "logs:PutLogEvents"})
        self.assertEqual(set(iam_policy("--for", "check-config")["Statement"][0]["Action"]), {"dynamodb:DescribeTable"})

    def test_terraform_checks_the_same_way_before_every_serving_function(self):
        checker = TF[("aws_lambda_function", "config_check")]
        self.assertEqual(checker["handler"], "check-config")
        variables = unwrap(checker["environment"])["variables"]
        api = unwrap(TF_FUNCTION["environment"])["variables"]
        self.assertEqual({k: v for k, v in variables.items() if k != "FLEETLOCK_ALARM_PAUSES"}, api)
        self.assertEqual(variables["FLEETLOCK_ALARM_PAUSES"], "${local.alarm_pauses_env}")
        invocation = TF[("aws_lambda_invocation", "config_check")]
        self.assertIn("aws_lambda_function.config_check.environment", str(invocation["triggers"]))
        self.assertIn("local.source_code_hash", str(invocation["triggers"]))
        for name in ["this", "slot_events", "alarm_pauses", "drained"]:
            self.assertIn("${aws_lambda_invocation.config_check}", TF[("aws_lambda_function", name)]["depends_on"], name)
        statements = tf_statements("config_check")
        self.assertEqual({a for s in statements for a in (s["actions"] if isinstance(s["actions"], list) else [s["actions"]])},
                         {"dynamodb:DescribeTable", "cloudwatch:DescribeAlarms", "logs:CreateLogStream", "logs:PutLogEvents"})

    def invoker(self):
        """The inline invoker's handler, with cfnresponse and boto3 stood in."""
        import types
        sent = []
        cfnresponse = types.ModuleType("cfnresponse")
        cfnresponse.SUCCESS, cfnresponse.FAILED = "SUCCESS", "FAILED"
        cfnresponse.send = lambda event, context, status, data, physical_id=None, reason=None: sent.append(
            (status, data, physical_id, reason))
        sys.modules["cfnresponse"] = cfnresponse
        sys.modules.setdefault("boto3", types.ModuleType("boto3"))
        namespace = {}
        exec(SAM_RESOURCES["ConfigCheckInvoker"]["Properties"]["Code"]["ZipFile"], namespace)
        return namespace["handler"], sent

    def test_the_invoker_fails_the_deploy_with_the_checks_reason_and_passes_a_good_check(self):
        import io
        handler, sent = self.invoker()

        class Lambda:
            def __init__(self, error, payload):
                self.error, self.payload, self.calls = error, payload, []

            def invoke(self, FunctionName, Payload):
                # As IAM would, under the role the template gives the invoker.
                arn = f"arn:aws:lambda:eu-west-1:{iam_enforcer.ACCOUNT}:function:{FunctionName}"
                if not iam_enforcer.allowed(SHIPPED_POLICIES["check-config-invoker"], "lambda:InvokeFunction",
                                            arn, {}):
                    raise RuntimeError(f"AccessDenied: lambda:InvokeFunction on {arn}")
                self.calls.append((FunctionName, json.loads(Payload)))
                answer = {"Payload": io.BytesIO(json.dumps(self.payload).encode())}
                if self.error:
                    answer["FunctionError"] = "Unhandled"
                return answer

        event = {"RequestType": "Update", "ResourceProperties": {"FunctionName": "fleetlock-ConfigCheck"}}
        refused = Lambda(True, {"errorMessage": "the functions would refuse these settings: FLEETLOCK_SETTLE: ..."})
        handler(event, None, refused)
        self.assertEqual(refused.calls, [("fleetlock-ConfigCheck", {"action": "check-config"})])
        self.assertEqual(sent[-1][0], "FAILED")
        self.assertEqual(sent[-1][3], "the functions would refuse these settings: FLEETLOCK_SETTLE: ...")
        handler(event, None, Lambda(False, {"ok": True, "groups": ["default=1", "workers=3"]}))
        self.assertEqual(sent[-1][:3], ("SUCCESS", {"Groups": "default=1,workers=3"}, "fleetlock-config-check"))

        class Broken:
            def invoke(self, **_):
                raise RuntimeError("AccessDenied")

        handler(event, None, Broken())
        self.assertEqual((sent[-1][0], sent[-1][3]), ("FAILED", "the check could not run: AccessDenied"))
        # Deleting the stack checks nothing.
        unused = Lambda(True, {})
        handler({"RequestType": "Delete", "ResourceProperties": {}}, None, unused)
        self.assertEqual((sent[-1][0], unused.calls), ("SUCCESS", []))


def cfn_rule_value(expr, parameters):
    """A rule's condition or assertion, as CloudFormation evaluates it with
    these parameter values (strings)."""
    if not isinstance(expr, dict):
        return expr
    (function, argument), = expr.items()
    if function == "Ref":
        return parameters[argument]
    values = [cfn_rule_value(a, parameters) for a in argument] if isinstance(argument, list) else []
    if function == "Fn::Equals":
        return values[0] == values[1]
    if function == "Fn::Not":
        return not values[0]
    if function == "Fn::And":
        return all(values)
    if function == "Fn::Or":
        return any(values)
    if function == "Fn::Contains":
        return values[1] in values[0]
    raise AssertionError(f"a rule function this evaluator does not know: {function}")


def sam_rules_refusing(parameters):
    """The template's rules a deploy with these parameters breaks."""
    for name, rule in SAM["Rules"].items():
        if "RuleCondition" in rule and not cfn_rule_value(rule["RuleCondition"], parameters):
            continue
        if not all(cfn_rule_value(a["Assert"], parameters) for a in rule["Assertions"]):
            yield name


class SamconfigAgainstTheRules(unittest.TestCase):
    """`config check --samconfig` refuses exactly what the template's own
    rules refuse, over every combination of the inputs both read (the gates,
    slot events, a global table's replica and stream, the credentials): the
    check's copy of the rules is held to the template's, by behaviour."""

    ENTRY = "fleet:*:000102030405060708090a0b0c0d0e0f:" + "0" * 64
    # The rules config check models; the rest (a domain, the private
    # endpoint) concern parameters it does not read.
    MODELLED = {"ClientsUnlessAnonymous", "DrainNeedsSlotEvents", "ReturnNeedsSlotEvents",
                "SlotEventsOnAGlobalTableNeedTheStream", "ExistingTableStreamNeedsSlotEvents"}
    STREAM = "arn:aws:dynamodb:eu-west-1:123456789012:table/locks/stream/2026-01-01T00:00:00.000"

    def test_every_combination_is_refused_alike(self):
        import itertools
        import tempfile
        defaults = {name: str(p.get("Default", "")) for name, p in SAM["Parameters"].items()}
        choices = {
            "Drain": ["", "default=15m"],
            "Return": ["", "default=20m"],
            "SlotEvents": ["false", "true"],
            "ExistingTableName": ["", "locks"],
            "ExistingTableStreamArn": ["", self.STREAM],
            "Clients": ["", self.ENTRY],
            "AllowAnonymous": ["false", "true"],
        }
        refused_cases = 0
        with tempfile.TemporaryDirectory() as folder:
            samconfig = Path(folder) / "samconfig.toml"
            for values in itertools.product(*choices.values()):
                case = {k: v for k, v in zip(choices, values) if v != defaults[k]}
                overrides = " ".join(f'{k}=\\"{v}\\"' for k, v in case.items())
                samconfig.write_text(f'version = 0.1\n[default.deploy.parameters]\n'
                                     f'parameter_overrides = "{overrides}"\n')
                broken = set(sam_rules_refusing({**defaults, **case}))
                self.assertLessEqual(broken, self.MODELLED, case)
                checked = subprocess.run(
                    [str(lambda_run.FLEETLOCK), "config", "check", "--samconfig", str(samconfig)],
                    capture_output=True, text=True, env=lambda_run.HERMETIC)
                # Credentials with anonymous access on: no rule's, the
                # function's own refusal (and so the deploy's check's).
                conflict = case.get("Clients") and case.get("AllowAnonymous") == "true"
                self.assertEqual(checked.returncode != 0, bool(broken) or bool(conflict),
                                 f"{case}: the rules break {sorted(broken)}; config check says "
                                 f"{checked.stdout}{checked.stderr}")
                for rule in broken - {"ClientsUnlessAnonymous"}:
                    self.assertIn(rule, checked.stderr, case)
                refused_cases += bool(broken) or bool(conflict)
        # The corpus reaches both verdicts, most of it refused.
        self.assertGreater(refused_cases, 64)
        self.assertLess(refused_cases, 128)


class Docs(unittest.TestCase):
    def test_deploy_md_names_every_parameter_and_output_of_the_template(self):
        docs = (ROOT / "docs" / "deploy.md").read_text()
        section = docs[docs.index("## Deploy with SAM"):]
        section = section[:section.index("\n## ", 3)]
        for name in list(SAM["Parameters"]) + list(SAM["Outputs"]):
            self.assertIn(f"`{name}`", section, f"docs/deploy.md's SAM section does not name {name}")


class TableKey(unittest.TestCase):
    """A customer managed table key: both templates let every role that
    touches the table or its stream, and the operator policy, use it through
    DynamoDB only, and nothing else."""

    ACTIONS = {"kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey"}

    def test_the_same_statement_on_the_same_roles_in_both(self):
        self.assertIn("TableKmsKeyArn", SAM["Parameters"])
        self.assertEqual(SAM["Conditions"]["HasTableKey"], {"Fn::Not": [{"Fn::Equals": [{"Ref": "TableKmsKeyArn"}, ""]}]})
        sse = SAM_RESOURCES["LocksTable"]["Properties"]["SSESpecification"]
        self.assertEqual(sse["KMSMasterKeyId"], {"Fn::If": ["HasTableKey", {"Ref": "TableKmsKeyArn"}, {"Ref": "AWS::NoValue"}]})
        policy = SAM_RESOURCES["TableKeyPolicy"]
        self.assertEqual(policy["Condition"], "HasTableKey")
        roles = policy["Properties"]["Roles"]
        self.assertEqual(roles[0], {"Ref": "FleetLockFunctionRole"})
        conditional = {r["Fn::If"][1]["Ref"]: r["Fn::If"][0] for r in roles[1:]}
        self.assertEqual(conditional, {"SlotEventsFunctionRole": "HasSlotEvents",
                                       "AlarmPausesFunctionRole": "HasAlarmPauses",
                                       "DrainedFunctionRole": "HasDrainedFunction"})
        # Every role that reads or writes the table is among them.
        for function in ["FleetLockFunction", "SlotEventsFunction", "AlarmPausesFunction", "DrainedFunction"]:
            touches = any(str(s.get("Resource", "")).find("LocksTable") >= 0 for s in sam_role_statements(function))
            self.assertTrue(touches, function)
            self.assertIn(f"{function}Role", [r.get("Ref") or r["Fn::If"][1]["Ref"] for r in roles])
        (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
        operator = SAM_RESOURCES["OperatorPolicy"]["Properties"]["PolicyDocument"]["Statement"][-1]["Fn::If"][1]
        for sam in [statement, operator]:
            self.assertEqual(set(sam["Action"]), self.ACTIONS)
            self.assertEqual(sam["Resource"], {"Ref": "TableKmsKeyArn"})
            self.assertEqual(sam["Condition"], {"StringEquals": {"kms:ViaService": {"Fn::Sub": "dynamodb.${AWS::Region}.amazonaws.com"}}})
        tf = TF_LOCALS["table_key_policy"]
        for action in self.ACTIONS:
            self.assertIn(action, tf)
        self.assertIn("dynamodb.${data.aws_region.current.region}.amazonaws.com", tf)
        roles_tf = TF_LOCALS["table_key_roles"]
        for role in ["aws_iam_role.function", "aws_iam_role.slot_events", "aws_iam_role.alarm_pauses", "aws_iam_role.drained"]:
            self.assertIn(role, roles_tf)
        self.assertIn("local.table_key_policy", str(TF_DATA[("aws_iam_policy_document", "operator")]["source_policy_documents"]))


class PrivateEndpoint(unittest.TestCase):
    """Endpoint PrivateRestApi / endpoint = "private_rest_api": the same
    private REST API in both, reachable only through execute-api VPC endpoints."""

    SAM_RESOURCES_OF_IT = ["PrivateRestApi", "PrivateRestApiProxyResource", "PrivateRestApiRootMethod",
                           "PrivateRestApiProxyMethod", "PrivateRestApiDeployment", "PrivateRestApiStage",
                           "PrivateRestApiInvokePermission", "PrivateRestApiServerErrorAlarm"]

    def test_only_with_the_private_endpoint(self):
        for name in self.SAM_RESOURCES_OF_IT:
            self.assertEqual(sam_condition(name), "UsePrivateRestApi", name)
        self.assertEqual(sam_condition("PrivateApiVpcEndpoint"), "CreatePrivateVpcEndpoint")
        self.assertEqual(sam_condition("PrivateApiAccessLogGroup"), "HasPrivateApiAccessLog")
        for rtype, name in [("aws_api_gateway_rest_api", "private"), ("aws_api_gateway_resource", "private_proxy"),
                            ("aws_api_gateway_deployment", "private"), ("aws_api_gateway_stage", "private"),
                            ("aws_api_gateway_method_settings", "private"), ("aws_lambda_permission", "private_api"),
                            ("aws_cloudwatch_metric_alarm", "private_api_server_errors")]:
            self.assertEqual(tf_count(rtype, name), "${local.use_private_rest_api ? 1 : 0}", name)
        self.assertEqual(tf_count("aws_vpc_endpoint", "private_api"), "${local.create_private_vpc_endpoint ? 1 : 0}")
        self.assertEqual(TF_LOCALS["create_private_vpc_endpoint"],
                         "${local.use_private_rest_api && length(var.private_vpc_endpoint_ids) == 0}")
        self.assertEqual(SAM["Conditions"]["CreatePrivateVpcEndpoint"]["Fn::And"][0], {"Condition": "UsePrivateRestApi"})

    def test_a_private_api_on_the_vpc_endpoints(self):
        api = SAM_RESOURCES["PrivateRestApi"]["Properties"]
        ids = {"Fn::If": ["CreatePrivateVpcEndpoint", [{"Ref": "PrivateApiVpcEndpoint"}],
                          {"Ref": "PrivateVpcEndpointIds"}]}
        self.assertEqual(api["EndpointConfiguration"], {"Types": ["PRIVATE"], "VpcEndpointIds": ids})
        tf = TF[("aws_api_gateway_rest_api", "private")]
        self.assertEqual(tf["endpoint_configuration"]["types"], "PRIVATE")  # ["PRIVATE"], unwrapped
        self.assertEqual(tf["endpoint_configuration"]["vpc_endpoint_ids"], "${local.private_vpc_endpoint_ids}")
        endpoint = SAM_RESOURCES["PrivateApiVpcEndpoint"]["Properties"]
        tf_endpoint = TF[("aws_vpc_endpoint", "private_api")]
        self.assertEqual(endpoint["VpcEndpointType"], "Interface")
        self.assertEqual(tf_endpoint["vpc_endpoint_type"], "Interface")
        self.assertEqual(endpoint["ServiceName"], {"Fn::Sub": "com.amazonaws.${AWS::Region}.execute-api"})
        self.assertEqual(tf_endpoint["service_name"], "com.amazonaws.${data.aws_region.current.region}.execute-api")
        # Private DNS off unless asked for, in both.
        self.assertEqual(endpoint["PrivateDnsEnabled"], {"Fn::If": ["PrivateDnsOn", True, False]})
        self.assertEqual(tf_endpoint["private_dns_enabled"], "${var.private_dns_enabled}")
        self.assertEqual(sam_param_default("PrivateDns"), "false")
        self.assertIs(TF_VARS["private_dns_enabled"]["default"], False)
        # The endpoint made for the nodes reaches this account's private APIs only.
        (sam_statement,) = endpoint["PolicyDocument"]["Statement"]
        self.assertEqual(sam_statement["Resource"],
                         {"Fn::Sub": "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:*"})
        self.assertEqual((sam_statement["Effect"], sam_statement["Action"]), ("Allow", "execute-api:Invoke"))
        self.assertIn("execute-api:${data.aws_region.current.region}:${data.aws_caller_identity.current.account_id}:*",
                      str(tf_endpoint["policy"]))

    def test_the_resource_policy_admits_the_endpoints_and_the_source_cidrs_only(self):
        statements = SAM_RESOURCES["PrivateRestApi"]["Properties"]["Policy"]["Statement"]
        endpoints, source_vpcs, allow = statements
        self.assertEqual((endpoints["Effect"], endpoints["Action"], endpoints["Resource"]),
                         ("Deny", "execute-api:Invoke", "execute-api:/*"))
        self.assertEqual(list(endpoints["Condition"]["StringNotEquals"]), ["aws:SourceVpce"])
        condition, vpcs, absent = source_vpcs["Fn::If"]
        self.assertEqual((condition, absent), ("HasPrivateSourceCidrs", {"Ref": "AWS::NoValue"}))
        # The caller's address: aws:SourceVpc would name the endpoint's VPC.
        self.assertEqual(vpcs["Condition"], {"NotIpAddress": {"aws:VpcSourceIp": {"Ref": "PrivateSourceCidrs"}}})
        self.assertEqual((allow["Effect"], allow["Principal"], allow["Resource"]), ("Allow", "*", "execute-api:/*"))
        tf = TF_LOCALS["private_api_policy"]
        for sid in [endpoints["Sid"], vpcs["Sid"], allow["Sid"]]:
            self.assertIn(f"'Sid': '{sid}'", tf)
        self.assertIn("'aws:SourceVpce': '${local.private_vpc_endpoint_ids}'", tf)
        self.assertIn("'aws:VpcSourceIp': '${var.private_source_cidrs}'", tf)
        self.assertNotIn("aws:SourceVpc'", tf)
        self.assertEqual(TF[("aws_api_gateway_rest_api", "private")]["policy"], "${local.private_api_policy}")

    def test_any_path_and_method_reach_the_function(self):
        self.assertEqual(SAM_RESOURCES["PrivateRestApiProxyResource"]["Properties"]["PathPart"], "{proxy+}")
        self.assertEqual(TF[("aws_api_gateway_resource", "private_proxy")]["path_part"], "{proxy+}")
        for name in ["PrivateRestApiRootMethod", "PrivateRestApiProxyMethod"]:
            method = SAM_RESOURCES[name]["Properties"]
            self.assertEqual((method["HttpMethod"], method["AuthorizationType"]), ("ANY", "NONE"), name)
            self.assertEqual((method["Integration"]["Type"], method["Integration"]["IntegrationHttpMethod"]),
                             ("AWS_PROXY", "POST"), name)
            self.assertIn("${FleetLockFunction.Arn}/invocations", method["Integration"]["Uri"]["Fn::Sub"])
        tf_method = TF[("aws_api_gateway_method", "private")]
        self.assertEqual((tf_method["http_method"], tf_method["authorization"]), ("ANY", "NONE"))
        self.assertIn("root", tf_method["for_each"])
        self.assertIn("proxy", tf_method["for_each"])
        tf_integration = TF[("aws_api_gateway_integration", "private")]
        self.assertEqual((tf_integration["type"], tf_integration["integration_http_method"]), ("AWS_PROXY", "POST"))
        self.assertEqual(tf_integration["uri"], "${aws_lambda_function.this.invoke_arn}")
        permission = SAM_RESOURCES["PrivateRestApiInvokePermission"]["Properties"]
        self.assertTrue(permission["SourceArn"]["Fn::Sub"].endswith(":${PrivateRestApi}/*"))
        self.assertEqual(TF[("aws_lambda_permission", "private_api")]["source_arn"],
                         "${aws_api_gateway_rest_api.private[0].execution_arn}/*")

    def test_one_stage_named_fleetlock_throttled_as_the_http_api(self):
        stage = SAM_RESOURCES["PrivateRestApiStage"]["Properties"]
        self.assertEqual(stage["StageName"], "fleetlock")
        self.assertEqual(TF_LOCALS["private_stage"], "fleetlock")
        self.assertEqual(stage["MethodSettings"], [{
            "ResourcePath": "/*", "HttpMethod": "*",
            "ThrottlingRateLimit": {"Ref": "ThrottlingRateLimit"},
            "ThrottlingBurstLimit": {"Ref": "ThrottlingBurstLimit"},
        }])
        settings = TF[("aws_api_gateway_method_settings", "private")]
        self.assertEqual(settings["method_path"], "*/*")
        self.assertEqual(settings["settings"]["throttling_rate_limit"], "${var.throttling_rate_limit}")
        self.assertEqual(settings["settings"]["throttling_burst_limit"], "${var.throttling_burst_limit}")

    def test_the_access_log_lines_are_the_same_in_both(self):
        # The HTTP API's fields, and for the private API the caller's endpoint too.
        fields = TF_LOCALS["access_log_fields"]
        http = SAM_RESOURCES["HttpApiDefaultStage"]["Properties"]["AccessLogSettings"]["Fn::If"][1]["Format"]
        self.assertEqual(json.loads(http), fields)
        private = SAM_RESOURCES["PrivateRestApiStage"]["Properties"]["AccessLogSetting"]["Fn::If"][1]["Format"]
        self.assertEqual(json.loads(private), {**fields, "vpce": "$context.identity.vpceId"})
        http_tf = TF[("aws_apigatewayv2_stage", "default")]["dynamic"]["access_log_settings"]["content"]
        self.assertEqual(http_tf["format"], "${jsonencode(local.access_log_fields)}")
        private_tf = TF[("aws_api_gateway_stage", "private")]["dynamic"]["access_log_settings"]["content"]
        self.assertEqual(private_tf["format"],
                         "${jsonencode(merge(local.access_log_fields,{'vpce': '$context.identity.vpceId'}))}")

    def test_access_log_off_by_default_in_both(self):
        self.assertEqual(sam_param_default("PrivateApiAccessLog"), "false")
        self.assertIs(TF_VARS["private_api_access_log"]["default"], False)
        condition, *_ = SAM_RESOURCES["PrivateRestApiStage"]["Properties"]["AccessLogSetting"]["Fn::If"]
        self.assertEqual(condition, "HasPrivateApiAccessLog")
        self.assertEqual(TF_LOCALS["has_private_api_access_log"], "${local.use_private_rest_api && var.private_api_access_log}")
        # Neither sets the account's API Gateway role (it would replace one).
        self.assertNotIn("AWS::ApiGateway::Account", {r["Type"] for r in SAM_RESOURCES.values()})
        self.assertNotIn("aws_api_gateway_account", {rtype for rtype, _ in TF})

    def test_base_urls_name_the_stage_and_end_with_a_slash(self):
        condition, private, _ = SAM["Outputs"]["BaseUrl"]["Value"]["Fn::If"]
        url, values = private["Fn::Sub"]
        self.assertEqual(url, "https://${PrivateRestApi}-${Vpce}.execute-api.${AWS::Region}.${AWS::URLSuffix}/fleetlock/")
        self.assertEqual(values["Vpce"], {"Fn::If": ["CreatePrivateVpcEndpoint", {"Ref": "PrivateApiVpcEndpoint"},
                                                     {"Fn::Select": [0, {"Ref": "PrivateVpcEndpointIds"}]}]})
        self.assertEqual(SAM["Outputs"]["PrivateDnsBaseUrl"]["Value"],
                         {"Fn::Sub": "https://${PrivateRestApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}/fleetlock/"})
        self.assertIn("${local.private_vpc_endpoint_ids[0]}.${local.private_host}/${local.private_stage}/",
                      TF_LOCALS["private_base_url"])
        self.assertIn("${aws_api_gateway_rest_api.private[0].id}.${local.private_host}/${local.private_stage}/",
                      TF_LOCALS["private_dns_base_url"])

    def test_its_5xx_alarm_reads_the_rest_api_by_name_and_stage(self):
        sam = SAM_RESOURCES["PrivateRestApiServerErrorAlarm"]["Properties"]
        tf = TF[("aws_cloudwatch_metric_alarm", "private_api_server_errors")]
        self.assertEqual((sam["Namespace"], sam["MetricName"]), ("AWS/ApiGateway", "5XXError"))
        self.assertEqual((tf["namespace"], tf["metric_name"]), ("AWS/ApiGateway", "5XXError"))
        self.assertEqual(sam["Dimensions"], [{"Name": "ApiName", "Value": {"Ref": "AWS::StackName"}},
                                             {"Name": "Stage", "Value": "fleetlock"}])
        self.assertEqual(tf["dimensions"], {"ApiName": "${aws_api_gateway_rest_api.private[0].name}",
                                            "Stage": "${local.private_stage}"})
        # The REST API's name is the one the alarm reads.
        self.assertEqual(SAM_RESOURCES["PrivateRestApi"]["Properties"]["Name"], {"Ref": "AWS::StackName"})
        for key in ["Statistic", "Period", "ComparisonOperator", "TreatMissingData", "EvaluationPeriods"]:
            self.assertEqual(sam[key], tf[tf_alarm_key(key)], key)

    def test_sams_transform_keeps_the_private_api_as_written(self):
        # SAM's own transform of the template switched to this endpoint: the
        # REST API, its methods and the VPC endpoint come out as written, and
        # SAM adds no API, stage or role of its own.
        resources = sam_transform(defaults={"Endpoint": "PrivateRestApi",
                                            "PrivateVpcId": "vpc-0123456789abcdef0"})["Resources"]
        for name in self.SAM_RESOURCES_OF_IT + ["PrivateApiVpcEndpoint"]:
            self.assertEqual(resources[name], SAM_RESOURCES[name], name)
        rest_apis = [n for n, r in resources.items() if r["Type"] == "AWS::ApiGateway::RestApi"]
        self.assertEqual(rest_apis, ["PrivateRestApi"])
        roles = {n for n, r in resources.items() if r["Type"] == "AWS::IAM::Role"}
        self.assertEqual(roles, {"FleetLockFunctionRole", "SlotEventsFunctionRole", "AlarmPausesFunctionRole",
                                 "DrainedFunctionRole", "ConfigCheckFunctionRole", "ConfigCheckInvokerRole"})

    def test_the_same_settings_in_both(self):
        pairs = {"PrivateVpcEndpointIds": "private_vpc_endpoint_ids", "PrivateVpcId": "private_vpc_id",
                 "PrivateSubnetIds": "private_subnet_ids", "PrivateSecurityGroupIds": "private_security_group_ids",
                 "PrivateDns": "private_dns_enabled", "PrivateSourceCidrs": "private_source_cidrs",
                 "PrivateApiAccessLog": "private_api_access_log"}
        sam_private = {name for name in SAM["Parameters"] if name.startswith("Private")}
        self.assertEqual(sam_private, set(pairs))
        self.assertEqual({name for name in TF_VARS if name.startswith("private_")}, set(pairs.values()))
        # A network or endpoints are required, private settings need the
        # private endpoint, and a custom domain is refused with it: in both.
        self.assertIn("PrivateEndpointNeedsANetwork", SAM["Rules"])
        self.assertIn("PrivateSettingsNeedThePrivateEndpoint", SAM["Rules"])
        preconditions = [unwrap(p)["condition"] for p in TF_FUNCTION["lifecycle"]["precondition"]]
        self.assertTrue(any("length(var.private_vpc_endpoint_ids) > 0" in c for c in preconditions))
        self.assertTrue(any(c.startswith("${local.use_private_rest_api || length(var.private_vpc_endpoint_ids) == 0")
                            for c in preconditions), preconditions)


class Release(unittest.TestCase):
    def test_serverless_repo_metadata_matches_the_crate(self):
        meta = SAM["Metadata"]["AWS::ServerlessRepo::Application"]
        cargo = (ROOT / "Cargo.toml").read_text()
        version = re.search(r'^version = "([^"]+)"', cargo, re.M).group(1)
        self.assertEqual(meta["SemanticVersion"], version)
        self.assertEqual(meta["SpdxLicenseId"], "MIT")
        self.assertIn('license = "MIT"', cargo)
        self.assertTrue((ROOT / "LICENSE").read_text().startswith("MIT License"))
        for key in ["LicenseUrl", "ReadmeUrl"]:
            self.assertTrue((ROOT / meta[key]).exists(), meta[key])
        self.assertIn("## Unreleased", (ROOT / "CHANGELOG.md").read_text())

    def test_one_application_per_architecture(self):
        import tempfile

        for arch in ["arm64", "x86_64"]:
            with self.subTest(arch=arch), tempfile.TemporaryDirectory() as tmp:
                zip_path = f"dist/fleetlock-{arch}.zip"
                out = subprocess.run(
                    [str(ROOT / "scripts" / "sar-template"), arch, "1.2.3", zip_path, "https://example.org/fleetlock"],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                path = Path(tmp) / f"sar-{arch}.yaml"
                path.write_text(out)
                template, problems = decode(str(path))
                self.assertFalse(problems)
                self.assertEqual(template["Parameters"]["Architecture"]["AllowedValues"], [arch])
                self.assertEqual(template["Parameters"]["Architecture"]["Default"], arch)
                function = template["Resources"]["FleetLockFunction"]
                self.assertEqual(function["Properties"]["CodeUri"], zip_path)
                self.assertNotIn("BuildMethod", function.get("Metadata", {}))
                meta = template["Metadata"]["AWS::ServerlessRepo::Application"]
                self.assertEqual(meta["Name"], "fleetlock-" + arch.replace("_", "-"))
                self.assertEqual(meta["SemanticVersion"], "1.2.3")
                self.assertEqual(meta["SourceCodeUrl"], "https://example.org/fleetlock")
                lint = subprocess.run(["cfn-lint", str(path)], capture_output=True, text=True)
                self.assertEqual(lint.returncode, 0, lint.stdout + lint.stderr)

    def test_the_author_is_one_the_serverless_application_repository_accepts(self):
        # SAR's documented pattern for Author.
        author = SAM["Metadata"]["AWS::ServerlessRepo::Application"]["Author"]
        self.assertRegex(author, r"^[a-z0-9](([a-z0-9]|-(?!-))*[a-z0-9])?$")
        self.assertLessEqual(len(author), 127)

    def test_every_resource_type_an_application_deploys_is_on_the_repositorys_list(self):
        import tempfile

        from samtranslator.translator.transform import transform
        from samtranslator.yaml_helper import yaml_parse

        listed = (ROOT / "tests" / "iac" / "sar-supported-resources.txt").read_text().splitlines()
        supported = {line for line in listed if line and not line.startswith("#")}
        self.assertIn("2026-12-01", "".join(listed[:3]), "the list says when it was read")
        # The full template has the function URL and the private endpoint's
        # VPC endpoint, which SAR cannot deploy.
        types = {r["Type"] for r in SAM_RESOURCES.values()}
        self.assertEqual(types - supported, {"AWS::Lambda::Url", "AWS::EC2::VPCEndpoint"})

        class Policies:
            def load(self):
                return {}

        os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
        for arch in ["arm64", "x86_64"]:
            with self.subTest(arch=arch), tempfile.TemporaryDirectory() as tmp:
                out = subprocess.run(
                    [str(ROOT / "scripts" / "sar-template"), arch, "1.2.3", "s3://bucket/fleetlock.zip",
                     "https://example.org/fleetlock"],
                    check=True, capture_output=True, text=True,
                ).stdout
                template = yaml_parse(out)
                self.assertNotIn("Endpoint", template["Parameters"])
                raw = {r["Type"] for r in template["Resources"].values()}
                self.assertLessEqual(raw, supported, raw - supported)
                # And what SAM's transform makes of it, every switch on.
                template["Parameters"]["SlotEvents"]["Default"] = "true"
                template["Parameters"]["AlarmPauses"]["Default"] = "api-5xx=*"
                deployed = {r["Type"] for r in transform(template, {}, Policies())["Resources"].values()}
                self.assertLessEqual(deployed, supported, deployed - supported)
                self.assertIn("AWS::ApiGatewayV2::Api", deployed)

    def test_parameters_come_in_groups_each_once(self):
        groups = SAM["Metadata"]["AWS::CloudFormation::Interface"]["ParameterGroups"]
        grouped = [p for group in groups for p in group["Parameters"]]
        self.assertEqual(sorted(grouped), sorted(SAM["Parameters"]))
        self.assertEqual(len(grouped), len(set(grouped)))

    def test_arn_and_domain_parameters_are_checked_as_terraform_checks_them(self):
        for param, var, good, bad in [
            ("AlarmTopicArn", "alarm_topic_arn", "arn:aws:sns:eu-west-1:123456789012:oncall", "oncall"),
            ("CertificateArn", "certificate_arn", "arn:aws:acm:eu-west-1:123456789012:certificate/0a-1b",
             "arn:aws:acm:eu-west-1:123456789012:cert"),
            ("DomainName", "domain_name", "fleetlock.example.com", "https://fleetlock.example.com/"),
        ]:
            pattern = SAM["Parameters"][param]["AllowedPattern"]
            self.assertRegex(good, pattern)
            self.assertRegex("", pattern)
            self.assertNotRegex(bad, pattern)
            condition = TF_VARS[var]["validation"]["condition"]
            self.assertIn(pattern.replace("^$|", ""), condition.replace("\\\\", "\\"), var)

    def test_workflows_run_the_readme_test_command_and_build_both_zips(self):
        test = (ROOT / ".github" / "workflows" / "test.yml").read_text()
        self.assertIn("run: ./scripts/test", test)
        self.assertIn("exec ./scripts/test", (ROOT / ".ci" / "run").read_text())
        release = (ROOT / ".github" / "workflows" / "release.yml").read_text()
        self.assertIn("arch: [arm64, x86_64]", release)
        self.assertIn("./scripts/build-lambda", release)
        self.assertIn("./scripts/build-cli", release)
        self.assertIn("sha256sum", release)
        self.assertIn("scripts/sar-template", release)
        self.assertIn("sam publish", release)



def tf_alarm_key(key):
    return re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower()


SAM_EVENTS = SAM_RESOURCES["SlotEventsFunction"]
TF_EVENTS = TF[("aws_lambda_function", "slot_events")]


class SlotEvents(unittest.TestCase):
    """The second function: the table's stream to EventBridge."""

    def test_off_by_default_and_switched_the_same_way(self):
        self.assertEqual(sam_param_default("SlotEvents"), "false")
        self.assertIs(TF_VARS["slot_events"]["default"], False)
        self.assertEqual(SAM["Conditions"]["HasSlotEvents"], {"Fn::Equals": [{"Ref": "SlotEvents"}, "true"]})
        for name in ["SlotEventsLogGroup", "SlotEventsFunction", "SlotEventsFailures", "SlotEventsMapping",
                     "SlotEventsFailedAlarm", "SlotEventsIteratorAgeAlarm", "UnreadableRecordsAlarm"]:
            self.assertEqual(sam_condition(name), "HasSlotEvents", name)
        for rtype, name in [("aws_lambda_function", "slot_events"), ("aws_sqs_queue", "slot_events_failures"),
                            ("aws_lambda_event_source_mapping", "slot_events"), ("aws_iam_role", "slot_events"),
                            ("aws_cloudwatch_metric_alarm", "slot_events_failed"),
                            ("aws_cloudwatch_metric_alarm", "slot_events_iterator_age"),
                            ("aws_cloudwatch_metric_alarm", "unreadable_records")]:
            self.assertEqual(TF[(rtype, name)]["count"], "${local.slot_events}", name)
        self.assertEqual(TF_LOCALS["slot_events"], "${var.slot_events ? 1 : 0}")

    def test_the_table_streams_old_and_new_images_only_when_switched_on(self):
        self.assertEqual(SAM_TABLE["StreamSpecification"],
                         {"Fn::If": ["HasSlotEvents", {"StreamViewType": "NEW_AND_OLD_IMAGES"}, {"Ref": "AWS::NoValue"}]})
        self.assertEqual(TF_TABLE["stream_enabled"], "${var.slot_events}")
        # python-hcl2 prints HCL's null as None.
        self.assertRegex(TF_TABLE["stream_view_type"], r'^\$\{var.slot_events \? "NEW_AND_OLD_IMAGES" : (null|None)\}$')

    def test_same_binary_with_the_handler_the_code_knows(self):
        # The binary, started with the template's handler, answers a batch.
        answers, _ = slot_events_run()
        self.assertEqual(answers, [("response", {"batchItemFailures": []})])
        self.assertEqual(SAM_EVENTS["Properties"]["Handler"], "slot-events")
        self.assertEqual(TF_EVENTS["handler"], "slot-events")
        self.assertEqual(SAM_EVENTS["Properties"]["CodeUri"], SAM_FUNCTION["Properties"]["CodeUri"])
        self.assertEqual(SAM_EVENTS["Metadata"]["BuildProperties"], SAM_FUNCTION["Metadata"]["BuildProperties"])
        self.assertEqual(TF_EVENTS["filename"], TF_FUNCTION["filename"])
        self.assertEqual(SAM_EVENTS["Properties"]["Architectures"], SAM_FUNCTION["Properties"]["Architectures"])
        self.assertEqual(TF_EVENTS["architectures"], TF_FUNCTION["architectures"])
        self.assertEqual(SAM_EVENTS["Properties"]["MemorySize"], TF_EVENTS["memory_size"])
        self.assertEqual(SAM_EVENTS["Properties"]["Timeout"], TF_EVENTS["timeout"])
        self.assertEqual(TF_EVENTS["logging_config"]["log_format"], "JSON")
        self.assertEqual(SAM_EVENTS["Properties"]["LoggingConfig"]["LogFormat"], "JSON")

    def test_its_environment_is_the_bus_and_read_by_the_code(self):
        sam = SAM_EVENTS["Properties"]["Environment"]["Variables"]
        tf = TF_EVENTS["environment"]["variables"]
        self.assertEqual(set(sam), set(tf))
        self.assertEqual(sam["FLEETLOCK_EVENT_BUS"], {"Ref": "EventBusName"})
        self.assertEqual(tf["FLEETLOCK_EVENT_BUS"], "${var.event_bus_name}")
        self.assertEqual(sam_param_default("EventBusName"), TF_VARS["event_bus_name"]["default"])
        documented = fleetlock("help").split("ENVIRONMENT:")[1]
        for name in sam:
            self.assertIn(name, documented)
        # Neither the table nor the clients: this entry point needs neither.
        self.assertNotIn("FLEETLOCK_TABLE", sam)
        self.assertNotIn("FLEETLOCK_CLIENTS", sam)

    def test_least_privilege_is_exactly_the_policy_the_code_prints(self):
        expected = {s["Sid"]: set(s["Action"]) for s in iam_policy("--for", "slot-events")["Statement"]}
        statements = without_logs(sam_role_statements("SlotEventsFunction"), "SlotEventsLogGroup")
        sam = {s["Sid"]: s for s in statements}
        self.assertEqual({sid: set(s["Action"]) for sid, s in sam.items()}, expected)
        self.assertEqual(sam["LockTableStream"]["Resource"], {"Fn::If": ["MakesTable", {"Fn::Sub": "${LocksTable.Arn}/stream/*"}, {
            "Fn::Sub": "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${ExistingTableName}/stream/*"}]})
        self.assertEqual(sam["SlotEventsFailures"]["Resource"], {"Fn::GetAtt": ["SlotEventsFailures", "Arn"]})
        self.assertTrue(sam["SlotEventsBus"]["Resource"]["Fn::Sub"].endswith(":event-bus/${EventBusName}"))
        tf = {s["sid"]: s for s in tf_statements("slot_events")}
        logs = tf.pop("Logs")
        self.assertEqual(set(logs["actions"]), {"logs:CreateLogStream", "logs:PutLogEvents"})
        self.assertEqual({sid: set(s["actions"]) if isinstance(s["actions"], list) else {s["actions"]}
                          for sid, s in tf.items()}, expected)
        self.assertEqual(tf["LockTableStream"]["resources"], "${local.table_arn}/stream/*")
        self.assertEqual(tf["SlotEventsBus"]["resources"], "${local.event_bus_arn}")
        self.assertTrue(TF_LOCALS["event_bus_arn"].endswith(":event-bus/${var.event_bus_name}"))
        for statement in list(sam.values()) + list(tf.values()):
            for action in statement.get("Action", statement.get("actions", [])):
                self.assertNotIn("*", action)

    def test_no_sam_event_attaches_the_wildcard_stream_policy(self):
        for name, resource in SAM_RESOURCES.items():
            for event in resource.get("Properties", {}).get("Events", {}).values():
                self.assertNotIn(event["Type"], ["DynamoDB", "Kinesis"], name)
            self.assertNotIn("AWSLambdaDynamoDBExecutionRole", json.dumps(resource), name)
        self.assertNotIn("AWSLambdaDynamoDBExecutionRole", json.dumps([str(v) for v in TF.values()]))

    def test_after_the_sam_transform_every_role_is_our_own_with_no_managed_policy(self):
        # SAM's own transform, with every switch on: each function keeps the
        # role the template gives it, and no role gets a managed policy
        # (AWSLambdaBasicExecutionRole's log actions, or
        # AWSLambdaDynamoDBExecutionRole's stream actions, on "*").
        basic = "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
        resources = sam_transform(defaults={"SlotEvents": "true", "AlarmPauses": "api-5xx=*"},
                                  managed={"AWSLambdaBasicExecutionRole": basic})["Resources"]
        roles = {n: r for n, r in resources.items() if r["Type"] == "AWS::IAM::Role"}
        self.assertEqual(set(roles), {"FleetLockFunctionRole", "SlotEventsFunctionRole", "AlarmPausesFunctionRole",
                                      "DrainedFunctionRole", "ConfigCheckFunctionRole", "ConfigCheckInvokerRole"})
        for name, role in roles.items():
            self.assertNotIn("ManagedPolicyArns", role["Properties"], name)
            self.assertNotIn(basic, json.dumps(role), name)
            function = resources[name.removesuffix("Role")]["Properties"]
            self.assertEqual(function["Role"], {"Fn::GetAtt": [name, "Arn"]})
        self.assertEqual(resources["SlotEventsFunction"]["Properties"]["Handler"], "slot-events")
        self.assertEqual(resources["AlarmPausesFunction"]["Properties"]["Handler"], "alarm-pauses")
        rules = sorted(n for n, r in resources.items() if r["Type"] == "AWS::Events::Rule")
        self.assertEqual(rules, ["AlarmPausesFunctionAlarmStateChange", "AlarmPausesFunctionReconcile",
                                 "DrainedFunctionSweep"])

    def test_the_mapping_retries_splits_and_keeps_what_fails_the_same_way(self):
        sam = SAM_RESOURCES["SlotEventsMapping"]["Properties"]
        tf = TF[("aws_lambda_event_source_mapping", "slot_events")]
        self.assertEqual(sam["EventSourceArn"], {"Fn::If": ["MakesTable", {"Fn::GetAtt": ["LocksTable", "StreamArn"]},
                                                    {"Fn::Sub": "${ExistingTableStreamArn}"}]})
        self.assertEqual(tf["event_source_arn"], "${local.table_stream_arn}")
        self.assertEqual(sam["FunctionName"], {"Ref": "SlotEventsFunction"})
        self.assertEqual(sam["FunctionResponseTypes"], ["ReportBatchItemFailures"])
        self.assertEqual(tf["function_response_types"], "ReportBatchItemFailures")
        self.assertIs(sam["BisectBatchOnFunctionError"], True)
        for key in ["StartingPosition", "BatchSize", "ParallelizationFactor", "BisectBatchOnFunctionError",
                    "MaximumRetryAttempts", "MaximumRecordAgeInSeconds"]:
            # python-hcl2 reads a negative number as the expression ${-1}.
            tf_value = tf[tf_alarm_key(key)]
            if isinstance(tf_value, str) and re.fullmatch(r"\$\{-?\d+\}", tf_value):
                tf_value = int(tf_value[2:-1])
            self.assertEqual(sam[key], tf_value, key)
        self.assertEqual(sam["DestinationConfig"]["OnFailure"]["Destination"],
                         {"Fn::GetAtt": ["SlotEventsFailures", "Arn"]})
        self.assertEqual(tf["destination_config"]["on_failure"]["destination_arn"],
                         "${aws_sqs_queue.slot_events_failures[0].arn}")
        self.assertIs(SAM_RESOURCES["SlotEventsFailures"]["Properties"]["SqsManagedSseEnabled"], True)
        # SQS's own keys unless a customer managed key is given (Terraform).
        queue = TF[("aws_sqs_queue", "slot_events_failures")]
        self.assertEqual(queue["sqs_managed_sse_enabled"], "${var.queue_kms_key_arn == None ? True : None}")
        self.assertEqual(queue["kms_master_key_id"], "${var.queue_kms_key_arn}")

    def test_alarms_watch_the_queue_the_lag_and_the_metric_the_code_emits(self):
        (namespace, unreadable), (unit, dimensions, values) = the_one_metric(slot_events_run)
        self.assertEqual((unit, dimensions, values), ("Count", ["Service"], {"Service": "fleetlock-test"}))
        pairs = [("SlotEventsFailedAlarm", "slot_events_failed", "AWS/SQS", "ApproximateNumberOfMessagesVisible"),
                 ("SlotEventsIteratorAgeAlarm", "slot_events_iterator_age", "AWS/Lambda", "IteratorAge"),
                 ("UnreadableRecordsAlarm", "unreadable_records", namespace, unreadable)]
        for sam_name, tf_name, ns, metric in pairs:
            sam = SAM_RESOURCES[sam_name]["Properties"]
            tf = TF[("aws_cloudwatch_metric_alarm", tf_name)]
            self.assertEqual((sam["Namespace"], sam["MetricName"]), (ns, metric), sam_name)
            self.assertEqual((tf["namespace"], tf["metric_name"]), (ns, metric), tf_name)
            for key in ["Statistic", "Period", "ComparisonOperator", "TreatMissingData", "EvaluationPeriods"]:
                self.assertEqual(sam[key], tf[tf_alarm_key(key)], f"{sam_name} {key}")
            self.assertIn("AlarmActions", sam)
            self.assertEqual(tf["alarm_actions"], "${local.alarm_actions}")
        self.assertEqual(SAM_RESOURCES["UnreadableRecordsAlarm"]["Properties"]["Dimensions"],
                         [{"Name": "Service", "Value": {"Ref": "SlotEventsFunction"}}])
        self.assertEqual(sam_param_default("SlotEventsIteratorAgeSeconds"),
                         TF_VARS["slot_events_iterator_age_seconds"]["default"])


SAM_PAUSES = SAM_RESOURCES["AlarmPausesFunction"]
TF_PAUSES = TF[("aws_lambda_function", "alarm_pauses")]
DASHBOARD_TEMPLATE = (INFRA / "dashboard.json.tftpl").read_text()
PLACEHOLDER = re.compile(r"\$\{(\w+)\}")


def sam_alarms():
    return {name: r for name, r in SAM_RESOURCES.items() if r["Type"] == "AWS::CloudWatch::Alarm"}


def tf_alarms():
    return {name: body for (rtype, name), body in TF.items() if rtype == "aws_cloudwatch_metric_alarm"}


def dashboard(values=None):
    """The dashboard body with every placeholder filled."""
    return json.loads(PLACEHOLDER.sub(lambda m: (values or {}).get(m.group(1), f"<{m.group(1)}>"), DASHBOARD_TEMPLATE))


class AlarmsReachAPerson(unittest.TestCase):
    def test_a_topic_is_created_unless_one_is_given(self):
        self.assertEqual(SAM["Conditions"]["CreateAlarmTopic"], {"Fn::Equals": [{"Ref": "AlarmTopicArn"}, ""]})
        self.assertEqual(sam_condition("AlarmTopic"), "CreateAlarmTopic")
        self.assertEqual(TF[("aws_sns_topic", "alarms")]["count"], "${local.create_alarm_topic ? 1 : 0}")
        # SAM's empty string is Terraform's null.
        self.assertEqual(TF_LOCALS["create_alarm_topic"], "${var.alarm_topic_arn == None}")
        self.assertEqual(sam_param_default("AlarmTopicArn"), "")
        self.assertIsNone(TF_VARS["alarm_topic_arn"]["default"])

    def test_the_email_subscription_is_optional_and_only_on_the_created_topic(self):
        sam = SAM_RESOURCES["AlarmEmailSubscription"]
        self.assertEqual(sam["Condition"], "HasAlarmEmail")
        self.assertIn({"Condition": "CreateAlarmTopic"}, SAM["Conditions"]["HasAlarmEmail"]["Fn::And"])
        self.assertEqual(sam["Properties"]["Protocol"], "email")
        tf = TF[("aws_sns_topic_subscription", "alarm_email")]
        self.assertEqual(tf["protocol"], "email")
        self.assertEqual(tf["count"], "${local.create_alarm_topic && var.alarm_email != None ? 1 : 0}")
        self.assertEqual(sam_param_default("AlarmEmail"), "")
        self.assertIsNone(TF_VARS["alarm_email"]["default"])

    def test_unencrypted_by_default_on_purpose_and_said_so_in_both(self):
        skips = SAM_RESOURCES["AlarmTopic"]["Metadata"]["checkov"]["skip"]
        self.assertEqual([s["id"] for s in skips], ["CKV_AWS_26"])
        self.assertNotIn("KmsMasterKeyId", SAM_RESOURCES["AlarmTopic"]["Properties"])
        self.assertIn("checkov:skip=CKV_AWS_26", (INFRA / "notifications.tf").read_text())
        # Terraform takes a customer managed key, none by default.
        self.assertEqual(TF[("aws_sns_topic", "alarms")]["kms_master_key_id"], "${var.topic_kms_key_arn}")
        self.assertIsNone(TF_VARS["topic_kms_key_arn"]["default"])

    def test_every_alarm_notifies_the_topic_in_both(self):
        topic = [{"Fn::If": ["CreateAlarmTopic", {"Ref": "AlarmTopic"}, {"Ref": "AlarmTopicArn"}]}]
        for name, alarm in sam_alarms().items():
            self.assertEqual(alarm["Properties"]["AlarmActions"], topic, name)
            self.assertEqual(alarm["Properties"]["OKActions"], topic, name)
        for name, alarm in tf_alarms().items():
            self.assertEqual(alarm["alarm_actions"], "${local.alarm_actions}", name)
            self.assertEqual(alarm["ok_actions"], "${local.alarm_actions}", name)
        self.assertIn("aws_sns_topic.alarms[0].arn", TF_LOCALS["alarm_actions"])
        self.assertEqual(len(sam_alarms()), len(tf_alarms()))
        self.assertEqual(len(sam_alarms()), 12)


class AlarmPauses(unittest.TestCase):
    def test_created_only_when_alarms_are_named(self):
        self.assertEqual(sam_param_default("AlarmPauses"), "")
        self.assertEqual(TF_VARS["alarm_pauses"]["default"], {})
        self.assertEqual(SAM["Conditions"]["HasAlarmPauses"], {"Fn::Not": [{"Fn::Equals": [{"Ref": "AlarmPauses"}, ""]}]})
        self.assertEqual(TF_LOCALS["alarm_pauses"], "${length(var.alarm_pauses) == 0 ? 0 : 1}")
        for name in ["AlarmPausesLogGroup", "AlarmPausesFunction", "AlarmPausesErrorsAlarm"]:
            self.assertEqual(sam_condition(name), "HasAlarmPauses", name)

    def test_same_binary_with_the_handler_the_code_knows(self):
        # The binary, started with the template's handler, answers an alarm event.
        answers, _ = alarm_pauses_run()
        self.assertEqual(answers, [("response", {"ignored": "gates-nothing"})])
        self.assertEqual(SAM_PAUSES["Properties"]["Handler"], "alarm-pauses")
        self.assertEqual(TF_PAUSES["handler"], "alarm-pauses")
        self.assertEqual(SAM_PAUSES["Properties"]["CodeUri"], SAM_FUNCTION["Properties"]["CodeUri"])
        self.assertEqual(TF_PAUSES["filename"], TF_FUNCTION["filename"])
        self.assertEqual(SAM_PAUSES["Properties"]["MemorySize"], TF_PAUSES["memory_size"])
        self.assertEqual(SAM_PAUSES["Properties"]["Timeout"], TF_PAUSES["timeout"])

    def test_its_environment_is_the_same_and_read_by_the_code(self):
        sam = SAM_PAUSES["Properties"]["Environment"]["Variables"]
        tf = TF_PAUSES["environment"]["variables"]
        self.assertEqual(set(sam), {"FLEETLOCK_TABLE", "FLEETLOCK_REGION", "FLEETLOCK_GROUPS", "FLEETLOCK_ALARM_PAUSES",
                                    "RUST_LOG"})
        self.assertEqual(set(sam), set(tf))
        self.assertEqual(sam["FLEETLOCK_GROUPS"], SAM_FUNCTION["Properties"]["Environment"]["Variables"]["FLEETLOCK_GROUPS"])
        self.assertEqual(tf["FLEETLOCK_GROUPS"], TF_FUNCTION["environment"]["variables"]["FLEETLOCK_GROUPS"])
        documented = fleetlock("help").split("ENVIRONMENT:")[1]
        for name in sam:
            self.assertIn(name, documented)

    def test_least_privilege_is_exactly_the_policy_the_code_prints(self):
        expected = {s["Sid"]: set(s["Action"]) for s in iam_policy("--for", "alarm-pauses")["Statement"]}
        statements = without_logs(sam_role_statements("AlarmPausesFunction"), "AlarmPausesLogGroup")
        sam = {s["Sid"]: s for s in statements}
        self.assertEqual({sid: set(s["Action"]) for sid, s in sam.items()}, expected)
        self.assertEqual(sam["LockTable"]["Resource"], SAM_TABLE_ARN)
        self.assertTrue(sam["AlarmStates"]["Resource"]["Fn::Sub"].endswith(":alarm:*"))
        tf = {s["sid"]: s for s in tf_statements("alarm_pauses")}
        tf.pop("Logs")
        self.assertEqual({sid: set(s["actions"]) if isinstance(s["actions"], list) else {s["actions"]}
                          for sid, s in tf.items()}, expected)
        self.assertTrue(tf["AlarmStates"]["resources"].endswith(":alarm:*"))

    def test_the_same_rule_and_schedule_reach_it(self):
        events = SAM_PAUSES["Properties"]["Events"]
        self.assertEqual(events["AlarmStateChange"]["Type"], "EventBridgeRule")
        sam_pattern = events["AlarmStateChange"]["Properties"]["Pattern"]
        self.assertEqual(sam_pattern, {"source": ["aws.cloudwatch"], "detail-type": ["CloudWatch Alarm State Change"]})
        tf_pattern = TF[("aws_cloudwatch_event_rule", "alarm_state_change")]["event_pattern"]
        # python-hcl2 prints jsonencode's argument as a Python literal.
        inner = re.fullmatch(r"\$\{jsonencode\((.*)\)\}", tf_pattern, re.S).group(1)
        # Terraform also narrows it to the gating alarms' names, which SAM
        # cannot take out of its string parameter.
        self.assertEqual(ast.literal_eval(inner), {**sam_pattern, "detail": {"alarmName": "${keys(var.alarm_pauses)}"}})
        self.assertEqual(events["Reconcile"]["Properties"]["Schedule"],
                         TF[("aws_cloudwatch_event_rule", "alarm_reconcile")]["schedule_expression"])
        for rule in ["alarm_state_change", "alarm_reconcile"]:
            self.assertEqual(TF[("aws_cloudwatch_event_target", rule)]["arn"], "${aws_lambda_function.alarm_pauses[0].arn}")
            permission = TF[("aws_lambda_permission", rule)]
            self.assertEqual(permission["principal"], "events.amazonaws.com")
            self.assertEqual(permission["source_arn"], f"${{aws_cloudwatch_event_rule.{rule}[0].arn}}")


@functools.cache
def drained_run():
    """The API function with a drain gate reserves a slot for a node, then
    the drained function, under its template's handler, confirms it, and
    the node asks again: (the API's answers and lines, the drained
    function's answers)."""
    table = "iac-drained-" + os.urandom(4).hex()
    endpoint = lambda_run.table(table)
    api_env = {**lambda_run.aws_env(endpoint), "FLEETLOCK_TABLE": table, "FLEETLOCK_AUTH": "disabled",
               "FLEETLOCK_DRAIN": "default=15m"}
    handler = SAM["Globals"]["Function"]["Handler"]
    reserved = lambda_run.invoke(handler, [lambda_run.api_gateway_event("pre-reboot", "iac-node")], api_env)
    action = {"action": "drained", "group": "default", "id": "iac-node"}
    confirmed, _ = lambda_run.invoke(SAM_RESOURCES["DrainedFunction"]["Properties"]["Handler"],
                                     [action, {**action, "action": "drain"},
                                      json.loads(SAM_DRAINED["Properties"]["Events"]["Sweep"]["Properties"]["Input"])],
                                     {**lambda_run.aws_env(endpoint), "FLEETLOCK_TABLE": table,
                                      "FLEETLOCK_DRAIN": "default=15m", "FLEETLOCK_METRICS_SERVICE": "iac-api"})
    granted = lambda_run.invoke(handler, [lambda_run.api_gateway_event("pre-reboot", "iac-node")], api_env)
    return reserved, confirmed, granted


SAM_DRAINED = SAM_RESOURCES["DrainedFunction"]
TF_DRAINED = TF[("aws_lambda_function", "drained")]


@functools.cache
def returned_run():
    """The API function with a return gate grants a node its slot, hears its
    steady-state (the slot returning) and refuses the next node; the drained
    function, under its template's handler, reads the slot as returning and
    confirms the return; the next node asks again: (the API's first answers
    and lines, the drained function's answers, the next node's answer)."""
    table = "iac-returned-" + os.urandom(4).hex()
    endpoint = lambda_run.table(table)
    api_env = {**lambda_run.aws_env(endpoint), "FLEETLOCK_TABLE": table, "FLEETLOCK_AUTH": "disabled",
               "FLEETLOCK_GROUPS": "default=1", "FLEETLOCK_RETURN": "default=20m"}
    handler = SAM["Globals"]["Function"]["Handler"]
    first = lambda_run.invoke(handler, [lambda_run.api_gateway_event("pre-reboot", "iac-node"),
                                        lambda_run.api_gateway_event("steady-state", "iac-node"),
                                        lambda_run.api_gateway_event("pre-reboot", "iac-next")], api_env)
    slot = {"action": "slot", "group": "default", "id": "iac-node"}
    answers, _ = lambda_run.invoke(SAM_DRAINED["Properties"]["Handler"],
                                   [slot, {**slot, "action": "returned"}, {**slot, "action": "returned"},
                                    json.loads(SAM_DRAINED["Properties"]["Events"]["Sweep"]["Properties"]["Input"])],
                                   {**lambda_run.aws_env(endpoint), "FLEETLOCK_TABLE": table,
                                    "FLEETLOCK_GROUPS": "default=1", "FLEETLOCK_RETURN": "default=20m",
                                    "FLEETLOCK_METRICS_SERVICE": "iac-api"})
    after = lambda_run.invoke(handler, [lambda_run.api_gateway_event("pre-reboot", "iac-next")], api_env)
    return first, answers, after


def load_global_table():
    template, problems = decode(str(ROOT / "global-table.yaml"))
    if problems:
        raise AssertionError(f"global-table.yaml does not parse: {problems}")
    return template


def two_regions_run():
    """The API function under its template's handler in two regions of one
    table, as the templates configure a global table's regions
    (FLEETLOCK_REGION): the first serves `default` with 1 slot, the second
    with 2. Answers: (first region's, second region's, first's again)."""
    table = "iac-regions-" + os.urandom(4).hex()
    endpoint = lambda_run.table(table)
    env = {**lambda_run.aws_env(endpoint), "FLEETLOCK_TABLE": table, "FLEETLOCK_AUTH": "disabled"}
    handler = SAM["Globals"]["Function"]["Handler"]
    ask = [lambda_run.api_gateway_event("pre-reboot", "node-a")]
    first, _ = lambda_run.invoke(handler, ask, {**env, "FLEETLOCK_REGION": "eu-west-1", "FLEETLOCK_GROUPS": "default=1"})
    second, _ = lambda_run.invoke(handler, ask, {**env, "FLEETLOCK_REGION": "eu-west-2", "FLEETLOCK_GROUPS": "default=2"})
    again, _ = lambda_run.invoke(handler, ask, {**env, "FLEETLOCK_REGION": "eu-west-1", "FLEETLOCK_GROUPS": "default=1"})
    return first, second, again


class GlobalTable(unittest.TestCase):
    """One lock across three regions: global-table.yaml and the module's
    global_table make an MRSC table; template.yaml (ExistingTableName) and the
    module (existing_table_name) serve a region from its replica."""

    def test_the_global_table_is_the_lock_table_in_strong_consistency_only(self):
        template = load_global_table()
        (name, resource), = template["Resources"].items()
        self.assertEqual(resource["Type"], "AWS::DynamoDB::GlobalTable")
        self.assertEqual((resource["DeletionPolicy"], resource["UpdateReplacePolicy"]), ("Retain", "Retain"))
        table = resource["Properties"]
        expected = json.loads(fleetlock("create-table", "--dry-run"))
        self.assertEqual({k: table[k] for k in ["AttributeDefinitions", "KeySchema", "BillingMode"]}, expected)
        # A literal, not a parameter: eventual consistency would over-grant.
        self.assertEqual(table["MultiRegionConsistency"], "STRONG")
        self.assertNotIn("EVENTUAL", (ROOT / "global-table.yaml").read_text())
        self.assertNotIn("TimeToLiveSpecification", table)
        replicas = table["Replicas"]
        self.assertEqual(replicas[0]["Region"], {"Ref": "AWS::Region"})
        third = replicas[2]["Fn::If"]
        self.assertEqual(third[0], "ThirdIsReplica")
        for replica in [replicas[0], replicas[1], third[1]]:
            self.assertIs(replica["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"], True)
            self.assertEqual(replica["DeletionProtectionEnabled"], {"Ref": "TableDeletionProtection"})
        self.assertEqual(table["GlobalTableWitnesses"]["Fn::If"][0], "ThirdIsWitness")

    def test_the_modules_replicas_are_strong_and_protected_as_the_table_is(self):
        (replica,) = [block["replica"] for block in TF_TABLE["dynamic"] if "replica" in block]
        content = unwrap(replica["content"])
        self.assertEqual(content["consistency_mode"], "STRONG")
        self.assertEqual(content["deletion_protection_enabled"], TF_TABLE["deletion_protection_enabled"])
        self.assertIs(content["point_in_time_recovery"], True)
        self.assertNotIn("EVENTUAL", (INFRA / "main.tf").read_text())

    def test_both_templates_know_the_same_region_sets(self):
        rule = load_global_table()["Rules"]["ThreeRegionsOfOneSet"]["Assertions"][1]["Assert"]["Fn::Or"]
        sam = sorted(sorted(each["Fn::And"][0]["Fn::Contains"][0]) for each in rule)
        for each in rule:
            lists = [c["Fn::Contains"][0] for c in each["Fn::And"]]
            self.assertTrue(all(l == lists[0] for l in lists), lists)
        tf = TF_LOCALS["mrsc_region_sets"]
        self.assertEqual(sam, sorted(sorted(regions) for regions in tf.values()))
        self.assertEqual(TF_VARS["global_table"]["description"].count("eu-central-1"), 1)

    def test_a_region_on_a_global_table_records_its_settings_under_its_name(self):
        expected = {"Fn::If": ["OnGlobalTable", {"Ref": "AWS::Region"}, ""]}
        for function in ["FleetLockFunction", "ConfigCheckFunction", "AlarmPausesFunction"]:
            env = SAM_RESOURCES[function]["Properties"]["Environment"]["Variables"]
            self.assertEqual(env["FLEETLOCK_REGION"], expected, function)
            self.assertEqual(env["FLEETLOCK_TABLE"], SAM_TABLE_NAME, function)
        self.assertEqual(SAM["Conditions"]["MakesTable"], {"Fn::Equals": [{"Ref": "ExistingTableName"}, ""]})
        self.assertEqual(SAM_RESOURCES["LocksTable"]["Condition"], "MakesTable")
        for key in [("aws_lambda_function", "this"), ("aws_lambda_function", "config_check"),
                    ("aws_lambda_function", "alarm_pauses")]:
            self.assertEqual(TF[key]["environment"]["variables"]["FLEETLOCK_REGION"], "${local.region_env}", key)
        self.assertIn("local.on_global_table", TF_LOCALS["region_env"])
        self.assertIn("FLEETLOCK_REGION", fleetlock("help").split("ENVIRONMENT:")[1])

    def test_slot_events_on_a_replica_need_its_stream_and_the_module_reads_it_where_it_makes_the_table(self):
        rule = SAM["Rules"]["SlotEventsOnAGlobalTableNeedTheStream"]
        self.assertEqual(rule["Assertions"][0]["Assert"], {"Fn::Not": [{"Fn::Equals": [{"Ref": "ExistingTableStreamArn"}, ""]}]})
        precondition = TF[("aws_lambda_function", "slot_events")]["lifecycle"]["precondition"]
        self.assertEqual(precondition["condition"], "${local.makes_table}")

    def test_the_module_keeps_an_existing_table_where_it_was(self):
        moved = [block for path in INFRA.glob("*.tf") for block in hcl2.loads(path.read_text()).get("moved", [])]
        # Before global tables the table had no count: without the move, an
        # upgrade would plan to destroy it (deletion protection stops that).
        self.assertEqual([unwrap(block) for block in moved],
                         [{"from": "${aws_dynamodb_table.locks}", "to": "${aws_dynamodb_table.locks[0]}"}])

    def test_regions_that_serve_a_group_differently_refuse_it(self):
        first, second, again = two_regions_run()
        (kind, response), = first
        self.assertEqual((kind, response["statusCode"]), ("response", 200), response)
        (kind, response), = second
        body = json.loads(response["body"])
        self.assertEqual((response["statusCode"], body["kind"]), (500, "settings_differ"), body)
        self.assertIn("eu-west-1", body["value"])
        (kind, response), = again
        self.assertEqual(json.loads(response["body"])["kind"], "settings_differ", response)


class Return(unittest.TestCase):
    def test_the_drained_function_and_an_alarm_only_with_a_gate_refused_without_slot_events(self):
        self.assertEqual(sam_param_default("Return"), "")
        self.assertEqual(TF_VARS["return_gate"]["default"], {})
        self.assertEqual(SAM["Conditions"]["HasReturn"], {"Fn::Not": [{"Fn::Equals": [{"Ref": "Return"}, ""]}]})
        self.assertEqual(TF_LOCALS["return_gated"], "${length(var.return_gate) == 0 ? 0 : 1}")
        self.assertEqual(sam_condition("ReturnsOverdueAlarm"), "HasReturn")
        self.assertEqual(TF[("aws_cloudwatch_metric_alarm", "returns_overdue")]["count"], "${local.return_gated}")
        rule = SAM["Rules"]["ReturnNeedsSlotEvents"]
        # On a global table's replica the events may come from another region.
        self.assertEqual(rule["RuleCondition"], {"Fn::And": [{"Fn::Not": [{"Fn::Equals": [{"Ref": "Return"}, ""]}]},
                                                          {"Fn::Equals": [{"Ref": "ExistingTableName"}, ""]}]})
        self.assertEqual(rule["Assertions"][0]["Assert"], {"Fn::Equals": [{"Ref": "SlotEvents"}, "true"]})
        self.assertIn("return_gate", TF_DRAINED["lifecycle"]["precondition"]["error_message"])
        # The API function, the check and the drained function read it alike.
        for function in ["FleetLockFunction", "ConfigCheckFunction", "DrainedFunction"]:
            self.assertEqual(SAM_RESOURCES[function]["Properties"]["Environment"]["Variables"]["FLEETLOCK_RETURN"],
                             {"Ref": "Return"}, function)
        self.assertEqual(TF_FUNCTION["environment"]["variables"]["FLEETLOCK_RETURN"], "${local.return_env}")
        self.assertEqual(re.sub(r"\s", "", TF_LOCALS["return_env"]),
                         '${join(",",[forgroup,timeoutinvar.return_gate:"${group}=${timeout}"])}')

    def test_a_steady_state_returns_the_slot_until_the_drained_function_confirms_it(self):
        first, answers, after = returned_run()
        (granted, steady, refused), lines = first
        self.assertEqual(granted[1]["statusCode"], 200)
        self.assertEqual(steady[1]["statusCode"], 200, "Zincati's steady-state answers 200 as ever")
        self.assertEqual(refused[1]["statusCode"], 423)
        self.assertEqual(json.loads(refused[1]["body"])["kind"], "semaphore_full")
        outcomes = [line["Outcome"] for line in lambda_run.metric_lines(lines)]
        self.assertEqual(outcomes, ["granted", "returning", "full"])
        slot, confirmed, again, sweep = answers
        self.assertEqual((slot[1]["state"], slot[1]["returning"]), ("returning", True))
        self.assertEqual((confirmed[1]["outcome"], confirmed[1]["done"]), ("returned", True))
        self.assertEqual((again[1]["outcome"], again[1]["done"]), ("not_returning", False))
        self.assertEqual(sweep[1], {"drains_overdue": 0, "returns_overdue": 0, "stopped": 0,
                                    "waves_overdue": 0, "groups": 1})
        (next_node, ), _ = after
        self.assertEqual(next_node[1]["statusCode"], 200)

    def test_the_overdue_alarm_watches_the_metric_the_code_emits(self):
        (_, lines), _, _ = returned_run()
        emitted = lambda_run.emitted_metrics(lines)
        self.assertIn(("FleetLock", "ReturnsOverdue"), emitted)
        alarm = SAM_RESOURCES["ReturnsOverdueAlarm"]["Properties"]
        tf = TF[("aws_cloudwatch_metric_alarm", "returns_overdue")]
        self.assertEqual((alarm["Namespace"], alarm["MetricName"]), ("FleetLock", "ReturnsOverdue"))
        self.assertEqual((tf["namespace"], tf["metric_name"]), ("FleetLock", "ReturnsOverdue"))
        self.assertEqual(alarm["Dimensions"][0]["Value"], {"Ref": "FleetLockFunction"})
        self.assertEqual(tf["dimensions"]["Service"], "${aws_lambda_function.this.function_name}")
        for key, tf_key in [("Threshold", "threshold"), ("Period", "period"), ("ComparisonOperator", "comparison_operator")]:
            self.assertEqual(alarm[key], tf[tf_key], key)


class Drain(unittest.TestCase):
    def test_created_only_with_a_gate_and_refused_without_slot_events(self):
        self.assertEqual(sam_param_default("Drain"), "")
        self.assertEqual(TF_VARS["drain"]["default"], {})
        self.assertEqual(SAM["Conditions"]["HasDrain"], {"Fn::Not": [{"Fn::Equals": [{"Ref": "Drain"}, ""]}]})
        self.assertEqual(TF_LOCALS["drain"], "${length(var.drain) == 0 ? 0 : 1}")
        # The drained function serves both gates and sweeps for canaries
        # (variants.tftest.hcl plans a canary alone); the drain's alarm, this one.
        self.assertEqual(SAM["Conditions"]["HasDrainedFunction"],
                         {"Fn::Or": [{"Condition": "HasDrain"}, {"Condition": "HasReturn"},
                                     {"Condition": "HasCanary"}]})
        self.assertEqual(TF_LOCALS["drained"],
                         "${local.drain == 1 || local.return_gated == 1 || length(var.canary) > 0 ? 1 : 0}")
        for name in ["DrainedLogGroup", "DrainedFunctionRole", "DrainedFunction"]:
            self.assertEqual(sam_condition(name), "HasDrainedFunction", name)
        self.assertEqual(sam_condition("DrainsOverdueAlarm"), "HasDrain")
        rule = SAM["Rules"]["DrainNeedsSlotEvents"]
        # On a global table's replica the events may come from another region.
        self.assertEqual(rule["RuleCondition"], {"Fn::And": [{"Fn::Not": [{"Fn::Equals": [{"Ref": "Drain"}, ""]}]},
                                                          {"Fn::Equals": [{"Ref": "ExistingTableName"}, ""]}]})
        self.assertEqual(rule["Assertions"][0]["Assert"], {"Fn::Equals": [{"Ref": "SlotEvents"}, "true"]})
        self.assertIn("SlotEvents", rule["Assertions"][0]["AssertDescription"])
        # Terraform 1.5 validations cannot read another variable: a precondition.
        precondition = TF_DRAINED["lifecycle"]["precondition"]
        self.assertEqual(precondition["condition"],
                         "${var.slot_events || !local.makes_table || local.drain == 0 && local.return_gated == 0}")
        self.assertIn("slot_events", precondition["error_message"])

    def test_same_binary_with_the_handler_the_code_knows_reserves_confirms_and_grants(self):
        (reserved, _), confirmed, (granted, _) = drained_run()
        (kind, response), = reserved
        self.assertEqual((kind, response["statusCode"]), ("response", 423))
        self.assertEqual(json.loads(response["body"])["kind"], "waiting_for_drain")
        self.assertEqual(confirmed[0][0], "response")
        self.assertEqual((confirmed[0][1]["outcome"], confirmed[0][1]["done"]), ("granted", True))
        # A mistyped action fails the invocation: a hook retries or stops.
        self.assertEqual(confirmed[1][0], "error")
        self.assertEqual(granted[0][1]["statusCode"], 200)
        self.assertEqual(SAM_DRAINED["Properties"]["Handler"], "drained")
        self.assertEqual(TF_DRAINED["handler"], "drained")
        self.assertEqual(SAM_DRAINED["Properties"]["CodeUri"], SAM_FUNCTION["Properties"]["CodeUri"])
        self.assertEqual(TF_DRAINED["filename"], TF_FUNCTION["filename"])
        self.assertEqual(SAM_DRAINED["Properties"]["MemorySize"], TF_DRAINED["memory_size"])
        self.assertEqual(SAM_DRAINED["Properties"]["Timeout"], TF_DRAINED["timeout"])

    def test_its_environment_is_the_same_and_read_by_the_code(self):
        sam = SAM_DRAINED["Properties"]["Environment"]["Variables"]
        tf = TF_DRAINED["environment"]["variables"]
        self.assertEqual(set(sam), {"FLEETLOCK_TABLE", "FLEETLOCK_GROUPS", "FLEETLOCK_DRAIN",
                                    "FLEETLOCK_RETURN", "FLEETLOCK_CANARY", "FLEETLOCK_METRICS_SERVICE",
                                    "RUST_LOG"})
        self.assertEqual(set(sam), set(tf))
        api = SAM_FUNCTION["Properties"]["Environment"]["Variables"]
        tf_api = TF_FUNCTION["environment"]["variables"]
        self.assertEqual(api["FLEETLOCK_DRAIN"], {"Ref": "Drain"})
        self.assertEqual(tf_api["FLEETLOCK_DRAIN"], "${local.drain_env}")
        # The sweep reads the gates as the API function does, and feeds the
        # metric on the API function's dimension, which the alarm watches.
        for name in ["FLEETLOCK_GROUPS", "FLEETLOCK_DRAIN", "FLEETLOCK_RETURN", "FLEETLOCK_CANARY"]:
            self.assertEqual(sam[name], api[name], name)
            self.assertEqual(tf[name], tf_api[name], name)
        self.assertEqual(sam["FLEETLOCK_METRICS_SERVICE"], {"Ref": "FleetLockFunction"})
        self.assertEqual(SAM_RESOURCES["DrainsOverdueAlarm"]["Properties"]["Dimensions"][0]["Value"],
                         {"Ref": "FleetLockFunction"})
        self.assertEqual(tf["FLEETLOCK_METRICS_SERVICE"], "${aws_lambda_function.this.function_name}")
        self.assertEqual(TF[("aws_cloudwatch_metric_alarm", "drains_overdue")]["dimensions"]["Service"],
                         "${aws_lambda_function.this.function_name}")
        documented = fleetlock("help").split("ENVIRONMENT:")[1]
        for name in sam:
            self.assertIn(name, documented)

    def test_a_schedule_sends_it_the_sweep_every_five_minutes(self):
        sweep = SAM_DRAINED["Properties"]["Events"]["Sweep"]
        self.assertEqual(sweep["Type"], "Schedule")
        self.assertEqual(sweep["Properties"]["Schedule"], "rate(5 minutes)")
        self.assertEqual(json.loads(sweep["Properties"]["Input"]), {"action": "sweep"})
        rule = TF[("aws_cloudwatch_event_rule", "drain_sweep")]
        self.assertEqual(rule["schedule_expression"], sweep["Properties"]["Schedule"])
        target = TF[("aws_cloudwatch_event_target", "drain_sweep")]
        self.assertEqual(target["arn"], "${aws_lambda_function.drained[0].arn}")
        inner = re.fullmatch(r"\$\{jsonencode\((.*)\)\}", target["input"], re.S).group(1)
        self.assertEqual(ast.literal_eval(inner), {"action": "sweep"})
        permission = TF[("aws_lambda_permission", "drain_sweep")]
        self.assertEqual(permission["principal"], "events.amazonaws.com")
        self.assertEqual(permission["source_arn"], "${aws_cloudwatch_event_rule.drain_sweep[0].arn}")
        for name in ["aws_cloudwatch_event_rule", "aws_cloudwatch_event_target", "aws_lambda_permission"]:
            self.assertEqual(TF[(name, "drain_sweep")]["count"], "${local.drained}", name)
        # And the binary, under the template's handler, answers the sweep.
        (_, _), confirmed, _ = drained_run()
        self.assertEqual(confirmed[2][0], "response")
        self.assertEqual(confirmed[2][1], {"drains_overdue": 0, "returns_overdue": 0, "stopped": 0,
                                           "waves_overdue": 0, "groups": 1})

    def test_least_privilege_is_exactly_the_policy_the_code_prints(self):
        expected = {s["Sid"]: set(s["Action"]) for s in iam_policy("--for", "drained")["Statement"]}
        statements = without_logs(sam_role_statements("DrainedFunction"), "DrainedLogGroup")
        sam = {s["Sid"]: s for s in statements}
        self.assertEqual({sid: set(s["Action"]) for sid, s in sam.items()}, expected)
        self.assertEqual(sam["FleetLockTable"]["Resource"], SAM_TABLE_ARN)
        tf = {s["sid"]: s for s in tf_statements("drained")}
        tf.pop("Logs")
        self.assertEqual({sid: set(s["actions"]) for sid, s in tf.items()}, expected)
        hook = iam_policy("--for", "drain-hook", "--function-arn", "arn:aws:lambda:eu-west-1:1:function:f")
        self.assertEqual(hook["Statement"][0]["Action"], ["lambda:InvokeFunction"])
        self.assertEqual(hook["Statement"][0]["Resource"], "arn:aws:lambda:eu-west-1:1:function:f")

    def test_the_overdue_alarm_watches_the_metric_the_code_emits(self):
        (_, lines), _, _ = drained_run()
        emitted = lambda_run.emitted_metrics(lines)
        unit, dimensions, _ = emitted[("FleetLock", "DrainsOverdue")]
        self.assertEqual((unit, dimensions), ("Count", ["Service"]))
        sam = SAM_RESOURCES["DrainsOverdueAlarm"]["Properties"]
        tf = TF[("aws_cloudwatch_metric_alarm", "drains_overdue")]
        self.assertEqual((sam["Namespace"], sam["MetricName"]), ("FleetLock", "DrainsOverdue"))
        self.assertEqual((tf["namespace"], tf["metric_name"]), ("FleetLock", "DrainsOverdue"))
        self.assertEqual([d["Name"] for d in sam["Dimensions"]], dimensions)
        self.assertEqual(list(tf["dimensions"]), dimensions)
        for key, tf_key in [("Statistic", "statistic"), ("Period", "period"), ("Threshold", "threshold"),
                            ("ComparisonOperator", "comparison_operator"), ("TreatMissingData", "treat_missing_data")]:
            self.assertEqual(sam[key], tf[tf_key], key)


class NodeTagging(unittest.TestCase):
    """contrib/butane/fleetlock-id-tag.bu: each node tags its instance with
    the id its Zincati sends, with the one tag and the policy the binary
    names."""

    SCRIPT = ROOT / "contrib" / "systemd" / "fleetlock-id-tag"

    def test_the_butane_config_carries_the_script_and_unit_unchanged(self):
        import yaml

        config = yaml.safe_load((ROOT / "contrib" / "butane" / "fleetlock-id-tag.bu").read_text())
        self.assertEqual((config["variant"], config["version"]), ("fcos", "1.5.0"))
        files = {f["path"]: f for f in config["storage"]["files"]}
        script = files["/usr/local/libexec/fleetlock-id-tag"]
        self.assertEqual(script["mode"], 0o755)
        self.assertEqual(script["contents"]["inline"], self.SCRIPT.read_text())
        units = {u["name"]: u for u in config["systemd"]["units"]}
        unit = units["fleetlock-id-tag.service"]
        self.assertTrue(unit["enabled"])
        self.assertEqual(unit["contents"], (ROOT / "contrib" / "systemd" / "fleetlock-id-tag.service").read_text())
        self.assertIn("ExecStart=/usr/local/libexec/fleetlock-id-tag", unit["contents"])
        subprocess.run([str(Path(sys.executable).parent / "shellcheck"), str(self.SCRIPT)], check=True)

    def test_the_script_tags_its_own_instance_with_the_policys_one_tag_once(self):
        import tempfile

        policy = iam_policy("--for", "node-tagging")["Statement"][0]
        [tag_key] = policy["Condition"]["ForAllValues:StringEquals"]["aws:TagKeys"]
        self.assertEqual(policy["Action"], ["ec2:CreateTags"])
        self.assertEqual(policy["Condition"]["StringEquals"], {"aws:ARN": "${ec2:SourceInstanceARN}"})
        self.assertEqual(policy["Condition"]["Null"], {f"ec2:ResourceTag/{tag_key}": "true"},
                         "written only while the instance carries no such tag")

        def run(current):
            """The script with the instance's tag `current` (None: none):
            (exit code, podman calls, stderr)."""
            with tempfile.TemporaryDirectory() as bin_dir:
                calls = Path(bin_dir) / "calls"
                tag = f'*"X-aws-ec2-metadata-token: TOKEN"*tags/instance/{tag_key}*) ' + (
                    "exit 22 ;;" if current is None else f"echo {current} ;;")
                stubs = {
                    # The metadata service: a token first, then only with it.
                    "curl": 'echo "curl $*" >> "$CALLS"\n'
                            'case "$*" in *"-X PUT"*api/token*) echo TOKEN ;;\n'
                            '*"X-aws-ec2-metadata-token: TOKEN"*instance-id*) echo i-0123456789abcdef0 ;;\n'
                            '*"X-aws-ec2-metadata-token: TOKEN"*placement/region*) echo eu-west-1 ;;\n'
                            f'{tag}\n'
                            '*) exit 22 ;; esac',
                    "systemd-id128": '[ "$*" = "machine-id --app-specific=de35106b6ec24688b63afddaa156679b" ] '
                                     '|| exit 9\necho 975228d46dc94622b9bbe16671e2b58d',
                    "podman": 'echo "podman $*" >> "$CALLS"',
                }
                for name, body in stubs.items():
                    stub = Path(bin_dir) / name
                    stub.write_text(f"#!/bin/sh\n{body}\n")
                    stub.chmod(0o755)
                env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "CALLS": str(calls)}
                ran = subprocess.run(["sh", str(self.SCRIPT)], env=env, capture_output=True, text=True)
                podman = [line for line in calls.read_text().splitlines() if line.startswith("podman ")]
                return ran.returncode, podman, ran.stderr

        code, podman, _ = run(None)
        self.assertEqual((code, len(podman)), (0, 1))
        self.assertIn("--network host", podman[0])
        self.assertTrue(podman[0].endswith(
            "ec2 create-tags --region eu-west-1 --resources i-0123456789abcdef0 "
            f"--tags Key={tag_key},Value=975228d46dc94622b9bbe16671e2b58d"), podman[0])
        # Tagged before with the same id (every later boot): nothing written.
        self.assertEqual(run("975228d46dc94622b9bbe16671e2b58d")[:2], (0, []))
        # Tagged with another id: refused, with what to do, nothing written.
        code, podman, said = run("8f040e49ad9a45a8b0c617313becf153")
        self.assertEqual((code, podman), (1, []))
        self.assertIn("aws ec2 delete-tags --resources i-0123456789abcdef0", said)


class ZoneGroupUnit(unittest.TestCase):
    """contrib/butane/fleetlock-zone-group.bu: at boot, before Zincati, a
    node's group becomes PARENT.ZONE from the instance metadata (IMDSv2),
    and a group a person set is never overwritten."""

    SCRIPT = ROOT / "contrib" / "systemd" / "fleetlock-zone-group"

    def test_the_butane_config_carries_the_script_and_unit_unchanged(self):
        import yaml

        config = yaml.safe_load((ROOT / "contrib" / "butane" / "fleetlock-zone-group.bu").read_text())
        self.assertEqual((config["variant"], config["version"]), ("fcos", "1.5.0"))
        files = {f["path"]: f for f in config["storage"]["files"]}
        self.assertEqual(files["/usr/local/libexec/fleetlock-zone-group"]["contents"]["inline"],
                         self.SCRIPT.read_text())
        self.assertIn("FLEETLOCK_PARENT_GROUP=workers", files["/etc/fleetlock-zone.env"]["contents"]["inline"])
        units = {u["name"]: u for u in config["systemd"]["units"]}
        unit = units["fleetlock-zone-group.service"]
        self.assertTrue(unit["enabled"])
        self.assertEqual(unit["contents"],
                         (ROOT / "contrib" / "systemd" / "fleetlock-zone-group.service").read_text())
        self.assertIn("Before=zincati.service", unit["contents"])
        self.assertIn("RequiredBy=zincati.service", unit["contents"],
                      "Zincati does not start where no zone group could be set")
        subprocess.run([str(Path(sys.executable).parent / "shellcheck"), str(self.SCRIPT)], check=True)

    def run_script(self, env_text, dropins=None, zone="us-east-1a", zone_id="use1-az1", imds_up=True):
        """The script with /etc/fleetlock-zone.env `env_text` and these other
        drop-ins: (exit code, {drop-in name: text} after, curl calls, output)."""
        import tempfile

        with tempfile.TemporaryDirectory() as root:
            root = Path(root)
            bin_dir, config_dir = root / "bin", root / "config.d"
            bin_dir.mkdir()
            config_dir.mkdir()
            for name, text in (dropins or {}).items():
                (config_dir / name).write_text(text)
            env_file = root / "fleetlock-zone.env"
            env_file.write_text(env_text)
            calls = root / "calls"
            # The metadata service: a token first, then only with it.
            curl = ('echo "curl $*" >> "$CALLS"\n'
                    + ('' if imds_up else 'exit 7\n') +
                    'case "$*" in *"-X PUT"*api/token*) echo TOKEN ;;\n'
                    f'*"X-aws-ec2-metadata-token: TOKEN"*placement/availability-zone-id) echo {zone_id} ;;\n'
                    f'*"X-aws-ec2-metadata-token: TOKEN"*placement/availability-zone) echo {zone} ;;\n'
                    '*) exit 22 ;; esac')
            stub = bin_dir / "curl"
            stub.write_text(f"#!/bin/sh\n{curl}\n")
            stub.chmod(0o755)
            env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "CALLS": str(calls),
                   "FLEETLOCK_ZONE_ENV": str(env_file), "ZINCATI_CONFIG_DIR": str(config_dir)}
            ran = subprocess.run(["sh", str(self.SCRIPT)], env=env, capture_output=True, text=True)
            after = {p.name: p.read_text() for p in config_dir.iterdir()}
            curls = calls.read_text().splitlines() if calls.exists() else []
            return ran.returncode, after, curls, ran.stdout + ran.stderr

    def test_the_group_becomes_the_parents_zone_group_before_zincati(self):
        code, after, curls, said = self.run_script("FLEETLOCK_PARENT_GROUP=workers\n")
        self.assertEqual(code, 0, said)
        self.assertIn('[identity]\ngroup = "workers.us-east-1a"\n', after["99-fleetlock-zone.toml"])
        self.assertIn("-X PUT", curls[0], "IMDSv2: the token first")
        # The zone's id where asked, the same zone in every account.
        code, after, _, _ = self.run_script("FLEETLOCK_PARENT_GROUP=workers\nFLEETLOCK_ZONE_FROM=id\n")
        self.assertIn('group = "workers.use1-az1"', after["99-fleetlock-zone.toml"])

    def test_a_group_a_person_set_is_never_overwritten(self):
        mine = {"90-group.toml": '[identity]\ngroup = "db"\n',
                "55-fleetlock-zone.toml": '[identity]\ngroup = "workers.us-east-1b"\n'}
        code, after, curls, said = self.run_script("FLEETLOCK_PARENT_GROUP=workers\n", mine)
        self.assertEqual(code, 0, said)
        self.assertEqual(after, {"90-group.toml": mine["90-group.toml"]},
                         "the person's group stays, and the unit's own earlier drop-in goes")
        self.assertEqual(curls, [], "nothing asked of the metadata service")
        self.assertIn("sets Zincati's group to 'db', not 'workers': leaving it", said)

    def test_merged_with_the_readmes_example_the_zone_group_refines_its_group(self):
        readme = {"55-updates-strategy.toml": '[updates]\nstrategy = "fleet_lock"\n',
                  "60-group.toml": '[identity]\ngroup = "workers"\n'}
        code, after, _, said = self.run_script("FLEETLOCK_PARENT_GROUP=workers\n", readme)
        self.assertEqual(code, 0, said)
        self.assertEqual(after["60-group.toml"], readme["60-group.toml"])
        # Zincati reads its drop-ins in name order, the last one's group wins.
        last = sorted(name for name, text in after.items() if "group =" in text)[-1]
        self.assertEqual(last, "99-fleetlock-zone.toml")
        self.assertIn('group = "workers.us-east-1a"', after[last])

    def test_without_its_setting_it_removes_its_own_drop_ins_and_stops(self):
        written = {"99-fleetlock-zone.toml": '[identity]\ngroup = "workers.us-east-1b"\n',
                   "55-fleetlock-zone.toml": '[identity]\ngroup = "workers.us-east-1b"\n',
                   "60-group.toml": '[identity]\ngroup = "workers"\n'}
        code, after, curls, said = self.run_script("# FLEETLOCK_PARENT_GROUP removed\n", written)
        self.assertEqual(code, 0, said)
        self.assertEqual(after, {"60-group.toml": written["60-group.toml"]})
        self.assertEqual(curls, [])
        # An earlier version's drop-in goes at the next boot that writes one.
        code, after, _, said = self.run_script("FLEETLOCK_PARENT_GROUP=workers\n",
                                               {"55-fleetlock-zone.toml": written["55-fleetlock-zone.toml"]})
        self.assertEqual((code, sorted(after)), (0, ["99-fleetlock-zone.toml"]), said)

    def test_without_instance_metadata_it_keeps_an_earlier_zone_or_fails(self):
        code, after, _, said = self.run_script("FLEETLOCK_PARENT_GROUP=workers\n", imds_up=False)
        self.assertEqual((code, after), (1, {}), "a first boot: Zincati (which requires it) waits")
        self.assertIn("Zincati does not start until this unit succeeds", said)
        earlier = {"99-fleetlock-zone.toml": '[identity]\ngroup = "workers.us-east-1a"\n'}
        code, after, _, said = self.run_script("FLEETLOCK_PARENT_GROUP=workers\n", earlier, imds_up=False)
        self.assertEqual((code, after), (0, earlier), said)
        self.assertIn("keeping the zone group of an earlier boot", said)

    def test_a_bad_setting_or_zone_writes_nothing(self):
        for env_text, zone in [("FLEETLOCK_PARENT_GROUP=work_ers\n", "us-east-1a"),
                               ("FLEETLOCK_PARENT_GROUP=workers\n", "us east"),
                               ("FLEETLOCK_PARENT_GROUP=workers\nFLEETLOCK_ZONE_FROM=zone\n", "us-east-1a"),
                               ("FLEETLOCK_PARENT_GROUP=" + "w" * 60 + "\n", "us-east-1a")]:
            code, after, _, said = self.run_script(env_text, zone=zone)
            self.assertEqual((code, after), (1, {}), (env_text, zone, said))
            self.assertIn("fleetlock-zone-group:", said)


class JobUnits(unittest.TestCase):
    def test_the_butane_config_parses_and_keeps_the_secret_private(self):
        import yaml

        config = yaml.safe_load((ROOT / "contrib" / "butane" / "fleetlock-job.bu").read_text())
        self.assertEqual((config["variant"], config["version"]), ("fcos", "1.5.0"))
        files = {f["path"]: f for f in config["storage"]["files"]}
        self.assertEqual(files["/usr/local/bin/fleetlock"]["mode"], 0o755)
        self.assertTrue(files["/usr/local/bin/fleetlock"]["contents"]["verification"]["hash"].startswith("sha256-"))
        self.assertEqual(files["/etc/fleetlock/job.env"]["mode"], 0o600, "the file holds the secret")
        self.assertIn("FLEETLOCK_URL=", files["/etc/fleetlock/job.env"]["contents"]["inline"])
        units = {u["name"]: u for u in config["systemd"]["units"]}
        self.assertTrue(units["fleetlock-unlock-at-boot@backup.service"]["enabled"])
        self.assertIn("Unit=fleetlock-job@backup.service", units["backup.timer"]["contents"])
        for name in ["fleetlock-job@.service", "fleetlock-unlock-at-boot@.service"]:
            self.assertEqual(units[name]["contents"], (ROOT / "contrib" / "systemd" / name).read_text())


class Dashboard(unittest.TestCase):
    def sam_body(self):
        body, values = SAM_RESOURCES["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
        return body, values

    def test_the_body_is_the_same_in_both(self):
        body, _ = self.sam_body()
        self.assertEqual(json.loads(PLACEHOLDER.sub(r"<\1>", body)), dashboard())
        tf = TF[("aws_cloudwatch_dashboard", "this")]["dashboard_body"]
        self.assertIn('templatefile("${path.module}/dashboard.json.tftpl"', tf)

    def test_every_placeholder_is_given_a_value_in_both(self):
        used = set(PLACEHOLDER.findall(DASHBOARD_TEMPLATE))
        _, sam_values = self.sam_body()
        self.assertEqual(set(sam_values), used)
        tf = TF[("aws_cloudwatch_dashboard", "this")]["dashboard_body"]
        # python-hcl2 prints the map as a Python dict: 'key': 'value'.
        tf_keys = set(re.findall(r"'(\w+)': ", tf.split("tftpl\",", 1)[1]))
        self.assertEqual(tf_keys, used)

    def test_a_valid_body_of_known_widgets(self):
        body = dashboard()
        self.assertTrue(body["widgets"])
        cells = set()
        for widget in body["widgets"]:
            self.assertIn(widget["type"], ["metric", "log"])
            for key in ["x", "y", "width", "height"]:
                self.assertIsInstance(widget[key], int)
            self.assertLessEqual(widget["x"] + widget["width"], 24)
            for x in range(widget["x"], widget["x"] + widget["width"]):
                for y in range(widget["y"], widget["y"] + widget["height"]):
                    self.assertNotIn((x, y), cells, f"widgets overlap: {widget['properties']['title']}")
                    cells.add((x, y))
            props = widget["properties"]
            self.assertEqual(props["region"], "<region>")
            self.assertTrue(props["title"])
            if widget["type"] == "log":
                self.assertRegex(props["query"], r"^SOURCE '<\w+_log_group>' \| ")
            else:
                self.assertTrue(props["metrics"])

    def test_every_metric_and_dimension_is_one_the_code_or_aws_emits(self):
        # What the functions emit, as the binary prints it: one metric each,
        # with the one dimension Service (the function's name).
        (namespace, oldest), (_, oldest_dims, _) = the_one_metric(api_function_run)
        (events_namespace, unreadable), (_, unreadable_dims, _) = the_one_metric(slot_events_run)
        self.assertEqual(events_namespace, namespace)
        self.assertEqual(oldest_dims, unreadable_dims)
        ours = {oldest: "<function>", unreadable: "<slot_events_function>"}
        # AWS's own metrics: (namespace, dimensions) -> the names read by
        # them. An HTTP API's are by ApiId; a REST API's by ApiName and Stage.
        aws = {
            ("AWS/ApiGateway", ("ApiId",)): {"4xx", "5xx", "Latency"},
            ("AWS/ApiGateway", ("ApiName", "Stage")): {"4XXError", "5XXError", "Latency"},
            ("AWS/Lambda", ("FunctionName",)): {"Errors", "Throttles", "IteratorAge", "Url4xxCount", "Url5xxCount",
                                                "UrlRequestLatency"},
        }
        seen = set()
        for widget in dashboard()["widgets"]:
            for metric in widget["properties"].get("metrics", []):
                ns, name, *rest = metric
                pairs = [item for item in rest if not isinstance(item, dict)]
                dimensions = tuple(pairs[0::2])
                seen.add(name)
                if ns == namespace:
                    self.assertIn(name, ours)
                    # The one dimension the code's EMF lines declare.
                    self.assertEqual(list(dimensions), oldest_dims)
                    self.assertEqual(pairs[1], ours[name])
                else:
                    self.assertIn(name, aws[(ns, dimensions)], metric)
                    if dimensions == ("ApiName", "Stage"):
                        self.assertEqual(pairs[1::2], ["<rest_api_name>", "fleetlock"], metric)
        self.assertTrue(set(ours) <= seen)

    def test_the_endpoint_and_the_optional_functions_have_placeholders_when_absent(self):
        _, values = self.sam_body()
        self.assertEqual(values["api_id"], {"Fn::If": ["UseHttpApi", {"Ref": "HttpApi"}, "none"]})
        self.assertEqual(values["slot_events_function"]["Fn::If"][0], "HasSlotEvents")
        self.assertEqual(values["alarm_pauses_log_group"],
                         {"Fn::If": ["HasAlarmPauses", {"Ref": "AlarmPausesLogGroup"}, {"Ref": "FunctionLogGroup"}]})


if __name__ == "__main__":
    unittest.main()
