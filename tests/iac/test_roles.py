"""Each principal's shipped policy, enforced: through the IAM enforcer that
scripts/test puts in front of DynamoDB Local (AWS_ENDPOINT_URL), a call
inside the policy template.yaml and infra/ give a principal reaches
DynamoDB, and one outside it is answered as AWS answers it. And the
enforcer bites: the API role as it shipped before the regions' fix (no
GetItem) fails `fleetlock serve` on a global table through it.

Run by scripts/test with the enforcer started (scripts/lib.sh).
"""

import http.client
import json
import os
import subprocess
import time
import unittest
import uuid

import boto3
import botocore.exceptions
import iam_enforcer
import lambda_run
import shipped_policies

POLICIES = shipped_policies.shipped()

# Every DynamoDB action the code of any principal calls, and some it never
# should: each principal must be refused every one its policy does not list.
DYNAMODB_ACTIONS = ["DescribeTable", "GetItem", "UpdateItem", "DeleteItem", "Scan", "PutItem",
                    "Query", "DeleteTable", "CreateTable", "BatchWriteItem"]


def client(key, endpoint=None):
    return boto3.client("dynamodb", endpoint_url=endpoint or lambda_run.dynamodb_endpoint(),
                        region_name="eu-west-1", aws_access_key_id=key, aws_secret_access_key="x")


def call(dynamodb, action, table):
    key = {"group": {"S": "workers"}}
    calls = {
        "DescribeTable": lambda: dynamodb.describe_table(TableName=table),
        "GetItem": lambda: dynamodb.get_item(TableName=table, Key=key),
        "UpdateItem": lambda: dynamodb.update_item(TableName=table, Key=key,
                                                   UpdateExpression="SET probe = :p",
                                                   ExpressionAttributeValues={":p": {"S": "x"}}),
        "DeleteItem": lambda: dynamodb.delete_item(TableName=table, Key=key),
        "Scan": lambda: dynamodb.scan(TableName=table),
        "PutItem": lambda: dynamodb.put_item(TableName=table, Item=key),
        "Query": lambda: dynamodb.query(TableName=table, KeyConditionExpression="#g = :g",
                                        ExpressionAttributeNames={"#g": "group"},
                                        ExpressionAttributeValues={":g": {"S": "workers"}}),
        "DeleteTable": lambda: dynamodb.delete_table(TableName=table + "-none"),
        "CreateTable": lambda: dynamodb.create_table(
            TableName=table + "-more", BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "group", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "group", "KeyType": "HASH"}]),
        "BatchWriteItem": lambda: dynamodb.batch_write_item(
            RequestItems={table: [{"PutRequest": {"Item": key}}]}),
    }
    try:
        calls[action]()
        return None
    except botocore.exceptions.ClientError as error:
        return error


def make_table():
    table = f"roles-{uuid.uuid4().hex[:12]}"
    client(lambda_run.HARNESS_KEY).create_table(
        TableName=table, BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "group", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "group", "KeyType": "HASH"}])
    return table


class EveryPrincipalIsHeldToItsPolicy(unittest.TestCase):
    def test_inside_the_policy_reaches_dynamodb_outside_is_access_denied(self):
        table = make_table()
        for principal, statements in POLICIES.items():
            allowed = {a.split(":", 1)[1] for s in statements for a in s["actions"]
                       if a.startswith("dynamodb:") and s["resources"] == [shipped_policies.TABLE]}
            dynamodb = client(f"{principal}.{table}")
            for action in DYNAMODB_ACTIONS:
                with self.subTest(principal=principal, action=action):
                    error = call(dynamodb, action, table)
                    denied = error is not None and error.response["Error"]["Code"] == "AccessDeniedException"
                    self.assertEqual(denied, action not in allowed, error)
                    if denied:
                        self.assertEqual(error.response["ResponseMetadata"]["HTTPStatusCode"], 400)
                        self.assertIn(f"is not authorized to perform: dynamodb:{action} on resource: "
                                      f"arn:aws:dynamodb:eu-west-1:", str(error))

    def test_a_principal_bound_to_its_table_is_refused_every_other_table_an_index_and_a_stream(self):
        table, other = make_table(), make_table()
        self.assertIsNone(call(client(f"operator.{table}"), "GetItem", table))
        error = call(client(f"operator.{table}"), "GetItem", other)
        self.assertEqual(error.response["Error"]["Code"], "AccessDeniedException")
        # The same table's index is another resource: the policy names the table.
        index = client(f"operator.{table}").scan
        with self.assertRaises(botocore.exceptions.ClientError) as refused:
            index(TableName=table, IndexName="by-holder")
        self.assertIn(f"table/{table}/index/by-holder", str(refused.exception))
        self.assertIn("AccessDenied", str(refused.exception))
        streams = boto3.client("dynamodbstreams", endpoint_url=lambda_run.dynamodb_endpoint(),
                               region_name="eu-west-1", aws_access_key_id=f"operator.{table}",
                               aws_secret_access_key="x")
        with self.assertRaises(botocore.exceptions.ClientError) as refused:
            streams.describe_stream(
                StreamArn=f"arn:aws:dynamodb:eu-west-1:123456789012:table/{table}/stream/2026-01-01T00:00:00.000")
        self.assertIn("AccessDenied", str(refused.exception))

    def test_an_unknown_key_is_refused_everything(self):
        table = make_table()
        error = call(client("someone-else"), "DescribeTable", table)
        self.assertEqual(error.response["Error"]["Code"], "AccessDeniedException")

    def test_the_stream_is_the_slot_events_roles_and_not_the_table(self):
        statements = POLICIES["slot-events"]
        stream = "arn:aws:dynamodb:eu-west-1:123456789012:table/locks/stream/2026-01-01T00:00:00.000"
        self.assertTrue(iam_enforcer.allowed(statements, "dynamodb:GetRecords", stream, {}))
        self.assertFalse(iam_enforcer.allowed(statements, "dynamodb:GetRecords",
                                              "arn:aws:dynamodb:eu-west-1:123456789012:table/locks", {}))
        self.assertFalse(iam_enforcer.allowed(statements, "dynamodb:GetItem",
                                              "arn:aws:dynamodb:eu-west-1:123456789012:table/locks", {}))


