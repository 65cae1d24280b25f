use std::process::ExitCode;
use std::sync::Arc;

use aws_config::SdkConfig;

use fleetlock::aws::{self, function_config as deployed, iam};
use fleetlock::cli::lock as client_cli;
use fleetlock::cli::{self, Command, Targets};
use fleetlock::config::Config;
use fleetlock::domain::alarms::AlarmGates;
use fleetlock::domain::input::{GroupName, NodeId, PauseReason};
use fleetlock::domain::lock::{PersonPause, Release, Timestamp};
use fleetlock::domain::service::{FleetLock, paused_because};
use fleetlock::domain::store::{Changed, Forgot, LockStore};
use fleetlock::entry::alarm_pauses::{self, AlarmPauses, CloudWatch};
use fleetlock::entry::slot_events::{self, EventBridge, SlotEvents};
use fleetlock::http::Api;
use fleetlock::http::auth::{self, Auth};
use fleetlock::http::lambda::EntryPoint;
use fleetlock::http::{lambda, server};
use fleetlock::logging;
use fleetlock::metrics::EmbeddedMetrics;
use fleetlock::store::dynamodb::{self, DynamoStore, TableProblem, table_definition};
use fleetlock::store::memory::MemoryStore;

#[tokio::main]
async fn main() -> ExitCode {
    if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some() {
        logging::init(true);
        // The handler name picks the entry point before any setting is read:
        // each one needs settings and clients of its own.
        let handler = std::env::var("_HANDLER").ok();
        let entry = match EntryPoint::from_handler(handler.as_deref()) {
            Ok(entry) => entry,
            Err(why) => {
                tracing::error!(error = %why, "not starting");
                return ExitCode::FAILURE;
            }
        };
        tracing::info!(entry = entry.name(), handler, "starting");
        return match entry {
            EntryPoint::Api => run_lambda().await,
            EntryPoint::SlotEvents => run_slot_events().await,
            EntryPoint::AlarmPauses => run_alarm_pauses().await,
        };
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = match cli::parse(&args) {
        Ok(command) => command,
        Err(why) => {
            eprintln!("fleetlock: {why}\nRun 'fleetlock help' for usage.");
            return ExitCode::from(2);
        }
    };
    logging::init(false);
    if let Command::Lock(request) = &command {
        return lock_command(request).await;
    }
    match run_command(command).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("fleetlock: {why}");
            ExitCode::FAILURE
        }
    }
}

async fn run_lambda() -> ExitCode {
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(err) => {
            tracing::error!(error = %err, "invalid configuration");
            return ExitCode::FAILURE;
        }
    };
    // An in-process store here would give every Lambda instance a semaphore of
    // its own: refuse to start instead.
    let Some(table) = config.table else {
        tracing::error!("FLEETLOCK_TABLE is unset; under Lambda the locks must live in DynamoDB");
        return ExitCode::FAILURE;
    };
    // Behind API Gateway the endpoint is public: no silent default.
    let Some(auth) = config.auth else {
        tracing::error!(
            "neither FLEETLOCK_CLIENTS nor FLEETLOCK_AUTH=disabled is set; \
             a public reboot lock needs client credentials (see 'fleetlock credential')"
        );
        return ExitCode::FAILURE;
    };
    if auth == Auth::Disabled {
        tracing::warn!(
            "FLEETLOCK_AUTH=disabled: anyone who reaches this endpoint can take and release slots"
        );
    }
    let store = match checked_store(&aws::load_config().await, table).await {
        Ok(store) => store,
        Err(why) => {
            tracing::error!(error = %why, "the lock table cannot be used; not starting");
            return ExitCode::FAILURE;
        }
    };
    let service = FleetLock::new(config.groups, store).with_windows(config.windows);
    let function = std::env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_else(|_| "fleetlock".into());
    let api = Api::new(service, auth).with_metrics(EmbeddedMetrics::new(function));
    runtime_stopped(lambda::run(Arc::new(api)).await)
}

