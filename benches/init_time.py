"""Init time of each Lambda entry point: from the process's start to its
first call for work (GET /invocation/next) on a stand-in Runtime API, which is
what Lambda bills and waits for on a cold start. Runs the binary named by
FLEETLOCK_BIN (default target/release/fleetlock-lambda, the zip's bootstrap) RUNS times per entry point
and prints a Markdown table. The API, alarm-pauses and drained entry points check their
table at start: AWS_ENDPOINT_URL must name DynamoDB Local (scripts/bench-init
starts it).
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


def init_ms(handler, env):
    server = _FirstNext()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    started = time.perf_counter()
    process = subprocess.Popen(
        [str(BINARY)],
        env={**lambda_run.HERMETIC, **env,
             "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{server.server_address[1]}",
             "AWS_LAMBDA_FUNCTION_NAME": "fleetlock-bench",
             "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "128",
             "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
             "_HANDLER": handler},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
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


def main():
    endpoint = lambda_run.dynamodb_endpoint()
    table = "fleetlock-init-bench"
    subprocess.run([str(CLI), "create-table"], check=True, capture_output=True,
                   env={**lambda_run.HERMETIC, **lambda_run.aws_env(endpoint), "FLEETLOCK_TABLE": table})
    aws = {**lambda_run.aws_env(endpoint), "FLEETLOCK_TABLE": table}
    entries = [
        ("api", "bootstrap", {**aws, "FLEETLOCK_AUTH": "disabled", "FLEETLOCK_GROUPS": "default=1,workers=2"}),
        ("slot events", "slot-events", lambda_run.aws_env(endpoint)),
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


if __name__ == "__main__":
    main()
