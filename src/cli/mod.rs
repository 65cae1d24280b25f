//! The command line, for use outside Lambda: [`args`] parses, [`commands`]
//! carries each command out, [`report`] renders what they print, [`lock`] is
//! the client side (`lock`, `unlock`). [`run`] reads each command's settings
//! and builds its clients, in that order: a command checks what it was given
//! before it touches AWS.

pub mod args;
pub mod check;
pub mod commands;
pub mod deploy_inputs;
pub mod lock;
pub mod report;

use std::fmt;
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use aws_config::SdkConfig;

pub use args::{Command, ConfigSource, HELP, Targets, USAGE_EXIT, parse};

use crate::aws::{self, function_config};
use crate::config::{self, Config, ConfigError, LockSettings, process_env};
use crate::domain::auth::Auth;
use crate::domain::input::{NodeId, PauseReason};
use crate::domain::lock::Timestamp;
use crate::domain::service::FleetLock;
use crate::domain::store::{LockStore, StoreError};
use crate::http::{Api, server};
use crate::logging;
use crate::store::dynamodb::DynamoStore;
use crate::store::memory::MemoryStore;

/// Why a command failed (exit code 1); each is one line for a person.
#[derive(Debug)]
pub enum Failure {
    /// A setting this command reads is missing or wrong; nothing was asked
    /// of AWS.
    Config(ConfigError),
    /// `config check` found the settings wrong: every error, each a
    /// sentence; `source` names a deploy file when the settings came from one.
    InvalidConfiguration {
        source: Option<String>,
        errors: Vec<String>,
    },
    /// An argument's value is not valid (a group name, an id, a reason).
    Input(String),
    /// The table could not be read or written.
    Store(StoreError),
    /// Another AWS call failed (the deployed function's configuration).
    Aws(String),
    /// The command was refused, and the sentence says why and what to do.
    Refused(String),
    /// The local server could not serve.
    Serve(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Config(err) => write!(f, "{err}"),
            Failure::InvalidConfiguration { source, errors } => {
                let source = source
                    .as_ref()
                    .map_or(String::new(), |s| format!(" in {s}"));
                match errors.as_slice() {
                    [one] => write!(f, "invalid configuration{source}: {one}"),
                    many => {
                        write!(f, "invalid configuration{source}, {} errors:", many.len())?;
                        many.iter().try_for_each(|err| write!(f, "\n  {err}"))
                    }
                }
            }
            Failure::Store(err) => write!(f, "{err}"),
            Failure::Input(why)
            | Failure::Aws(why)
            | Failure::Refused(why)
            | Failure::Serve(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for Failure {}

impl From<StoreError> for Failure {
    fn from(err: StoreError) -> Self {
        Failure::Store(err)
    }
}

impl From<ConfigError> for Failure {
    fn from(err: ConfigError) -> Self {
        Failure::Config(err)
    }
}

/// Runs the command the arguments name; the exit code says how it ended.
pub async fn run(args: Vec<String>) -> ExitCode {
    if let Some(help) = args::command_help(&args) {
        print!("{help}");
        return ExitCode::SUCCESS;
    }
    let command = match parse(&args) {
        Ok(command) => command,
        Err(why) => {
            eprintln!("fleetlock: {why}\nRun 'fleetlock help' for usage.");
            return ExitCode::from(USAGE_EXIT);
        }
    };
    logging::init(false);
    if let Command::Lock(request) = &command {
        return lock_command(request).await;
    }
    if let Command::Check(request) = &command {
        return check_command(request).await;
    }
    match run_command(command).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("fleetlock: {why}");
            ExitCode::FAILURE
        }
    }
}

async fn run_command(command: Command) -> Result<(), Failure> {
    let out = &mut std::io::stdout();
    match command {
        Command::Help => print!("{HELP}"),
        Command::Version => println!("fleetlock {}", env!("CARGO_PKG_VERSION")),
        Command::Completions(shell) => {
            clap_complete::generate(shell, &mut args::definition(), "fleetlock", out);
        }
        Command::Serve { listen, limits } => {
            let config = Config::from_env()?;
            let auth = match config.auth {
                Some(auth) => auth,
                // Open on loopback only: nothing off this machine can reach it.
                None if listen.ip().is_loopback() => Auth::Disabled,
                None => {
                    return Err(Failure::Refused(format!(
                        "{listen} is reachable from other machines: set FLEETLOCK_CLIENTS \
                         (see 'fleetlock credential') or, on a private network, FLEETLOCK_AUTH=disabled"
                    )));
                }
            };
            // Nodes without `[identity] group` in Zincati's config ask for
            // `default`: say it once, at start, rather than in every refusal.
            if !config.groups.covers_default() {
                tracing::warn!(
                    groups = %config::process_env("FLEETLOCK_GROUPS").unwrap_or_default(),
                    "no 'default' group is configured: nodes without [identity] group in \
                     Zincati's config will be refused (unknown_group)"
                );
            }
            match config.table {
                Some(table) => {
                    let aws = command_aws().await?;
                    tracing::info!(
                        table,
                        endpoint = aws.endpoint_url().unwrap_or("the region's DynamoDB"),
                        region = aws.region().map(|r| r.to_string()),
                        "locks live in DynamoDB"
                    );
                    let store = crate::entry::checked_store(&aws, table)
                        .await
                        .map_err(Failure::Refused)?;
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
            url,
        } => {
            let secret = if secret_from_stdin {
                let mut secret = String::new();
                std::io::stdin()
                    .read_line(&mut secret)
                    .map_err(|e| Failure::Input(format!("cannot read the secret: {e}")))?;
                Some(secret.trim_end_matches(['\r', '\n']).to_owned())
            } else {
                None
            };
            commands::credential(&name, &groups, secret.as_deref(), url.as_deref(), out)?;
        }
        Command::Pause {
            groups,
            reason,
            by,
            function,
            create,
        } => {
            let reason = PauseReason::parse(&reason)
                .map_err(|why| Failure::Input(format!("--reason: {why}")))?;
            let by = config::operator_name(process_env, by).map_err(Failure::Input)?;
            let table = config::command_table(process_env, "pause")?;
            let aws = command_aws().await?;
            let store = dynamo_store(&aws, table);
            let targets = commands::targets(&store, &groups, out).await?;
            if !create && matches!(groups, Targets::Named(_)) {
                let deployed = deployed_config(&aws, function).await?;
                let known = commands::Known::new(&store, store.table(), deployed.as_ref());
                known.refuse_typos(&targets, commands::Act::Pause).await?;
            }
            commands::pause(&store, &targets, &reason, &by, Timestamp::now(), out).await?;
        }
        Command::Resume { groups, function } => {
            let table = config::command_table(process_env, "resume")?;
            let aws = command_aws().await?;
            let store = dynamo_store(&aws, table);
            let targets = commands::targets(&store, &groups, out).await?;
            if matches!(groups, Targets::Named(_)) {
                let deployed = deployed_config(&aws, function).await?;
                let known = commands::Known::new(&store, store.table(), deployed.as_ref());
                known.refuse_typos(&targets, commands::Act::Resume).await?;
            }
            commands::resume(&store, &targets, out).await?;
        }
        Command::Exclude {
            group,
            id,
            reason,
            by,
            function,
        } => {
            let node = NodeId::from_shown(&id).map_err(|e| Failure::Input(e.value()))?;
            let reason = PauseReason::parse(&reason)
                .map_err(|why| Failure::Input(format!("--reason: {why}")))?;
            let by = config::operator_name(process_env, by).map_err(Failure::Input)?;
            let (group, store) =
                known_group(&group, function, commands::Act::Exclude, "exclude").await?;
            let exclusion = crate::domain::lock::Exclusion {
                reason,
                since: Timestamp::now(),
                by,
            };
            commands::exclude(&store, &group, &node, exclusion, out).await?;
        }
        Command::Include {
            group,
            id,
            function,
        } => {
            let node = NodeId::from_shown(&id).map_err(|e| Failure::Input(e.value()))?;
            let (group, store) =
                known_group(&group, function, commands::Act::Include, "include").await?;
            commands::include(&store, &group, &node, out).await?;
        }
        Command::IamPolicy {
            policy_for,
            table_arn,
            function_arn,
        } => commands::iam_policy(
            policy_for,
            table_arn.as_deref(),
            function_arn.as_deref(),
            out,
        ),
        Command::CreateTable { dry_run: true } => commands::table_definition(out),
        Command::CreateTable { dry_run: false } => {
            let table = config::command_table(process_env, "create-table")?;
            let store = dynamo_store(&command_aws().await?, table);
            commands::create_table(&store, out).await?;
        }
        Command::Status {
            group,
            json,
            function,
            all,
            hosts,
        } => {
            let group = group.as_deref().map(commands::group_named).transpose()?;
            let table = config::command_table(process_env, "status")?;
            let hosts = HostsAsked::read(hosts)?;
            // One configuration for the table and the function's settings.
            let aws = command_aws().await?;
            let store = dynamo_store(&aws, table);
            let deployed = deployed_config(&aws, function).await?;
            let lookup = hosts.map(|asked| asked.lookup(&aws));
            let view = commands::StatusView {
                json,
                all,
                hosts: lookup.as_ref(),
            };
            commands::status(
                &store,
                group.as_ref(),
                deployed.as_ref(),
                Timestamp::now(),
                view,
                out,
            )
            .await?;
        }
        // Run by lock_command and check_command, before this, for their own
        // exit codes.
        Command::Lock(_) | Command::Check(_) => {
            return Err(Failure::Refused(
                "lock, unlock and check run apart from the other commands".into(),
            ));
        }
        Command::Hosts { ids, hosts, json } => {
            let Some(asked) = HostsAsked::read(hosts)? else {
                return Err(Failure::Input(
                    "hosts needs --hosts tags|FILE (or FLEETLOCK_HOSTS)".into(),
                ));
            };
            // AWS only for the tags.
            let lookup = match asked {
                HostsAsked::File(map) => commands::HostLookup::File(map),
                HostsAsked::Tags => asked.lookup(&command_aws().await?),
            };
            commands::hosts(&ids, &lookup, json, out).await?;
        }
        Command::Id { machine, app } => {
            let settings = LockSettings::from_vars(process_env);
            let (text, from) = match machine {
                args::MachineIdSource::Given(hex) => (hex, "--machine-id".to_owned()),
                args::MachineIdSource::File(file) => {
                    (read_machine_id(&file)?, file.display().to_string())
                }
                args::MachineIdSource::Default => (
                    read_machine_id(&settings.machine_id_file)?,
                    settings.machine_id_file.display().to_string(),
                ),
            };
            let machine = crate::client::parse_machine_id(&text)
                .map_err(|why| Failure::Input(format!("{from}: {why}")))?;
            let id = match app {
                None => crate::client::zincati_id(&machine),
                Some(app) => crate::client::job_id(&machine, &app),
            };
            let _ = writeln!(out, "{id}");
        }
        Command::ConfigCheck { source, from, env } => {
            let from = from.unwrap_or_else(Timestamp::now);
            let read = |file: &std::path::Path| {
                std::fs::read_to_string(file)
                    .map_err(|e| Failure::Input(format!("{}: {e}", file.display())))
            };
            let (label, inputs) = match source {
                ConfigSource::Shell => {
                    return commands::config_check(process_env, None, from, env, out);
                }
                ConfigSource::Samconfig { file, config_env } => {
                    let name = file.display().to_string();
                    let inputs = deploy_inputs::from_samconfig(&read(&file)?, &config_env, &name)
                        .map_err(Failure::Input)?;
                    (format!("{name} [{config_env}]"), inputs)
                }
                ConfigSource::Tfvars(file) => {
                    let name = file.display().to_string();
                    let inputs =
                        deploy_inputs::from_tfvars(&read(&file)?, &name).map_err(Failure::Input)?;
                    (name, inputs)
                }
            };
            let var = |name: &str| inputs.vars.get(name).cloned();
            commands::config_check(var, Some((&label, &inputs)), from, env, out)?;
        }
        Command::Windows {
            group,
            from,
            next,
            function,
        } => {
            let group = group.as_deref().map(commands::group_named).transpose()?;
            // AWS only for a deployed function's windows.
            let config = match config::deployed_function(process_env, function) {
                Some(function) => Some(function_settings(&command_aws().await?, &function).await?),
                None => shell_rules()?,
            };
            let Some(config) = config else {
                return Err(Failure::Config(ConfigError::Missing(
                    "windows lists the windows of FLEETLOCK_WINDOWS (with FLEETLOCK_GROUPS and \
                     FLEETLOCK_TIME_ZONE) in this shell, or of a deployed function \
                     (--function NAME); neither is set"
                        .into(),
                )));
            };
            let from = from.unwrap_or_else(Timestamp::now);
            commands::windows(&config.windows, group.as_ref(), from, next, out);
        }
        Command::Forget { group, function } => {
            let group = commands::group_named(&group)?;
            let table = config::command_table(process_env, "forget")?;
            let aws = command_aws().await?;
            let deployed = deployed_config(&aws, function).await?;
            let store = dynamo_store(&aws, table);
            commands::forget(&store, store.table(), &group, deployed.as_ref(), out).await?;
        }
        Command::Release { group, id } => {
            let (group, id, store) = stored_node(&group, &id, "release").await?;
            commands::release(&store, &group, &id, Timestamp::now(), out).await?;
        }
        Command::Drained {
            group,
            id,
            reserved_at,
        } => {
            let (group, id, store) = stored_node(&group, &id, "drained").await?;
            let confirmation = crate::domain::drain::Confirmation {
                group,
                id,
                reserved_at,
            };
            commands::drained(&store, &confirmation, Timestamp::now(), out).await?;
        }
    }
    Ok(())
}

/// The group and the node a command on a slot names (the id as `status`
/// shows it: an invisible character escaped), and the table: the names and
/// the table checked first, then a group that is not stored refused as a
/// likely typo (only a stored group holds a slot).
async fn stored_node(
    group: &str,
    id: &str,
    command: &str,
) -> Result<(crate::domain::input::GroupName, NodeId, DynamoStore), Failure> {
    let group = commands::group_named(group)?;
    let id = NodeId::from_shown(id).map_err(|e| Failure::Input(e.value()))?;
    let table = config::command_table(process_env, command)?;
    let store = dynamo_store(&command_aws().await?, table);
    commands::Known::new(&store, store.table(), None)
        .refuse_typos(std::slice::from_ref(&group), commands::Act::Release)
        .await?;
    Ok((group, id, store))
}

/// The group a command on one node names, and the table it is stored in:
/// the name and the table checked first, then a group neither stored nor
/// configured refused as a likely typo.
async fn known_group(
    group: &str,
    function: Option<String>,
    act: commands::Act,
    command: &str,
) -> Result<(crate::domain::input::GroupName, DynamoStore), Failure> {
    let group = commands::group_named(group)?;
    let table = config::command_table(process_env, command)?;
    let aws = command_aws().await?;
    let store = dynamo_store(&aws, table);
    let deployed = deployed_config(&aws, function).await?;
    commands::Known::new(&store, store.table(), deployed.as_ref())
        .refuse_typos(std::slice::from_ref(&group), act)
        .await?;
    Ok((group, store))
}

/// What `--hosts` (or `FLEETLOCK_HOSTS`) asks for, checked before anything
/// is asked of AWS: a host file is read now; tags need the AWS configuration.
enum HostsAsked {
    File(crate::domain::hosts::HostMap),
    Tags,
}

impl HostsAsked {
    fn read(given: Option<String>) -> Result<Option<Self>, Failure> {
        Ok(match config::host_source(process_env, given) {
            None => None,
            Some(config::HostSource::Tags) => Some(HostsAsked::Tags),
            Some(config::HostSource::File(path)) => {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| Failure::Input(format!("--hosts {}: {e}", path.display())))?;
                let map = crate::domain::hosts::HostMap::parse(&text)
                    .map_err(|why| Failure::Input(format!("--hosts {}: {why}", path.display())))?;
                Some(HostsAsked::File(map))
            }
        })
    }

    fn lookup(self, aws: &SdkConfig) -> commands::HostLookup {
        match self {
            HostsAsked::File(map) => commands::HostLookup::File(map),
            HostsAsked::Tags => commands::HostLookup::Tags(aws::tagging_client(aws)),
        }
    }
}

fn read_machine_id(file: &std::path::Path) -> Result<String, Failure> {
    std::fs::read_to_string(file).map_err(|e| Failure::Input(format!("{}: {e}", file.display())))
}

/// `fleetlock lock` and `unlock`: settings checked first, then the calls,
/// stopped by Ctrl-C or SIGTERM; the exit code says how it ended.
async fn lock_command(request: &lock::Request) -> ExitCode {
    let settings = LockSettings::from_vars(process_env);
    let checked = match lock::check(request, &settings) {
        Ok(checked) => checked,
        Err(why) => {
            eprintln!("fleetlock: {why}");
            return ExitCode::from(lock::Ended::Usage.code());
        }
    };
    if let lock::UrlSource::Argument(url) = &request.url
        && url.contains('@')
    {
        eprintln!(
            "fleetlock: warning: a secret in --url is visible in ps and in shell history; \
             prefer FLEETLOCK_URL or --url-file"
        );
    }
    let mut say = |line: &str| eprintln!("fleetlock: {line}");
    let ended = lock::run(&checked, request, stop_signal(), &mut say).await;
    ExitCode::from(ended.code())
}

/// Completes at Ctrl-C or SIGTERM.
async fn stop_signal() {
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
}

/// `fleetlock check`: the URL checked first, then the cases, stopped by
/// Ctrl-C or SIGTERM; whatever ends it, the slots it took are given back.
async fn check_command(request: &args::CheckRequest) -> ExitCode {
    let settings = LockSettings::from_vars(process_env);
    let url = match lock::url_given(&request.url, &settings) {
        Ok(url) => url,
        Err(why) => {
            eprintln!("fleetlock: {why}");
            return ExitCode::from(USAGE_EXIT);
        }
    };
    let Some(url) = url.filter(|u| !u.trim().is_empty()) else {
        eprintln!(
            "fleetlock: check needs the server's URL: give it as URL, in FLEETLOCK_URL or with \
             --url-file"
        );
        return ExitCode::from(USAGE_EXIT);
    };
    if let Err(err) = crate::domain::input::GroupName::parse(&request.group) {
        eprintln!("fleetlock: --group: {}", err.value());
        return ExitCode::from(USAGE_EXIT);
    }
    let server = match crate::client::Lock::new(&url) {
        Ok(server) => server,
        Err(err) => {
            eprintln!("fleetlock: {err}");
            return ExitCode::from(USAGE_EXIT);
        }
    };
    if matches!(request.url, lock::UrlSource::Argument(_)) && url.contains('@') {
        eprintln!(
            "fleetlock: warning: a secret in the URL argument is visible in ps and in shell \
             history; prefer FLEETLOCK_URL or --url-file"
        );
    }
    let shown = server.shown();
    let run = check::Check::new(server, &request.group, request.slots, &check::nonce());
    let outcome = tokio::select! {
        outcome = run.run() => outcome,
        () = stop_signal() => Err(check::Stop::Signal),
    };
    let left = run.release_all().await;
    let report = check::Report {
        cases: run.cases(),
        stopped: outcome.as_ref().err().map(ToString::to_string),
        left,
    };
    if request.json {
        println!(
            "{}",
            report.json(&shown, &request.group, request.slots, request.strict)
        );
    } else {
        print!("{}", report.text(&request.group, request.strict));
    }
    if matches!(outcome, Err(check::Stop::Unreachable(_))) {
        ExitCode::from(3)
    } else if report.failed(request.strict) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The configuration the function runs with: its environment through the
/// Lambda API (`--function`, or `FLEETLOCK_FUNCTION`), else the same variables
/// in this shell when any is set, else unknown.
async fn deployed_config(
    aws: &SdkConfig,
    function: Option<String>,
) -> Result<Option<Config>, Failure> {
    match config::deployed_function(process_env, function) {
        Some(function) => function_settings(aws, &function).await.map(Some),
        None => shell_rules(),
    }
}

/// A deployed function's configuration, read through the Lambda API.
async fn function_settings(aws: &SdkConfig, function: &str) -> Result<Config, Failure> {
    let client = aws::lambda_client(aws);
    let variables = function_config::function_environment(&client, function)
        .await
        .map_err(Failure::Aws)?;
    function_config::config_of(&variables).map_err(|e| {
        Failure::Refused(format!(
            "function '{function}' has an invalid configuration: {e}"
        ))
    })
}

/// The rules of this shell's variables, when any is set.
fn shell_rules() -> Result<Option<Config>, Failure> {
    if !config::rules_given(process_env) {
        return Ok(None);
    }
    Ok(Some(Config::from_env()?))
}

/// The AWS configuration of a command, once its own settings are checked.
async fn command_aws() -> Result<SdkConfig, Failure> {
    aws::load_command_config()
        .await
        .map_err(|why| Failure::Config(ConfigError::Missing(why)))
}

fn dynamo_store(aws: &SdkConfig, table: String) -> DynamoStore {
    DynamoStore::new(aws::dynamodb_client(aws), table)
}

async fn serve<S: LockStore>(
    listen: std::net::SocketAddr,
    api: Api<S>,
    limits: server::Limits,
) -> Result<(), Failure> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| Failure::Serve(format!("cannot listen on {listen}: {e}")))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Failure::Serve(e.to_string()))?;
    // Printed on stdout so scripts and tests can learn a port chosen by the OS.
    // Whoever reads it may close the pipe after the first line: the lines
    // after it must not stop the server.
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
        crate::domain::groups::format_duration(limits.header_timeout),
        crate::domain::groups::format_duration(limits.body_timeout),
        limits.max_connections
    );
    let _ = stdout.flush();
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    server::serve(listener, Arc::new(api), limits, shutdown)
        .await
        .map_err(|e| Failure::Serve(e.to_string()))
}