/// Slot events: the table's stream to EventBridge. Needs no table, no
/// clients and no group settings: only the bus.
async fn run_slot_events() -> ExitCode {
    let bus = std::env::var("FLEETLOCK_EVENT_BUS")
        .ok()
        .filter(|bus| !bus.trim().is_empty())
        .unwrap_or_else(|| slot_events::DEFAULT_BUS.into());
    tracing::info!(bus, "slot events go to this EventBridge bus");
    let function = std::env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_else(|_| "fleetlock".into());
    let slot_events = Arc::new(SlotEvents::new(EventBridge::new(
        slot_events::client(&aws::load_config().await),
        bus,
    )));
    let result = lambda::run_json(move |batch| {
        let slot_events = Arc::clone(&slot_events);
        let function = function.clone();
        async move {
            let report = slot_events.handle(&batch).await;
            println!("{}", report.metric_line(&function, Timestamp::now()));
            Ok(report.response())
        }
    })
    .await;
    runtime_stopped(result)
}

/// Alarm pauses: CloudWatch alarm state changes and a schedule keep the
/// table's alarm pauses in step with the gating alarms. Needs the table, the
/// gates and the groups; no clients.
async fn run_alarm_pauses() -> ExitCode {
    let setup = async {
        let config = Config::from_env().map_err(|e| e.to_string())?;
        let table = config
            .table
            .ok_or("FLEETLOCK_TABLE is unset; alarm pauses are written to the lock table")?;
        let spec = std::env::var("FLEETLOCK_ALARM_PAUSES").unwrap_or_default();
        let gates =
            AlarmGates::parse(&spec).map_err(|why| format!("FLEETLOCK_ALARM_PAUSES: {why}"))?;
        if gates.is_empty() {
            return Err("FLEETLOCK_ALARM_PAUSES names no alarm: nothing to follow".to_owned());
        }
        let configured: Vec<GroupName> = config
            .groups
            .listed()
            .map(|(name, _)| name.clone())
            .collect();
        // One configuration for both clients.
        let aws = aws::load_config().await;
        let store = checked_store(&aws, table).await?;
        tracing::info!(alarms = ?gates.alarm_names().collect::<Vec<_>>(), "following these alarms");
        Ok::<_, String>(AlarmPauses::new(
            store,
            CloudWatch::new(alarm_pauses::client(&aws)),
            gates,
            configured,
        ))
    };
    let pauses = match setup.await {
        Ok(pauses) => Arc::new(pauses),
        Err(why) => {
            tracing::error!(error = %why, "not starting");
            return ExitCode::FAILURE;
        }
    };
    let result = lambda::run_json(move |event| {
        let pauses = Arc::clone(&pauses);
        async move { pauses.handle(&event).await }
    })
    .await;
    runtime_stopped(result)
}

/// `fleetlock lock` and `unlock`: settings checked first, then the calls,
/// stopped by Ctrl-C or SIGTERM; the exit code says how it ended.
async fn lock_command(request: &client_cli::Request) -> ExitCode {
    let machine_id_file = std::env::var_os("FLEETLOCK_MACHINE_ID_FILE").map_or_else(
        || client_cli::MACHINE_ID_FILE.into(),
        std::path::PathBuf::from,
    );
    let env_url = std::env::var("FLEETLOCK_URL").ok();
    let checked = match client_cli::check(request, env_url, &machine_id_file) {
        Ok(checked) => checked,
        Err(why) => {
            eprintln!("fleetlock: {why}");
            return ExitCode::from(client_cli::Ended::Usage.code());
        }
    };
    if let client_cli::UrlSource::Argument(url) = &request.url
        && url.contains('@')
    {
        eprintln!(
            "fleetlock: warning: a secret in --url is visible in ps and in shell history; \
             prefer FLEETLOCK_URL or --url-file"
        );
    }
    let stop = async {
        let terminate = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut signal) => {
                    signal.recv().await;
                }
                Err(_) => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            () = terminate => {}
        }
    };
    let mut say = |line: &str| eprintln!("fleetlock: {line}");
    let ended = client_cli::run(&checked, request, stop, &mut say).await;
    ExitCode::from(ended.code())
}

