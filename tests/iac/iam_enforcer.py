"""An IAM-enforcing stand-in in front of DynamoDB Local, as strict as AWS on
what the templates ship: DynamoDB Local enforces no IAM, so without it a
role that lacks an action its code calls passes every test and fails on AWS.

The caller's principal is its access key id, as on AWS: `function`,
`operator`, `drained`, ... (shipped_policies.PRINCIPALS), optionally bound to
its stack's table as `PRINCIPAL.TABLE` (the policy's `{table}` then matches
that table only; unbound, any one table name, never an index or a stream).
`fleetlock-tests` is the tests' own hand (tables made, items seeded and read
back) and may do anything; every other key, and every action or resource
outside the principal's policy, is answered as AWS answers it:
`400 AccessDeniedException` with its body, never forwarded.

Run by scripts/lib.sh beside DynamoDB Local:
    python tests/iac/iam_enforcer.py --upstream http://127.0.0.1:PORT \
        --policies POLICIES.json --port-file FILE [--denials FILE]
"""

import argparse
import http.client
import http.server
import json
import re
import threading

HARNESS = "fleetlock-tests"
HOLE = re.compile(r"\{([a-z_]+)\}")


def pattern(resource, bound):
    """A policy resource as a regex: `*` any characters (as IAM matches),
    a hole one name, `{table}` the bound table when there is one."""
    out = []
    for piece in re.split(r"(\{[a-z_]+\}|\*)", resource):
        if piece == "*":
            out.append(".*")
        elif HOLE.fullmatch(piece):
            name = HOLE.fullmatch(piece).group(1)
            out.append(re.escape(bound[name]) if name in bound else "[^/:]+")
        else:
            out.append(re.escape(piece))
    return re.compile("".join(out))


def allowed(statements, action, resource, bound):
    """Whether an identity policy of Allow statements allows `action` on
    `resource` (conditions apart: none of the DynamoDB statements has one)."""
    for statement in statements:
        if "condition" in statement:
            continue
        if action not in statement["actions"] and not any(
                a.endswith("*") and action.startswith(a[:-1]) for a in statement["actions"]):
            continue
        if any(pattern(r, bound).fullmatch(resource) for r in statement["resources"]):
            return True
    return False


def caller(authorization):
    """(access key id, region, service) from a SigV4 Authorization header."""
    match = re.search(r"Credential=([^/]+)/\d{8}/([^/]+)/([^/]+)/aws4_request", authorization or "")
    return match.groups() if match else (None, None, None)


def principal_of(access_key):
    """`PRINCIPAL.TABLE` or `PRINCIPAL`: the principal and what it binds."""
    name, _, table = access_key.partition(".")
    return name, ({"table": table} if table else {})


ACCOUNT = "123456789012"


def dynamodb_resource(operation, body, region):
    """The ARN IAM authorizes a DynamoDB or Streams operation on."""
    table = body.get("TableName")
    if operation in ("DescribeStream", "GetShardIterator") or "StreamArn" in body:
        stream = body["StreamArn"]
        table = stream.split(":table/", 1)[1].split("/stream/", 1)[0]
        label = stream.split("/stream/", 1)[1]
        return f"arn:aws:dynamodb:{region}:{ACCOUNT}:table/{table}/stream/{label}"
    if operation == "GetRecords":
        # DynamoDB Local's iterators carry the stream's ARN.
        match = re.search(r"table/([A-Za-z0-9_.-]+)/stream/([0-9T:.-]+)", body.get("ShardIterator", ""))
        if match:
            return f"arn:aws:dynamodb:{region}:{ACCOUNT}:table/{match.group(1)}/stream/{match.group(2)}"
        return f"arn:aws:dynamodb:{region}:{ACCOUNT}:table/*/stream/*"
    if operation == "ListStreams":
        table = body.get("TableName", "*")
        return f"arn:aws:dynamodb:{region}:{ACCOUNT}:table/{table}/stream/*"
    if operation in ("ListTables",):
        return "*"
    if body.get("IndexName"):
        return f"arn:aws:dynamodb:{region}:{ACCOUNT}:table/{table}/index/{body['IndexName']}"
    return f"arn:aws:dynamodb:{region}:{ACCOUNT}:table/{table}"


def denial(principal, action, resource):
    message = (f"User: arn:aws:sts::{ACCOUNT}:assumed-role/{principal}/fleetlock-tests is not "
               f"authorized to perform: {action} on resource: {resource} because no "
               f"identity-based policy allows the {action} action")
    return json.dumps({"__type": "com.amazon.coral.service#AccessDeniedException",
                       "Message": message}).encode()


class Enforcer(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # An answer's headers and body go out in two writes: with Nagle's
    # algorithm the second waits for the client's delayed ACK (about 40 ms
    # on loopback), a stall AWS does not have.
    disable_nagle_algorithm = True
    policies = {}
    upstream = ("127.0.0.1", 8000)
    denials = None
    lock = threading.Lock()

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        verdict = self.judge(raw)
        if verdict is not None:
            self.answer(400, "application/x-amz-json-1.0", verdict)
            return
        self.forward(raw)

    def judge(self, raw):
        """None to forward, or the body of an AccessDeniedException."""
        access_key, region, _ = caller(self.headers.get("Authorization"))
        if access_key == HARNESS:
            return None
        target = self.headers.get("X-Amz-Target", "")
        operation = target.rsplit(".", 1)[-1]
        action = f"dynamodb:{operation}"
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        resource = dynamodb_resource(operation, body, region or "us-east-1")
        principal, bound = principal_of(access_key or "anonymous")
        statements = self.policies.get(principal)
        if statements is not None and allowed(statements, action, resource, bound):
            return None
        if self.denials:
            with self.lock, open(self.denials, "a") as f:
                f.write(json.dumps({"principal": access_key, "action": action, "resource": resource}) + "\n")
        return denial(principal, action, resource)

    def forward(self, raw):
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection",)}
        # DynamoDB Local takes letters and digits only as an access key (and
        # checks no signature): the principal's name stays here.
        for name in headers:
            if name.lower() == "authorization":
                headers[name] = re.sub(r"Credential=[^/]+/", "Credential=enforced/", headers[name])
        connection = http.client.HTTPConnection(*self.upstream, timeout=60)
        try:
            connection.request("POST", self.path, body=raw, headers=headers)
            response = connection.getresponse()
            body = response.read()
        except (http.client.HTTPException, OSError):
            self.close_connection = True
            return
        finally:
            connection.close()
        self.send_response(response.status)
        for name, value in response.getheaders():
            if name.lower() not in ("connection", "transfer-encoding", "content-length", "date", "server"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def answer(self, status, content_type, body):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("x-amzn-ErrorType", "AccessDeniedException")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


def start(upstream, policies, denials=None, port=0):
    """An enforcer on loopback in this process (a thread): its server."""
    host, _, upstream_port = upstream.removeprefix("http://").partition(":")
    handler = type("Bound", (Enforcer,), {"policies": policies, "upstream": (host, int(upstream_port)),
                                           "denials": denials})
    server = Server(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--policies", required=True)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--denials")
    args = parser.parse_args()
    with open(args.policies) as f:
        policies = json.load(f)
    host, _, upstream_port = args.upstream.removeprefix("http://").partition(":")
    Enforcer.policies = policies
    Enforcer.upstream = (host, int(upstream_port))
    Enforcer.denials = args.denials
    server = Server(("127.0.0.1", 0), Enforcer)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.replace(args.port_file + ".tmp", args.port_file)
    server.serve_forever()