class TheEnforcerBites(unittest.TestCase):
    """`fleetlock serve` on a global table (FLEETLOCK_REGION) with the API
    role as it shipped before the regions' records were fixed: DescribeTable
    and UpdateItem only. Through an enforcer with that policy its first
    refresh of the regions' records is refused; with the policy the
    templates ship now it is not."""

    BEFORE = {"function": [{"sid": "LockTable", "actions": ["dynamodb:DescribeTable", "dynamodb:UpdateItem"],
                            "resources": [shipped_policies.TABLE]}]}

    def serve_through(self, policies):
        upstream = os.environ.get("DYNAMODB_LOCAL_URL") or lambda_run.dynamodb_endpoint()
        enforcer = iam_enforcer.start(upstream, policies)
        self.addCleanup(enforcer.server_close)
        self.addCleanup(enforcer.shutdown)
        endpoint = f"http://127.0.0.1:{enforcer.server_address[1]}"
        table = make_table()
        env = {**lambda_run.HERMETIC, **lambda_run.aws_env(endpoint), "AWS_ACCESS_KEY_ID": f"function.{table}",
               "FLEETLOCK_TABLE": table, "FLEETLOCK_GROUPS": "workers=1", "FLEETLOCK_REGION": "eu-west-1"}
        process = subprocess.Popen([str(lambda_run.FLEETLOCK), "serve", "--listen", "127.0.0.1:0"], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(process.stderr.close)
        self.addCleanup(process.stdout.close)
        self.addCleanup(process.wait)
        self.addCleanup(process.kill)
        first = process.stdout.readline()
        if not first.startswith("fleetlock listening on http://"):
            process.kill()
            self.fail(first + process.stderr.read())
        address = first.strip().removeprefix("fleetlock listening on http://").rstrip("/")

        def log():
            process.kill()
            process.wait()
            return process.stderr.read()
        return address, log

    def answer(self, address):
        host, port = address.rsplit(":", 1)
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        body = json.dumps({"client_params": {"id": "e0f3745b108f471cbd4883c6fbed8cdd", "group": "workers"}},
                          indent=2)
        connection.request("POST", "/v1/steady-state", body=body, headers={"fleet-lock-protocol": "true"})
        answer = connection.getresponse()
        seen = (answer.status, json.loads(answer.read()).get("kind"))
        connection.close()
        return seen

    def test_the_api_role_without_getitem_fails_the_regions_refresh_and_the_shipped_role_passes(self):
        (before, before_log), (now, now_log) = self.serve_through(self.BEFORE), self.serve_through(POLICIES)
        self.assertEqual([self.answer(before)[0], self.answer(now)[0]], [200, 200])
        # Past the 30 s a function trusts the regions' records it read at
        # its start, it reads them again with the role it has: refused
        # without GetItem. It serves on the last read (for at most 5
        # minutes) and says why; with the shipped role nothing is refused.
        time.sleep(31)
        self.assertEqual(self.answer(before), (200, None))
        self.assertEqual(self.answer(now), (200, None))
        before_log, now_log = before_log(), now_log()
        self.assertIn("the regions' settings could not be read again", before_log)
        self.assertIn("AccessDeniedException", before_log)
        self.assertNotIn("AccessDenied", now_log)
        self.assertNotIn("could not be read again", now_log)


if __name__ == "__main__":
    unittest.main()