/// How the process ends when the Lambda runtime loop returns.
fn runtime_stopped(result: Result<(), lambda_http::Error>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!(error = %err, "lambda runtime stopped");
            ExitCode::FAILURE
        }
    }
}

async fn run_command(command: Command) -> Result<(), String> {
    match command {
        Command::Help => print!("{}", cli::HELP),
        Command::Version => println!("fleetlock {}", env!("CARGO_PKG_VERSION")),
        Command::Serve { listen, limits } => {
            let config = Config::from_env().map_err(|e| e.to_string())?;
            let auth = match config.auth {
                Some(auth) => auth,
                // Open on loopback only: nothing off this machine can reach it.
                None if listen.ip().is_loopback() => Auth::Disabled,
                None => {
                    return Err(format!(
                        "{listen} is reachable from other machines: set FLEETLOCK_CLIENTS \
                         (see 'fleetlock credential') or, on a private network, FLEETLOCK_AUTH=disabled"
                    ));
                }
            };
            match config.table {
                Some(table) => {
                    let store = checked_store(&aws::load_config().await, table).await?;
                    let service = FleetLock::new(config.groups, store).with_windows(config.windows);
                    serve(listen, Api::new(service, auth), limits).await?;
                }
                None => {
                    tracing::info!(
                        "no FLEETLOCK_TABLE: locks live in this process and end with it"
                    );
                    let store = MemoryStore::default();
                    let service = FleetLock::new(config.groups, store).with_windows(config.windows);
                    serve(listen, Api::new(service, auth), limits).await?;
                }
            }
        }
        Command::Credential {
            name,
            groups,
            secret_from_stdin,
        } => {
            if secret_from_stdin {
                let mut secret = String::new();
                std::io::stdin()
                    .read_line(&mut secret)
                    .map_err(|e| format!("cannot read the secret: {e}"))?;
                let secret = secret.trim_end_matches(['\r', '\n']);
                println!("{}", auth::entry_for(&name, &groups, secret)?);
            } else {
                let new = auth::new_credential(&name, &groups)?;
                println!("FLEETLOCK_CLIENTS entry (it holds only a salted hash):");
                println!("  {}", new.entry);
                println!("Zincati base_url for the nodes of group(s) '{groups}':");
                println!("  https://{name}:{}@YOUR-API-HOST/", new.secret);
                println!("The secret is shown once and stored nowhere.");
            }
        }
        Command::Pause { groups, reason, by } => {
            let reason = PauseReason::parse(&reason).map_err(|why| format!("--reason: {why}"))?;
            let by = operator_name(by)?;
            let store = dynamo_store(&aws::load_config().await, required_table("pause")?);
            let since = Timestamp::now();
            for group in targets(&store, &groups).await? {
                let pause = PersonPause {
                    reason: reason.clone(),
                    since,
                    by: by.clone(),
                };
                let decided = store
                    .pause(&group, pause)
                    .await
                    .map_err(|e| e.to_string())?;
                match decided.outcome {
                    Changed::Yes => println!("paused '{group}': no new reboot slots"),
                    Changed::Overtaken => println!(
                        "'{group}' was resumed by someone else while this pause was being \
                         written; nothing changed (pause it again if it should stop)"
                    ),
                    Changed::AlreadySo => println!(
                        "'{group}' was already paused {}; kept as it was",
                        paused_because(&decided.group.pause)
                    ),
                }
            }
        }
        Command::Resume { groups } => {
            let store = dynamo_store(&aws::load_config().await, required_table("resume")?);
            for group in targets(&store, &groups).await? {
                let decided = store.resume(&group).await.map_err(|e| e.to_string())?;
                let verb = match decided.outcome {
                    Changed::Yes => format!("resumed '{group}'"),
                    Changed::AlreadySo => format!("'{group}' was not paused by a person"),
                    Changed::Overtaken => format!(
                        "'{group}' was paused again by someone else while this resume was \
                         being written; nothing changed"
                    ),
                };
                if decided.group.pause.is_paused() {
                    println!(
                        "{verb}; still paused {}",
                        paused_because(&decided.group.pause)
                    );
                } else {
                    println!("{verb}: it grants reboot slots again");
                }
            }
        }
        Command::IamPolicy {
            policy_for,
            table_arn,
            function_arn,
        } => {
            let table = table_arn
                .as_deref()
                .unwrap_or("arn:aws:dynamodb:REGION:ACCOUNT:table/TABLE");
            let function = function_arn
                .as_deref()
                .unwrap_or("arn:aws:lambda:REGION:ACCOUNT:function:FUNCTION");
            let policy = match policy_for {
                iam::PolicyFor::Function => iam::function_policy(table),
                iam::PolicyFor::Operator => iam::operator_policy(table, function),
                iam::PolicyFor::SlotEvents => iam::slot_events_policy(
                    table,
                    "arn:aws:events:REGION:ACCOUNT:event-bus/BUS",
                    "arn:aws:sqs:REGION:ACCOUNT:QUEUE",
                ),
                iam::PolicyFor::AlarmPauses => {
                    iam::alarm_pauses_policy(table, "arn:aws:cloudwatch:REGION:ACCOUNT:alarm:*")
                }
            };
            println!("{policy:#}");
        }
        Command::CreateTable { dry_run: true } => {
            println!("{:#}", table_definition());
        }
        Command::CreateTable { dry_run: false } => {
            let store = dynamo_store(&aws::load_config().await, required_table("create-table")?);
            let created = store.create_table().await.map_err(|e| e.to_string())?;
            let verb = if created {
                "created"
            } else {
                "already exists:"
            };
            println!("table {verb} {} (active)", store.table());
        }
        Command::Status {
            group,
            json,
            function,
            all,
        } => {
            let group = group
                .map(|g| GroupName::parse(&g))
                .transpose()
                .map_err(|e| e.value())?;
            // One configuration for the table and the function's settings.
            let aws = aws::load_config().await;
            let store = dynamo_store(&aws, required_table("status")?);
            let groups = store
                .groups(group.as_ref())
                .await
                .map_err(|e| e.to_string())?;
            let now = Timestamp::now();
            let deployed = deployed_config(&aws, function).await?;
            let deployed = deployed.as_ref();
            let wildcard = store.wildcard_groups().await.map_err(|e| e.to_string())?;
            let wildcard = cli::report::Wildcard {
                counted: wildcard.len(),
                limit: deployed.map(|config| config.groups.wildcard_limit()),
            };
            if json {
                println!("{:#}", cli::report::json(&groups, deployed, now, wildcard));
            } else {
                let idle_shown = (!all).then_some(cli::report::IDLE_SHOWN);
                print!(
                    "{}",
                    cli::report::table(&groups, deployed, now, idle_shown, wildcard)
                );
                match (&group, groups.is_empty()) {
                    (_, false) => {}
                    (None, true) => println!("(no group has been used yet)"),
                    (Some(group), true) => {
                        println!("{}", cli::report::unused_group(group, deployed))
                    }
                }
            }
        }
        // Run by lock_command, before this, for their own exit codes.
        Command::Lock(_) => return Err("lock and unlock run apart from the other commands".into()),
        Command::ConfigCheck => {
            // Only this shell's variables: nothing is asked of AWS.
            let config = Config::from_env().map_err(|e| format!("invalid configuration: {e}"))?;
            // The alarm-pauses function's own setting, when given.
            let gates = std::env::var("FLEETLOCK_ALARM_PAUSES").unwrap_or_default();
            let gates = AlarmGates::parse(&gates)
                .map_err(|why| format!("invalid configuration: FLEETLOCK_ALARM_PAUSES: {why}"))?;
            println!("configuration in this shell: valid");
            print!("{}", cli::report::config_summary(&config));
            let alarms: Vec<&str> = gates.alarm_names().collect();
            if !alarms.is_empty() {
                println!(
                    "alarms that pause groups while in ALARM: {}",
                    alarms.join(", ")
                );
            }
        }
        Command::Forget { group, function } => {
            let group = GroupName::parse(&group).map_err(|e| e.value())?;
            let table = required_table("forget")?;
            let aws = aws::load_config().await;
            let deployed = deployed_config(&aws, function).await?;
            match &deployed {
                Some(config) if config.groups.listed().any(|(name, _)| *name == group) => {
                    return Err(format!(
                        "group '{group}' is named in the function's FLEETLOCK_GROUPS: its next \
                         request would bring it back, without its last release; take it out \
                         of the configuration first"
                    ));
                }
                Some(_) => {}
                None => println!(
                    "(the configuration was not read: pass --function NAME to refuse a group \
                     it names)"
                ),
            }
            let store = dynamo_store(&aws, table);
            match store.forget(&group).await.map_err(|e| e.to_string())? {
                Forgot::Removed { counted } => println!(
                    "forgot group '{group}': its item is removed{}",
                    if counted {
                        ", and it no longer counts toward FLEETLOCK_MAX_WILDCARD_GROUPS"
                    } else {
                        ""
                    }
                ),
                Forgot::Uncounted => println!(
                    "group '{group}' had no item; it no longer counts toward \
                     FLEETLOCK_MAX_WILDCARD_GROUPS"
                ),
                Forgot::NothingStored => {
                    return Err(format!(
                        "group '{group}' is not stored in table '{}': nothing to forget \
                         ('fleetlock status' lists the groups)",
                        store.table()
                    ));
                }
                Forgot::Kept(record) => {
                    let mut why = Vec::new();
                    if !record.holders.is_empty() {
                        let ids: Vec<String> =
                            record.holders.holders().map(|(id, _)| id.shown()).collect();
                        why.push(format!(
                            "it holds {} slot(s) ({}): release them first",
                            ids.len(),
                            ids.join(", ")
                        ));
                    }
                    if record.pause.is_paused() {
                        why.push(format!(
                            "it is paused {}: resume it first (an alarm's pause clears when \
                             the alarm does)",
                            paused_because(&record.pause)
                        ));
                    }
                    return Err(format!(
                        "group '{group}' was kept: {}; nothing changed",
                        why.join("; and ")
                    ));
                }
            }
        }
        Command::Release { group, id } => {
            let group = GroupName::parse(&group).map_err(|e| e.value())?;
            // As `status` shows it: an invisible character escaped.
            let id = NodeId::from_shown(&id).map_err(|e| e.value())?;
            let store = dynamo_store(&aws::load_config().await, required_table("release")?);
            let decided = store
                .release(&group, &id, Timestamp::now())
                .await
                .map_err(|e| e.to_string())?;
            let left = decided.group.holders.len();
            let id_shown = id.shown();
            if decided.outcome == Release::Released {
                println!("released '{id_shown}' from group '{group}' ({left} holder(s) left)");
                return Ok(());
            }
            // Nothing released: most often the wrong group. Say where it holds.
            let held_in: Vec<String> = store
                .groups(None)
                .await
                .map_err(|e| e.to_string())?
                .into_iter()
                .filter(|(_, record)| record.holders.holds(&id))
                .map(|(name, _)| name.to_string())
                .collect();
            if held_in.is_empty() {
                println!(
                    "'{id_shown}' held no slot in group '{group}' and holds none in any group; \
                     nothing changed"
                );
            } else {
                return Err(format!(
                    "'{id_shown}' holds no slot in group '{group}' but holds one in: {}; nothing \
                     changed (run: fleetlock release --group {} --id {})",
                    held_in.join(", "),
                    held_in[0],
                    shell_word(&id_shown)
                ));
            }
        }
    }
    Ok(())
}

