"""Init time of each Lambda entry point: from the process's start to its
first call for work (GET /invocation/next) on a stand-in Runtime API, which is
what Lambda bills and waits for on a cold start. Runs the binary named by
FLEETLOCK_BIN (default target/release/fleetlock-lambda, the zip's bootstrap) RUNS times per entry point
and prints a Markdown table. The API, alarm-pauses and drained entry points check their
table at start: AWS_ENDPOINT_URL must name DynamoDB Local (scripts/bench-init
starts it).

Then what a deploy's check adds (the check-config entry point, which a deploy
invokes once before it updates the serving functions): from the process's
start to the check's answer, a cold start and one check of the settings, the
table (DescribeTable) included.
"""

import os
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "iac"))
import lambda_run  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BINARY = Path(os.environ.get("FLEETLOCK_BIN", ROOT / "target" / "release" / "fleetlock-lambda"))
# The command line that makes the table (the function binary has none).
CLI = Path(os.environ.get("FLEETLOCK_CLI", ROOT / "target" / "release" / "fleetlock"))
RUNS = int(os.environ.get("RUNS", "40"))


def aws_env(endpoint):
    """The AWS settings of a run straight on DynamoDB Local, with its own
    access key: the tests' key is the IAM enforcer's, which the benchmarks
    do not run behind, and which DynamoDB Local refuses."""
    return {**lambda_run.aws_env(endpoint), "AWS_ACCESS_KEY_ID": "local"}


class _FirstNext(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        self.asked = threading.Event()
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.asked_at = time.perf_counter()
        self.server.asked.set()
        # Never answered: the measurement ends at the ask.
        time.sleep(5)


def start(server, handler, env):
    """The binary as Lambda starts it, polling `server` (served from now on),
    as the entry point `handler`: when it started, and its process."""
    threading.Thread(target=server.serve_forever, daemon=True).start()
    started = time.perf_counter()
    process = subprocess.Popen(
        [str(BINARY)],
        env={**lambda_run.HERMETIC, **env,
             **lambda_run.runtime_env(server, handler, "fleetlock-bench")},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return started, process


def init_ms(handler, env):
    server = _FirstNext()
    started, process = start(server, handler, env)
    try:
        if not server.asked.wait(timeout=30):
            process.kill()
            raise SystemExit(f"{handler}: never asked for work: {process.communicate()[1].decode()}")
        return (server.asked_at - started) * 1000
    finally:
        process.kill()
        process.wait()
        server.shutdown()
        server.server_close()


class _OneCheck(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        self.answered = threading.Event()
        self.answer = b""
        self.handed = False
        super().__init__(("127.0.0.1", 0), _CheckHandler)


class _CheckHandler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.server.handed:
            time.sleep(5)  # one check is the measurement
            return
        self.server.handed = True
        lambda_run.send_invocation(self, {"action": "check-config"})

    def do_POST(self):
        self.server.answer = self.rfile.read(int(self.headers.get("content-length", "0")))
        self.server.answered_at = time.perf_counter()
        self.send_response(202)
        self.send_header("content-length", "0")
        self.end_headers()
        self.server.answered.set()


def check_ms(env):
    """From the process's start to the check's answer (which must be "ok")."""
    server = _OneCheck()
    started, process = start(server, "check-config", env)
    try:
        if not server.answered.wait(timeout=30):
            process.kill()
            raise SystemExit(f"check-config: never answered: {process.communicate()[1].decode()}")
        if b'"ok":true' not in server.answer:
            raise SystemExit(f"check-config refused the bench's settings: {server.answer.decode()}")
        return (server.answered_at - started) * 1000
    finally:
        process.kill()
        process.wait()
        server.shutdown()
        server.server_close()


def main():
    endpoint = lambda_run.dynamodb_endpoint()
    table = "fleetlock-init-bench"
    subprocess.run([str(CLI), "create-table"], check=True, capture_output=True,
                   env={**lambda_run.HERMETIC, **aws_env(endpoint), "FLEETLOCK_TABLE": table})
    aws = {**aws_env(endpoint), "FLEETLOCK_TABLE": table}
    entries = [
        ("api", "bootstrap", {**aws, "FLEETLOCK_AUTH": "disabled", "FLEETLOCK_GROUPS": "default=1,workers=2"}),
        ("slot events", "slot-events", aws_env(endpoint)),
        ("alarm pauses", "alarm-pauses", {**aws, "FLEETLOCK_GROUPS": "default=1",
                                          "FLEETLOCK_ALARM_PAUSES": "db-errors=default"}),
        ("drain confirmations", "drained", aws),
    ]
    print(f"`{BINARY.relative_to(ROOT) if BINARY.is_relative_to(ROOT) else BINARY}`, "
          f"{BINARY.stat().st_size:,} bytes; {RUNS} starts per entry point")
    print()
    print("| entry point | p50 ms | p90 ms | min ms |")
    print("|---|---:|---:|---:|")
    for name, handler, env in entries:
        init_ms(handler, env)  # warm the page cache
        times = sorted(init_ms(handler, env) for _ in range(RUNS))
        p90 = times[int(len(times) * 0.9) - 1]
        print(f"| {name} (`{handler}`) | {statistics.median(times):.1f} | {p90:.1f} | {times[0]:.1f} |")
    # A deploy's check: the API's settings and an existing table.
    check = {**aws, "FLEETLOCK_AUTH": "disabled", "FLEETLOCK_GROUPS": "default=1,workers=2",
             "FLEETLOCK_SETTLE": "workers=10m"}
    check_ms(check)
    times = sorted(check_ms(check) for _ in range(RUNS))
    p90 = times[int(len(times) * 0.9) - 1]
    print()
    print("| a deploy's check (`check-config`), start to answer | p50 ms | p90 ms | min ms |")
    print("|---|---:|---:|---:|")
    print(f"| settings, table (DescribeTable) | {statistics.median(times):.1f} | {p90:.1f} | {times[0]:.1f} |")


if __name__ == "__main__":
    main()
