"""Zip bytes and cold-start init of the function binary, beside another
build of it (an older commit's, for comparison) and a `lambda_http` hello
world built with the same release profile (the floor). Init is the time from
the process's start to its first call for work (GET /invocation/next) on a
stand-in Runtime API, what Lambda waits for; it is measured at the CPU share
Lambda gives a 128 MB and a 512 MB function (128/1769 and 512/1769 of a core,
a CFS quota in a cgroup made here) and on a full core. The api entry point
checks its table at start: the DescribeTable's own time is read from its
"table checked" log line (check_ms) and shown apart.

The functions talk to DynamoDB Local through a TLS stand-in (a forwarder with
a certificate of a CA made for the run), so that every start makes the HTTPS
connection it makes on AWS. Each build trusts that CA the way it trusts a
proxy's: a build that reads the host's trust store ("system") gets the host's
whole store with the CA added (SSL_CERT_FILE and SSL_CERT_DIR, the file and
folder it would find on its own); the function binary ("compiled") gets the CA
alone in SSL_CERT_FILE beside its compiled-in roots, which is what it reads
on AWS plus one certificate.

Run by scripts/bench-cold-start, which builds the binaries and starts DynamoDB
Local; CANDIDATES names them: "label=path[=entry]" separated by ';', where
entry "system" or "compiled" says how the build trusts roots (above),
"floor" marks the hello world (one handler, no settings) and
"floor-dynamodb" the hello world that makes the api's one DescribeTable at
start with the same SDK (the floor of any Rust function on DynamoDB).

Each start's CPU time (user and system, every thread, from /proc) until its
first ask for work is shown beside its init: on a full core the two differ
by the waits (the DescribeTable's round trip), at a small share by the
throttling too. Then the api entry point's warm calls at 128 MB, 256 MB and
a full core: WARM_CALLS (200) pre-reboots and steady-states in turn, the
median from an event handed out to its answer and the CPU per call.
PROFILE=1 instead runs the first candidate's api entry point
RUNS times under `perf record` and prints where its CPU went (a build with
symbols: scripts/bench-cold-start --profile).
"""

import io
import json
import os
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "iac"))
import lambda_run  # noqa: E402
# The stand-in Runtime API that records the first ask for work.
from init_time import _FirstNext, aws_env  # noqa: E402

RUNS = int(os.environ.get("RUNS", "15"))
FULL_CORE_MB = 1769
SHARES = [(128, 128 / FULL_CORE_MB), (512, 512 / FULL_CORE_MB), (FULL_CORE_MB, 1.0)]