/// `text` as one shell word: as it is when plain, else in single quotes.
fn shell_word(text: &str) -> String {
    let plain = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '@'));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// The groups a pause or resume names, or every group stored for `--all`.
async fn targets(store: &DynamoStore, targets: &Targets) -> Result<Vec<GroupName>, String> {
    match targets {
        Targets::Named(names) => names
            .iter()
            .map(|name| GroupName::parse(name).map_err(|e| e.value()))
            .collect(),
        Targets::All => {
            let stored: Vec<GroupName> = store
                .groups(None)
                .await
                .map_err(|e| e.to_string())?
                .into_iter()
                .map(|(name, _)| name)
                .collect();
            // Said every time: `--all` cannot see a group that has no item.
            println!(
                "--all: {} group(s) stored in the table; a group covered by '*=N' that was never \
                 used has no item and is not covered (name it with --group)",
                stored.len()
            );
            Ok(stored)
        }
    }
}

/// Who pauses: `--by`, else the login name; kept with the pause.
fn operator_name(by: Option<String>) -> Result<String, String> {
    let name = by
        .or_else(|| std::env::var("USER").ok())
        .or_else(|| std::env::var("LOGNAME").ok())
        .unwrap_or_else(|| "an operator".into());
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 64 || name.chars().any(char::is_control) {
        return Err("--by: 1 to 64 printable characters".into());
    }
    Ok(name.to_owned())
}

