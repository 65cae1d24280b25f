"""The real binary as Lambda runs it, so that the templates are checked against
what the code does rather than against its source text.

A stand-in for the Lambda Runtime API (the HTTP interface a provided.al2023
function polls) hands the binary one event after another and collects its
answers; the binary's stdout holds the Embedded Metric Format lines that
CloudWatch turns into the metrics the alarms and the dashboard read.
The API and alarm-pauses functions check their table at start: they use the
DynamoDB Local that scripts/test starts (AWS_ENDPOINT_URL).
"""

import json
import os
import queue
import subprocess
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FLEETLOCK = Path(os.environ.get("FLEETLOCK_BIN", ROOT / "target" / "debug" / "fleetlock"))
# The function's own binary, as the zip ships it.
FUNCTION = Path(os.environ.get("FLEETLOCK_FUNCTION_BIN", ROOT / "target" / "debug" / "fleetlock-lambda"))
FIXTURES = ROOT / "tests" / "fixtures"

# Nothing of the developer's own settings or account reaches the binary.
HERMETIC = {
    key: value
    for key, value in os.environ.items()
    if not key.startswith(("FLEETLOCK_", "AWS_", "_HANDLER", "RUST_LOG"))
}


class RuntimeApi(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, events):
        self.events = queue.Queue()
        for event in events:
            self.events.put(event)
        self.answers = queue.Queue()
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request, client_address):
        # The function is killed once its events are answered, while its
        # next poll still waits here: a closed pipe then is the end of the
        # run, not a failure worth a traceback.
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        if not self.path.endswith("/invocation/next"):
            self.send_error(404)
            return
        try:
            event = self.server.events.get(timeout=60)
        except queue.Empty:
            self.send_error(503)
            return
        send_invocation(self, event)

    def do_POST(self):
        length = int(self.headers.get("content-length", 0))
        body = self.rfile.read(length)
        self.send_response(202)
        self.send_header("content-length", "0")
        self.end_headers()
        kind = "response" if self.path.endswith("/response") else "error"
        self.server.answers.put((kind, json.loads(body or b"null")))


def send_invocation(handler, event):
    """Answers a function's GET /invocation/next with `event`, as Lambda's
    Runtime API does."""
    body = json.dumps(event).encode()
    handler.send_response(200)
    handler.send_header("lambda-runtime-aws-request-id", str(uuid.uuid4()))
    handler.send_header("lambda-runtime-deadline-ms", "99999999999999")
    handler.send_header("lambda-runtime-invoked-function-arn",
                        "arn:aws:lambda:eu-west-1:123456789012:function:fleetlock")
    handler.send_header("lambda-runtime-trace-id", "Root=1-00000000-000000000000000000000000")
    handler.send_header("content-length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def runtime_env(server, handler, function="fleetlock-test"):
    """The environment Lambda gives a function polling `server` (a Runtime
    API stand-in) as the entry point `handler`."""
    return {"AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{server.server_address[1]}",
            "AWS_LAMBDA_FUNCTION_NAME": function,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "128",
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "_HANDLER": handler}


def dynamodb_endpoint():
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    if not endpoint:
        raise AssertionError("AWS_ENDPOINT_URL is unset: run these tests through ./scripts/test, "
                             "which starts DynamoDB Local")
    return endpoint


HARNESS_KEY = "fleetlock-tests"


def principal(handler):
    """The role a handler runs as, as the templates give it (shipped_policies.py)."""
    return "function" if handler in ("bootstrap", "api") else handler


def aws_env(endpoint=None):
    # The tests' own key (scripts/lib.sh's IAM enforcer lets it do anything);
    # invoke() runs each handler under its own role's key instead.
    env = {"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": HARNESS_KEY, "AWS_SECRET_ACCESS_KEY": "local"}
    if endpoint:
        env["AWS_ENDPOINT_URL"] = endpoint
    return env


def fleetlock(*args, env=None):
    """One CLI run of the binary, with `env` and none of the developer's own
    settings; its stdout."""
    if not FLEETLOCK.exists():
        raise AssertionError(f"{FLEETLOCK} is missing: build it first (cargo build)")
    run = subprocess.run([str(FLEETLOCK), *args], env={**HERMETIC, **(env or {})}, capture_output=True,
                         text=True, timeout=60)
    if run.returncode != 0:
        raise AssertionError(f"fleetlock {' '.join(args)} failed: {run.stderr}")
    return run.stdout


def invoke(handler, events, env, function="fleetlock-test"):
    """Runs the binary with `handler` over `events`: (answers, stdout lines).
    Each answer is ("response" | "error", body)."""
    if not FUNCTION.exists():
        raise AssertionError(f"{FUNCTION} is missing: build it first (cargo build)")
    server = RuntimeApi(events)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    process = subprocess.Popen(
        [str(FUNCTION)],
        env={**HERMETIC, **env, **runtime_env(server, handler, function),
             **({"AWS_ACCESS_KEY_ID": principal(handler)}
                if env.get("AWS_ACCESS_KEY_ID", HARNESS_KEY) == HARNESS_KEY else {})},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    answers = []
    try:
        for _ in events:
            try:
                answers.append(server.answers.get(timeout=30))
            except queue.Empty:
                process.kill()
                _, stderr = process.communicate()
                raise AssertionError(f"handler {handler!r} answered {len(answers)} of "
                                     f"{len(events)} events: {stderr}")
    finally:
        process.kill()
        stdout, _ = process.communicate()
        server.shutdown()
        server.server_close()
    return answers, stdout.splitlines()


def metric_lines(lines):
    """The Embedded Metric Format lines among a function's output."""
    found = []
    for line in lines:
        try:
            parsed = json.loads(line)
        except ValueError:
            continue
        if isinstance(parsed, dict) and "_aws" in parsed:
            found.append(parsed)
    return found


def emitted_metrics(lines):
    """{(namespace, metric name): (unit, [dimension names], {dimension: value})}."""
    emitted = {}
    for line in metric_lines(lines):
        for directive in line["_aws"]["CloudWatchMetrics"]:
            dimensions = [name for group in directive["Dimensions"] for name in group]
            for metric in directive["Metrics"]:
                emitted[(directive["Namespace"], metric["Name"])] = (
                    metric.get("Unit"), dimensions, {name: line[name] for name in dimensions})
    return emitted


def api_gateway_event(endpoint, node, group="default"):
    event = json.loads((FIXTURES / "http_api_v2_default_stage.json").read_text())
    event["rawPath"] = event["requestContext"]["http"]["path"] = f"/v1/{endpoint}"
    event["body"] = json.dumps({"client_params": {"id": node, "group": group}}, indent=2)
    return event


def unreadable_stream_record():
    """A DynamoDB stream record whose images cannot be read."""
    return {"Records": [{
        "eventID": "c4ca4238a0b923820dcc509a6f75849b",
        "eventName": "MODIFY",
        "eventSource": "aws:dynamodb",
        "awsRegion": "eu-west-1",
        "dynamodb": {"Keys": {"group": {"S": "default"}}, "SequenceNumber": "111",
                     "NewImage": {"group": {"N": "not a group"}}, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    }]}


def table(name):
    """A lock table in DynamoDB Local, made by the binary."""
    endpoint = dynamodb_endpoint()
    fleetlock("create-table", env={**aws_env(endpoint), "FLEETLOCK_TABLE": name})
    return endpoint