class CpuShare:
    """A cgroup whose CPU quota is `share` of one core (cgroup v2's cpu.max,
    else v1's cpu controller); None where neither can be made."""

    def __init__(self, share):
        self.path = None
        period = 100_000
        quota = max(1000, int(period * share))
        v2 = Path("/sys/fs/cgroup/cgroup.controllers")
        v1 = Path("/sys/fs/cgroup/cpu")
        name = f"fleetlock-bench-{os.getpid()}-{int(share * 1000)}"
        try:
            if v2.exists():
                self.path = Path("/sys/fs/cgroup") / name
                self.path.mkdir(exist_ok=True)
                (self.path / "cpu.max").write_text(f"{quota} {period}")
            elif (v1 / "cpu.cfs_quota_us").exists():
                self.path = v1 / name
                self.path.mkdir(exist_ok=True)
                (self.path / "cpu.cfs_period_us").write_text(str(period))
                (self.path / "cpu.cfs_quota_us").write_text(str(quota))
        except OSError as err:
            sys.exit(f"cannot make a cgroup for the CPU share ({err}): run as root")

    def enter(self):
        if self.path is not None:
            (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def remove(self):
        if self.path is not None:
            try:
                self.path.rmdir()
            except OSError:
                pass


class TlsStandIn:
    """A TLS forwarder to DynamoDB Local on loopback, its certificate signed
    by a CA made for this run; `trust(kind)` is the environment that makes a
    build trust that CA."""

    def __init__(self, upstream):
        self.dir = Path(os.environ.get("TMPDIR", "/tmp")) / f"fleetlock-tls-{os.getpid()}"
        self.dir.mkdir(exist_ok=True)
        ca, key = self.dir / "ca.pem", self.dir / "ca.key"
        cert, cert_key = self.dir / "server.pem", self.dir / "server.key"
        ext = self.dir / "ext.cnf"
        ext.write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n")
        openssl = ["openssl"]
        subprocess.run([*openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-nodes", "-keyout", key, "-out", ca, "-days", "2", "-subj", "/CN=fleetlock bench CA"],
                       check=True, capture_output=True)
        subprocess.run([*openssl, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-keyout", cert_key, "-out", self.dir / "server.csr", "-subj", "/CN=localhost"],
                       check=True, capture_output=True)
        subprocess.run([*openssl, "x509", "-req", "-in", self.dir / "server.csr", "-CA", ca, "-CAkey", key,
                        "-CAcreateserial", "-out", cert, "-days", "2", "-extfile", ext],
                       check=True, capture_output=True)
        self.ca = ca
        # The host's store with the CA added, as a file and as a folder.
        bundle = self.dir / "system-bundle.pem"
        folder = self.dir / "system-certs"
        folder.mkdir(exist_ok=True)
        system_file, system_dir = ssl.get_default_verify_paths().cafile, ssl.get_default_verify_paths().capath
        bundle.write_text((Path(system_file).read_text() if system_file else "") + ca.read_text())
        if system_dir and Path(system_dir).is_dir():
            for entry in Path(system_dir).iterdir():
                if entry.is_file():
                    shutil.copy(entry, folder / entry.name)
        shutil.copy(ca, folder / "fleetlock-bench-ca.pem")
        self.system = {"SSL_CERT_FILE": str(bundle), "SSL_CERT_DIR": str(folder)}
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, cert_key)
        host, port = upstream.removeprefix("http://").rstrip("/").split(":")
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"https://localhost:{self.listener.getsockname()[1]}"

        def pipe(source, sink):
            try:
                while data := source.recv(65536):
                    sink.sendall(data)
            except OSError:
                pass
            finally:
                for end in (source, sink):
                    try:
                        end.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        def serve():
            while True:
                try:
                    client, _ = self.listener.accept()
                except OSError:
                    return
                try:
                    tls = context.wrap_socket(client, server_side=True)
                except (OSError, ssl.SSLError):
                    client.close()
                    continue
                backend = socket.create_connection((host, int(port)))
                threading.Thread(target=pipe, args=(tls, backend), daemon=True).start()
                threading.Thread(target=pipe, args=(backend, tls), daemon=True).start()

        threading.Thread(target=serve, daemon=True).start()

    def trust(self, kind):
        # An empty folder for the compiled-in build: an SSL_CERT_DIR of the
        # caller's own environment would otherwise add the host's store.
        empty = self.dir / "no-certs"
        empty.mkdir(exist_ok=True)
        return self.system if kind == "system" else {"SSL_CERT_FILE": str(self.ca), "SSL_CERT_DIR": str(empty)}

    def close(self):
        self.listener.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def start(binary, handler, env, cpu, perf=None):
    """One cold start: (init ms, the DescribeTable's ms from the log or None,
    the CPU ms of every thread until the first ask for work). With `perf`
    (a perf.data path), under `perf record`, its samples added there."""
    server = _FirstNext()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    started = time.perf_counter()
    wrapper = ["perf", "record", "--quiet", "-F", "20000", "-g", "--call-graph", "dwarf,16384",
               "-o", str(perf), "--"] if perf else []
    process = subprocess.Popen(
        [*wrapper, str(binary)],
        env={**lambda_run.HERMETIC, **env,
             **lambda_run.runtime_env(server, handler, "fleetlock-bench")},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=cpu.enter)
    try:
        if not server.asked.wait(timeout=60):
            process.kill()
            sys.exit(f"{binary} {handler}: never asked for work: {process.communicate()[1].decode()}")
        init = (server.asked_at - started) * 1000
        # Blocked on the unanswered ask from here on: the CPU it has used
        # is its start's.
        cpu_ms = None if perf else process_cpu_ms(process.pid)
    finally:
        if perf:
            process.send_signal(2)  # perf writes its samples on SIGINT
        else:
            process.kill()
        _, err = process.communicate()
        server.shutdown()
        server.server_close()
    check = None
    for line in err.decode(errors="replace").splitlines():
        try:
            fields = json.loads(line)  # the event's fields are flattened
        except ValueError:
            continue
        if fields.get("message") == "table checked":
            check = float(fields["check_ms"])
    return init, check, cpu_ms


def process_cpu_ms(pid):
    """The CPU every thread of `pid` has run so far, in ms: the sum of their
    schedstat run times (nanoseconds, unlike /proc's 10 ms ticks)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that ended between the listing and the read
    return total / 1e6


def profile(candidates, entries, tls):
    """PROFILE=1: the api entry point of the first candidate, RUNS cold starts
    on a full core under perf, and where their CPU went."""
    label, path, kind = candidates[0]
    _, handler, env = entries[0]
    data = Path("target/bench/cold-start.perf.data")
    data.parent.mkdir(parents=True, exist_ok=True)
    runs = []
    for n in range(RUNS):
        part = data.with_suffix(f".{n}")
        start(path, handler, {**env, **tls.trust(kind)}, CpuShare(1.0), perf=part)
        runs.append(part)
    report = ["perf", "report", "--stdio", "--no-children", "--percent-limit", "0.5",
              "--sort", "dso,symbol", "-g", "none"]
    print(subprocess.run([*report, "-i", str(runs[0])], capture_output=True, text=True).stdout)
    print(f"{label}: {RUNS} profiles in {data.parent}/cold-start.perf.* "
          f"(perf report -i FILE --no-children --sort dso,symbol)")


class _Warm(ThreadingHTTPServer):
    """A Runtime API that hands out `events` one by one and times each from
    the moment it is handed out to the function's answer."""
    daemon_threads = True

    def __init__(self, events):
        self.events = list(events)
        self.handed, self.answered = [], []
        self.done = threading.Event()
        super().__init__(("127.0.0.1", 0), _WarmHandler)


class _WarmHandler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        server = self.server
        if len(server.handed) == len(server.events):
            server.done.set()
            time.sleep(5)  # never answered: the run is over
            return
        lambda_run.send_invocation(self, server.events[len(server.handed)])
        self.wfile.flush()
        server.handed.append(time.perf_counter())

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.server.answered.append(time.perf_counter())
        self.send_response(202)
        self.send_header("content-length", "0")
        self.end_headers()


def warm(binary, env, cpu, calls):
    """The api entry point's warm calls, as Zincati makes them (a pre-reboot
    and a steady-state in turn): (p50 ms from event to answer, CPU ms per
    call), after the cold start and 10 calls that warm the connection."""
    node = "8f040e49ad9a45a8b0c617313becf153"
    events = [lambda_run.api_gateway_event("pre-reboot" if n % 2 == 0 else "steady-state", node)
              for n in range(calls + 10)]
    server = _Warm(events)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    process = subprocess.Popen(
        [str(binary)],
        env={**lambda_run.HERMETIC, **env,
             **lambda_run.runtime_env(server, "bootstrap", "fleetlock-bench")},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=cpu.enter)
    try:
        while len(server.answered) < 10:
            if process.poll() is not None:
                sys.exit(f"{binary}: ended before its warm calls")
            time.sleep(0.01)
        before = process_cpu_ms(process.pid)
        if not server.done.wait(timeout=300):
            sys.exit(f"{binary}: its warm calls did not finish")
        spent = process_cpu_ms(process.pid) - before
    finally:
        process.kill()
        process.communicate()
        server.shutdown()
        server.server_close()
    times = [(a - h) * 1000 for h, a in zip(server.handed[10:], server.answered[10:])]
    return statistics.median(times), spent / calls


def zipped(binary):
    """The bytes of a zip of `binary` as bootstrap, as scripts/build-lambda makes it."""
    buffer = io.BytesIO()
    info = zipfile.ZipInfo("bootstrap", date_time=(1980, 1, 1, 0, 0, 0))
    info.external_attr = 0o100755 << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr(info, Path(binary).read_bytes(), compresslevel=9)
    return len(buffer.getvalue())


def main():
    endpoint = lambda_run.dynamodb_endpoint()
    table = "fleetlock-cold-start-bench"
    candidates = []
    for spec in os.environ["CANDIDATES"].split(";"):
        label, path, *kind = spec.split("=")
        candidates.append((label, Path(path), kind[0] if kind else "compiled"))
    cli = os.environ.get("FLEETLOCK_CLI")
    made = subprocess.run([cli, "create-table"], capture_output=True, text=True,
                          env={**lambda_run.HERMETIC, **aws_env(endpoint), "FLEETLOCK_TABLE": table})
    if made.returncode != 0 and "already exists" not in made.stderr:
        sys.exit(f"create-table: {made.stderr.strip()}")
    tls = TlsStandIn(endpoint)
    aws = {**aws_env(tls.endpoint), "FLEETLOCK_TABLE": table}
    entries = [
        ("api", "bootstrap", {**aws, "FLEETLOCK_AUTH": "disabled", "FLEETLOCK_GROUPS": "default=1,workers=2"}),
        ("slot-events", "slot-events", aws_env(tls.endpoint)),
        ("alarm-pauses", "alarm-pauses", {**aws, "FLEETLOCK_GROUPS": "default=1",
                                          "FLEETLOCK_ALARM_PAUSES": "db-errors=default"}),
        ("drained", "drained", aws),
    ]
    if os.environ.get("PROFILE"):
        profile(candidates, entries, tls)
        tls.close()
        return
    print(f"{RUNS} cold starts per entry point and CPU share; medians in ms: the init "
          "(start to first ask for work), and in brackets the CPU time of every thread "
          "until then.\n")
    print("| build | binary bytes | zip bytes |")
    print("|---|---:|---:|")
    for label, path, _ in candidates:
        print(f"| {label} | {path.stat().st_size:,} | {zipped(path):,} |")
    print()
    print("| build | entry point | " + " | ".join(f"{mb} MB" for mb, _ in SHARES) + " |")
    print("|---|---|" + "---:|" * len(SHARES))
    checks = {}
    for label, path, kind in candidates:
        if kind == "floor":
            runs = [("hello world", "bootstrap", {})]
        elif kind == "floor-dynamodb":
            # The same one DescribeTable at start, through the same TLS.
            runs = [("DescribeTable, then hello", "bootstrap", aws)]
        else:
            runs = entries
        for name, handler, env in runs:
            env = {**env, **tls.trust("compiled" if kind == "floor-dynamodb" else kind)} \
                if kind != "floor" else env
            cells = []
            for mb, share in SHARES:
                cpu = CpuShare(share)
                try:
                    start(path, handler, env, cpu)  # warm the page cache
                    results = [start(path, handler, env, cpu) for _ in range(RUNS)]
                finally:
                    cpu.remove()
                cells.append(f"{statistics.median(r[0] for r in results):.1f} "
                             f"({statistics.median(r[2] for r in results):.1f})")
                seen = [r[1] for r in results if r[1] is not None]
                if seen:
                    checks[(label, mb)] = statistics.median(seen)
            print(f"| {label} | {name} | " + " | ".join(cells) + " |")
    warm_shares = [(128, 128 / FULL_CORE_MB), (256, 256 / FULL_CORE_MB), (FULL_CORE_MB, 1.0)]
    calls = int(os.environ.get("WARM_CALLS", "200"))
    print()
    print(f"The api entry point's warm calls ({calls} after 10, a pre-reboot and a steady-state "
          "in turn, each one conditional write): the median from the event to the answer in ms, "
          "and in brackets the CPU per call in ms.")
    print()
    print("| build | " + " | ".join(f"{mb} MB" for mb, _ in warm_shares) + " |")
    print("|---|" + "---:|" * len(warm_shares))
    for label, path, kind in candidates:
        if kind.startswith("floor"):
            continue
        cells = []
        for mb, share in warm_shares:
            cpu = CpuShare(share)
            try:
                p50, per_call = warm(path, {**entries[0][2], **tls.trust(kind)}, cpu, calls)
            finally:
                cpu.remove()
            cells.append(f"{p50:.2f} ({per_call:.2f})")
        print(f"| {label} | " + " | ".join(cells) + " |")
    tls.close()
    if checks:
        print()
        print("The api entry point's DescribeTable at start (its `check_ms` log field), median ms:")
        print()
        for (label, mb), ms in checks.items():
            print(f"- {label}, {mb} MB: {ms:.1f}")


if __name__ == "__main__":
    main()