/// The configuration the function runs with: its environment through the
/// Lambda API (`--function`, or `FLEETLOCK_FUNCTION`), else the same variables
/// in this shell when any is set, else unknown.
async fn deployed_config(
    aws: &SdkConfig,
    function: Option<String>,
) -> Result<Option<Config>, String> {
    let function = function.or_else(|| std::env::var("FLEETLOCK_FUNCTION").ok());
    if let Some(function) = function.filter(|f| !f.trim().is_empty()) {
        let variables = deployed::function_environment(aws, &function).await?;
        let config = deployed::config_of(&variables)
            .map_err(|e| format!("function '{function}' has an invalid configuration: {e}"))?;
        return Ok(Some(config));
    }
    let in_shell = [
        "FLEETLOCK_GROUPS",
        "FLEETLOCK_SETTLE",
        "FLEETLOCK_WINDOWS",
        "FLEETLOCK_TIME_ZONE",
    ]
    .iter()
    .any(|name| std::env::var_os(name).is_some());
    if !in_shell {
        return Ok(None);
    }
    Ok(Some(Config::from_env().map_err(|e| e.to_string())?))
}

fn required_table(command: &str) -> Result<String, String> {
    let config = Config::from_env().map_err(|e| e.to_string())?;
    config.table.ok_or_else(|| {
        format!(
            "{command} works on the DynamoDB table named by FLEETLOCK_TABLE, which is unset \
             (e.g. FLEETLOCK_TABLE=fleetlock AWS_REGION=eu-west-1 fleetlock {command})"
        )
    })
}

/// The store of a serving process, after one check of its table: a missing
/// table or a wrong key stops the start; an unreachable DynamoDB does not (it
/// is an outage, answered `store_unavailable` until it ends, with no restart).
async fn checked_store(aws: &SdkConfig, table: String) -> Result<DynamoStore, String> {
    let store = dynamo_store(aws, table);
    match store.check_table().await {
        Ok(()) => Ok(store),
        Err(TableProblem::Unreachable(why)) => {
            tracing::warn!(error = %why, "starting anyway; calls answer 503 until DynamoDB answers");
            Ok(store)
        }
        Err(TableProblem::Unusable(why)) => Err(why),
    }
}

fn dynamo_store(aws: &SdkConfig, table: String) -> DynamoStore {
    DynamoStore::new(dynamodb::client(aws), table)
}

async fn serve<S: LockStore>(
    listen: std::net::SocketAddr,
    api: Api<S>,
    limits: server::Limits,
) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    // Printed on stdout so scripts and tests can learn a port chosen by the OS.
    // Whoever reads it may close the pipe after the first line: the lines
    // after it must not stop the server.
    use std::io::Write as _;
    let mut stdout = std::io::stdout();
    let _ = writeln!(stdout, "fleetlock listening on http://{addr}/");
    if api.auth() == &Auth::Disabled {
        let _ = writeln!(
            stdout,
            "no client authentication: anyone who can reach {addr} may take and release \
             reboot slots"
        );
    }
    let _ = writeln!(
        stdout,
        "limits: headers within {}, body within {}, at most {} connections at once",
        fleetlock::config::format_duration(limits.header_timeout),
        fleetlock::config::format_duration(limits.body_timeout),
        limits.max_connections
    );
    let _ = stdout.flush();
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    server::serve(listener, Arc::new(api), limits, shutdown)
        .await
        .map_err(|e| e.to_string())
}
