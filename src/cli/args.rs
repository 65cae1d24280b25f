//! The command line's arguments, on clap: parsed into a [`Command`] whose
//! values are checked, so that each command gets only settings it can use.
//! A usage mistake is told in this program's words (the same sentences as
//! before clap) and exits with [`USAGE_EXIT`].

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Args, CommandFactory, Parser, Subcommand};

use crate::aws::iam::PolicyFor;
use crate::cli::lock::{DEFAULT_APP, Identity, Request, UrlSource};
use crate::client::Call;
use crate::domain::groups::parse_duration;
use crate::http::server::Limits;

pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// The exit code of every usage mistake (and of `lock`/`unlock`'s bad input).
pub const USAGE_EXIT: u8 = 2;

pub const HELP: &str = "\
fleetlock: a FleetLock server for Zincati, the update agent of Fedora CoreOS.

Under the AWS Lambda runtime it serves API Gateway and Function URL events.
Elsewhere:

USAGE:
    fleetlock serve [--listen ADDR] [--header-timeout D] [--body-timeout D] [--max-connections N]
                                           serve FleetLock over HTTP (default 127.0.0.1:8080);
                                           headers and body each within 10s (also the idle
                                           keep-alive time), at most 512 connections at once
    fleetlock create-table [--dry-run]     create FLEETLOCK_TABLE and wait until it is active
                                           (--dry-run: print the table definition only)
    fleetlock status [--group G] [--json] [--function NAME] [--all] [--hosts tags|FILE]
                                           show who holds a slot, since when, and each group's
                                           pause, settle time and windows (read from the
                                           deployed function's configuration with --function);
                                           past 20 idle groups, the rest are counted (--all lists them);
                                           --hosts: each holder's host, from the instances' tags
                                           or a file of 'ID HOST' lines
    fleetlock hosts ID... [--hosts tags|FILE] [--json]
                                           the host behind each id, as status shows them
    fleetlock release --group G --id ID    release a slot by hand (ID as status shows it)
    fleetlock drained --group G --id ID [--reserved-at TIME]
                                           confirm that a node waiting for its drain was drained:
                                           its reserved slot becomes its own, and it reboots at
                                           its next request (--reserved-at: only the reservation
                                           made then, as status and the event say it)
    fleetlock forget --group G [--function NAME]
                                           remove a group that holds nothing, is not paused and
                                           is not named in the configuration
    fleetlock pause (--group G ... | --all) --reason TEXT [--by NAME] [--function NAME] [--create]
                                           stop new reboots in these groups at once
                                           (holders keep their slots; --by defaults to $USER);
                                           a group neither stored nor configured is refused as
                                           a likely typo (--create pauses it all the same)
    fleetlock resume (--group G ... | --all) [--function NAME]
                                           clear a person's pause (alarms' pauses stay)
    fleetlock exclude --group G --id ID --reason TEXT [--by NAME] [--function NAME]
                                           keep one node out of the rollout: it takes no new slot
                                           (a slot it holds stays its own) while the rest of the
                                           group goes on; at most 10 nodes a group
    fleetlock include --group G --id ID [--function NAME]
                                           let an excluded node take reboot slots again
    fleetlock credential --name N --groups G [--secret-stdin] [--url BASE_URL]
                                           make a client credential: a random secret for
                                           Zincati's base_url and its FLEETLOCK_CLIENTS entry
                                           (with --url, the deployment's BaseUrl: the whole
                                           Zincati drop-in)
    fleetlock iam-policy [--for operator|function|slot-events|alarm-pauses|drained|drain-hook] [--table-arn ARN] [--function-arn ARN]
                                           print the IAM policy the people on call (or one of
                                           the functions, or a drain hook: --function-arn is the
                                           drained function) need
    fleetlock lock --group G [--id ID | --app NAME] [--wait [--timeout D]] [--url-file F]
                                           take a slot of group G for a job, as Zincati takes one
                                           (the URL from FLEETLOCK_URL or --url-file; --url URL
                                           also works but shows the secret in ps and shell history)
    fleetlock unlock --group G [--id ID | --app NAME] [--wait [--timeout D]] [--url-file F]
                                           give the job's slot back; exit codes of both: 0 done,
                                           1 refused (or --wait timed out, or stopped), 2 bad input
                                           or a 4xx asking again cannot mend, 3 unreachable or 5xx
    fleetlock check [URL | --url-file F] [--group G] [--slots N] [--strict] [--json]
                                           check a FleetLock server as Zincati calls it (the URL
                                           as base_url, default FLEETLOCK_URL), in a group kept
                                           for it (default fleetlock-check, 2 slots); gives back
                                           every slot it took; exit codes: 0 conforms, 1 does not
                                           (or stopped), 2 bad input, 3 unreachable
    fleetlock id [--machine-id HEX | --machine-id-file F] [--app NAME]
                                           the id Zincati sends for a machine (status and the
                                           logs show it): systemd's app-specific id of its
                                           machine id (with --app, the id of lock --app NAME)
    fleetlock windows [--group G] [--from TIME] [--next N] [--function NAME]
                                           the next openings and closings of the maintenance
                                           windows (this shell's or the deployed function's),
                                           in UTC and the zone's time, DST weeks included
    fleetlock config check [--samconfig FILE [--config-env ENV] | --tfvars FILE] [--from TIME] [--env]
                                           check the FLEETLOCK_* settings in this shell (or those
                                           a samconfig.toml or a tfvars file would deploy) as the
                                           function reads them; print every error, or what each
                                           group gets and every bound (--env: the variables)
    fleetlock completions SHELL            print completions for bash, zsh, fish, elvish or
                                           powershell (e.g. fleetlock completions bash >
                                           /etc/bash_completion.d/fleetlock)
    fleetlock help [COMMAND] | COMMAND --help | --version

ENVIRONMENT:
    FLEETLOCK_GROUPS  slots per group, e.g. 'default=1,workers=3,*=1' (default: default=1)
    FLEETLOCK_SETTLE  settle time after each release, per group: 'workers=10m,*=2m' (default: none)
    FLEETLOCK_LEASE   per group, from 30m to 168h: past it, a full group's next asker takes the
                      oldest slot, e.g. 'workers=6h' (default: none, held until given back)
    FLEETLOCK_DRAIN   per group, a drain gate: a drain timeout from 1m to 24h, then hold (default)
                      or grant: 'workers=15m,db=30m:grant' (default: none, granted at once)
    FLEETLOCK_MAX_WILDCARD_GROUPS  how many groups only '*' covers may come into existence
                      (default: 100, at most 2000); past it a new one is refused (too_many_groups)
    FLEETLOCK_WINDOWS maintenance windows per group, in Zincati's words, ';'-separated:
                      'workers: days=Sat,Sun start_time=22:00 length_minutes=120' (default: always open)
    FLEETLOCK_TIME_ZONE  the windows' zone: UTC (default) or an IANA name; never 'localtime'
    FLEETLOCK_TABLE   DynamoDB table; unset, `serve` keeps locks in memory
    FLEETLOCK_FUNCTION  the deployed function whose configuration status, forget, pause, resume
                      and windows read (as --function)
    FLEETLOCK_EVENT_BUS the EventBridge bus of the slot-events entry point (default: default)
    FLEETLOCK_ALARM_PAUSES  the alarm-pauses entry point: alarms and the groups each pauses while
                      in ALARM, ';'-separated: 'api-5xx=*;db-latency=workers,db'
    FLEETLOCK_METRICS_SERVICE  the drained entry point's sweep: the API function whose
                      DrainsOverdue metric it feeds (needed with FLEETLOCK_DRAIN)
    FLEETLOCK_HOSTS   status and hosts: 'tags' or a host file, as --hosts
    FLEETLOCK_URL     lock/unlock: the server, as Zincati's base_url: https://NAME:SECRET@host/
    FLEETLOCK_MACHINE_ID_FILE  lock/unlock --app: the machine id (default: /etc/machine-id)
    FLEETLOCK_CLIENTS who may call: 'NAME:GROUPS:SALT:SHA256' entries from `fleetlock credential`
    FLEETLOCK_AUTH    'required' (with FLEETLOCK_CLIENTS) or 'disabled' (private networks only);
                      unset, Lambda refuses to start without clients and `serve` is open on loopback only
    AWS_REGION, AWS_ENDPOINT_URL, AWS_PROFILE, ...  the standard AWS configuration
    RUST_LOG          log filter (default: info)
";

/// A command, parsed and checked.
#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    Help,
    Version,
    Serve {
        listen: SocketAddr,
        limits: Limits,
    },
    CreateTable {
        dry_run: bool,
    },
    Status {
        group: Option<String>,
        json: bool,
        function: Option<String>,
        /// Every group, the idle ones too.
        all: bool,
        /// Where the holders' hosts come from (`--hosts`).
        hosts: Option<String>,
    },
    /// `hosts`: the hosts behind these ids.
    Hosts {
        ids: Vec<String>,
        hosts: Option<String>,
        json: bool,
    },
    Release {
        group: String,
        id: String,
    },
    Drained {
        group: String,
        id: String,
        reserved_at: Option<crate::domain::lock::Timestamp>,
    },
    Forget {
        group: String,
        function: Option<String>,
    },
    /// `check`: run apart from the other commands, for its exit codes.
    Check(CheckRequest),
    /// `id`: from a machine id given, or the file to read it from.
    Id {
        machine: MachineIdSource,
        app: Option<String>,
    },
    ConfigCheck {
        source: ConfigSource,
        from: Option<crate::domain::lock::Timestamp>,
        /// Print the variables, not the summary.
        env: bool,
    },
    /// `lock` or `unlock`.
    Lock(Request),
    Pause {
        groups: Targets,
        reason: String,
        by: Option<String>,
        /// The deployed function whose configuration names the groups.
        function: Option<String>,
        /// Pause a named group that is neither stored nor configured.
        create: bool,
    },
    Resume {
        groups: Targets,
        function: Option<String>,
    },
    Exclude {
        group: String,
        id: String,
        reason: String,
        by: Option<String>,
        function: Option<String>,
    },
    Include {
        group: String,
        id: String,
        function: Option<String>,
    },
    Credential {
        name: String,
        groups: String,
        secret_from_stdin: bool,
        /// The deployment's base URL, for the whole drop-in.
        url: Option<String>,
    },
    IamPolicy {
        policy_for: PolicyFor,
        table_arn: Option<String>,
        function_arn: Option<String>,
    },
    Completions(clap_complete::Shell),
    Windows {
        group: Option<String>,
        /// From when (default: now).
        from: Option<crate::domain::lock::Timestamp>,
        /// How many openings and closings per group.
        next: usize,
        function: Option<String>,
    },
}

/// What `check` was asked.
#[derive(Debug, PartialEq, Eq)]
pub struct CheckRequest {
    pub url: UrlSource,
    pub group: String,
    pub slots: u32,
    pub strict: bool,
    pub json: bool,
}

/// Where `id` takes the machine id from.
#[derive(Debug, PartialEq, Eq)]
pub enum MachineIdSource {
    Given(String),
    File(PathBuf),
    /// `FLEETLOCK_MACHINE_ID_FILE`, else `/etc/machine-id`.
    Default,
}

/// Where `config check` reads the settings from.
#[derive(Debug, PartialEq, Eq)]
pub enum ConfigSource {
    Shell,
    Samconfig { file: PathBuf, config_env: String },
    Tfvars(PathBuf),
}

/// The groups a pause or resume acts on.
#[derive(Debug, PartialEq, Eq)]
pub enum Targets {
    Named(Vec<String>),
    /// Every group stored in the table.
    All,
}

/// The arguments as clap reads them; [`parse`] turns them into a [`Command`].
#[derive(Parser, Debug)]
#[command(
    name = "fleetlock",
    version,
    about = "A FleetLock server for Zincati, the update agent of Fedora CoreOS",
    override_help = HELP
)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Sub>,
}

#[derive(Subcommand, Debug)]
enum Sub {
    /// Serve FleetLock over HTTP
    Serve {
        /// The address to listen on
        #[arg(long, value_name = "ADDR", default_value = DEFAULT_LISTEN, value_parser = listen_address)]
        listen: SocketAddr,
        /// Time to send the headers, and the idle keep-alive time (1s to 10m; default 10s)
        #[arg(long, value_name = "D", value_parser = serve_timeout)]
        header_timeout: Option<Duration>,
        /// Time to send the body (1s to 10m; default 10s)
        #[arg(long, value_name = "D", value_parser = serve_timeout)]
        body_timeout: Option<Duration>,
        /// Connections at once (1 to 65535; default 512)
        #[arg(long, value_name = "N", value_parser = max_connections)]
        max_connections: Option<usize>,
    },
    /// Create FLEETLOCK_TABLE and wait until it is active
    CreateTable {
        /// Print the table definition only
        #[arg(long)]
        dry_run: bool,
    },
    /// Show who holds a slot, since when, and each group's pause, settle time and windows
    Status {
        /// Only this group
        #[arg(long, value_name = "GROUP")]
        group: Option<String>,
        /// As JSON
        #[arg(long)]
        json: bool,
        /// Read the rules from this deployed function's configuration
        #[arg(long, value_name = "NAME")]
        function: Option<String>,
        /// List every idle group too
        #[arg(long)]
        all: bool,
        /// Show each holder's host: 'tags' (the instances' own tags) or a host file (default: FLEETLOCK_HOSTS)
        #[arg(long, value_name = "tags|FILE")]
        hosts: Option<String>,
    },
    /// The hosts behind ids (as status, the logs and slot events show them)
    Hosts {
        /// The ids
        #[arg(value_name = "ID", required = true)]
        ids: Vec<String>,
        /// 'tags' (the instances' own tags) or a host file (default: FLEETLOCK_HOSTS)
        #[arg(long, value_name = "tags|FILE")]
        hosts: Option<String>,
        /// As JSON
        #[arg(long)]
        json: bool,
    },
    /// Release a slot by hand (ID as status shows it)
    Release {
        /// The group the slot is held in
        #[arg(long, value_name = "GROUP")]
        group: String,
        /// The holder's id, as status shows it
        #[arg(long, value_name = "ID")]
        id: String,
    },
    /// Confirm that a node waiting for its drain was drained
    Drained {
        /// The group the node waits in
        #[arg(long, value_name = "GROUP")]
        group: String,
        /// The node's id, as status shows it
        #[arg(long, value_name = "ID")]
        id: String,
        /// Only the reservation made then (as status and the event say it)
        #[arg(long, value_name = "TIME", value_parser = reserved_at)]
        reserved_at: Option<crate::domain::lock::Timestamp>,
    },
    /// Remove a group that holds nothing, is not paused and is not configured
    Forget {
        /// The group to remove
        #[arg(long, value_name = "GROUP")]
        group: String,
        /// Refuse a group this deployed function's configuration names
        #[arg(long, value_name = "NAME")]
        function: Option<String>,
    },
    /// Stop new reboots in these groups at once (holders keep their slots)
    Pause {
        #[command(flatten)]
        targets: TargetArgs,
        /// Why: it reaches the nodes' journals
        #[arg(long, value_name = "TEXT")]
        reason: String,
        /// Who pauses (default: $USER)
        #[arg(long, value_name = "NAME")]
        by: Option<String>,
        /// Check the groups against this deployed function's configuration
        #[arg(long, value_name = "NAME")]
        function: Option<String>,
        /// Pause a named group even if it is neither stored nor configured
        #[arg(long)]
        create: bool,
    },
    /// Clear a person's pause (alarms' pauses stay)
    Resume {
        #[command(flatten)]
        targets: TargetArgs,
        /// Check the groups against this deployed function's configuration
        #[arg(long, value_name = "NAME")]
        function: Option<String>,
    },
    /// Keep one node out of its group's rollout while the rest goes on
    Exclude {
        #[command(flatten)]
        node: NodeArgs,
        /// Why, for the node's journal and for status
        #[arg(long, value_name = "TEXT")]
        reason: String,
        /// Who excludes it (default: $USER)
        #[arg(long, value_name = "NAME")]
        by: Option<String>,
        /// Check the group against this deployed function's configuration
        #[arg(long, value_name = "NAME")]
        function: Option<String>,
    },
    /// Let an excluded node take reboot slots again
    Include {
        #[command(flatten)]
        node: NodeArgs,
        /// Check the group against this deployed function's configuration
        #[arg(long, value_name = "NAME")]
        function: Option<String>,
    },
    /// Make a client credential: a random secret and its FLEETLOCK_CLIENTS entry
    Credential {
        /// The client's name
        #[arg(long, value_name = "N")]
        name: String,
        /// The groups it may use: '*' for all, or 'a,b'
        #[arg(long, value_name = "GROUPS")]
        groups: String,
        /// Read the secret from stdin instead of making one
        #[arg(long = "secret-stdin")]
        secret_stdin: bool,
        /// The deployment's base URL (its BaseUrl output): print the whole Zincati drop-in
        #[arg(long, value_name = "BASE_URL", conflicts_with = "secret_stdin")]
        url: Option<String>,
    },
    /// Print the IAM policy the people on call (or one of the functions) need
    IamPolicy {
        /// operator, function, slot-events or alarm-pauses
        #[arg(long = "for", value_name = "PARTY", value_parser = policy_for)]
        policy_for: Option<PolicyFor>,
        /// The lock table (default: a placeholder)
        #[arg(long, value_name = "ARN")]
        table_arn: Option<String>,
        /// The API function (default: a placeholder)
        #[arg(long, value_name = "ARN")]
        function_arn: Option<String>,
    },
    /// Take a slot of a group for a job, as Zincati takes one
    Lock(LockArgs),
    /// Give the job's slot back
    Unlock(LockArgs),
    /// Check that a FleetLock server answers as Zincati needs
    Check {
        /// The server, as Zincati's base_url: https://NAME:SECRET@host/ (default: FLEETLOCK_URL)
        #[arg(value_name = "URL", conflicts_with = "url_file")]
        url: Option<String>,
        /// The server's URL, from the first line of this file
        #[arg(long, value_name = "F")]
        url_file: Option<String>,
        /// The group kept for the check (configured, with no settle time, pause or window)
        #[arg(long, value_name = "G", default_value = crate::cli::check::DEFAULT_GROUP)]
        group: String,
        /// The slots that group is configured with
        #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=16))]
        slots: u32,
        /// Count warnings as failures
        #[arg(long)]
        strict: bool,
        /// Print the report as JSON
        #[arg(long)]
        json: bool,
    },
    /// The id Zincati sends for a machine (or `lock --app NAME` takes)
    Id {
        /// The machine id (32 hex digits, as in /etc/machine-id)
        #[arg(long, value_name = "HEX", conflicts_with = "machine_id_file")]
        machine_id: Option<String>,
        /// Read the machine id from this file (default: FLEETLOCK_MACHINE_ID_FILE or /etc/machine-id)
        #[arg(long, value_name = "FILE")]
        machine_id_file: Option<PathBuf>,
        /// The id `fleetlock lock --app NAME` takes on that machine instead of Zincati's
        #[arg(long, value_name = "NAME")]
        app: Option<String>,
    },
    /// The next openings and closings of the maintenance windows
    Windows {
        /// Only this group's windows
        #[arg(long, value_name = "GROUP")]
        group: Option<String>,
        /// From this time (RFC 3339, e.g. 2026-03-28T00:00:00Z; default: now)
        #[arg(long, value_name = "TIME", value_parser = instant)]
        from: Option<crate::domain::lock::Timestamp>,
        /// How many openings and closings per group (1 to 100)
        #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=100))]
        next: u16,
        /// Read the windows from this deployed function's configuration
        #[arg(long, value_name = "NAME")]
        function: Option<String>,
    },
    /// The settings
    Config {
        #[command(subcommand)]
        command: ConfigSub,
    },
    /// Print shell completions
    Completions {
        /// bash, zsh, fish, elvish or powershell
        #[arg(value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
    #[command(hide = true)]
    Version,
}

#[derive(Subcommand, Debug)]
enum ConfigSub {
    /// Check the FLEETLOCK_* settings in this shell, or a deploy's inputs, as the function would read them
    Check {
        /// The parameter_overrides of this samconfig.toml, over the template's defaults
        #[arg(long, value_name = "FILE", conflicts_with = "tfvars")]
        samconfig: Option<PathBuf>,
        /// Its config-env (as sam deploy --config-env)
        #[arg(
            long,
            value_name = "ENV",
            default_value = "default",
            requires = "samconfig"
        )]
        config_env: String,
        /// The module inputs of this .tfvars or .tfvars.json file, over the module's defaults
        #[arg(long, value_name = "FILE")]
        tfvars: Option<PathBuf>,
        /// When the windows next open or close, from this time (RFC 3339; default: now)
        #[arg(long, value_name = "TIME", value_parser = instant)]
        from: Option<crate::domain::lock::Timestamp>,
        /// Print the function's FLEETLOCK_* variables as shell assignments instead
        #[arg(long)]
        env: bool,
    },
}

#[derive(Args, Debug)]
struct TargetArgs {
    /// A group (repeatable)
    #[arg(
        long = "group",
        value_name = "GROUP",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    groups: Vec<String>,
    /// Every group stored in the table
    #[arg(long)]
    all: bool,
}

/// The node that `exclude` and `include` act on.
#[derive(Args, Debug)]
struct NodeArgs {
    /// The node's group
    #[arg(long, value_name = "GROUP")]
    group: String,
    /// The node's id, as status shows it
    #[arg(long, value_name = "ID")]
    id: String,
}

#[derive(Args, Debug)]
struct LockArgs {
    /// The group whose slot the job takes
    #[arg(long, value_name = "GROUP")]
    group: String,
    /// The job's id (default: derived from the machine id and --app)
    #[arg(long, value_name = "ID", conflicts_with = "app")]
    id: Option<String>,
    /// The job's name, from which its id is derived (default: job)
    #[arg(long, value_name = "NAME")]
    app: Option<String>,
    /// Ask again until yes
    #[arg(long)]
    wait: bool,
    /// With --wait: give up after this long
    #[arg(long, value_name = "D", value_parser = lock_timeout)]
    timeout: Option<Duration>,
    /// The server's URL, from the first line of this file
    #[arg(long, value_name = "F", conflicts_with = "url")]
    url_file: Option<String>,
    /// The server's URL (shows the secret in ps and shell history)
    #[arg(long, value_name = "URL")]
    url: Option<String>,
}

fn listen_address(text: &str) -> Result<SocketAddr, String> {
    text.parse()
        .map_err(|_| format!("'{text}' is not an address like 127.0.0.1:8080"))
}

/// A timeout of `serve`: from 1 s to 10 min.
fn serve_timeout(text: &str) -> Result<Duration, String> {
    let duration = parse_duration(text)?;
    if !(Duration::from_secs(1)..=Duration::from_secs(600)).contains(&duration) {
        return Err(format!("'{text}' is not from 1s to 10m"));
    }
    Ok(duration)
}

fn max_connections(text: &str) -> Result<usize, String> {
    text.parse()
        .ok()
        .filter(|n| (1..=65_535).contains(n))
        .ok_or_else(|| format!("'{text}' is not a number from 1 to 65535"))
}

fn instant(text: &str) -> Result<crate::domain::lock::Timestamp, String> {
    let at: jiff::Timestamp = text
        .parse()
        .map_err(|_| format!("'{text}' is not a time like 2026-03-28T00:00:00Z"))?;
    u64::try_from(at.as_millisecond())
        .map(crate::domain::lock::Timestamp)
        .map_err(|_| format!("'{text}' is before 1970"))
}

fn lock_timeout(text: &str) -> Result<Duration, String> {
    parse_duration(text)
}

fn policy_for(name: &str) -> Result<PolicyFor, String> {
    PolicyFor::parse(name).ok_or_else(|| format!("--for takes {}, not '{name}'", PolicyFor::NAMES))
}

fn reserved_at(text: &str) -> Result<crate::domain::lock::Timestamp, String> {
    crate::domain::drain::parse_time(text)
}

/// The clap definition, for completions and for the tests.
pub fn definition() -> clap::Command {
    Cli::command()
}

/// Parses the arguments after the program name. `Err` is one line for a
/// person: a usage mistake.
pub fn parse(args: &[String]) -> Result<Command, String> {
    if args.is_empty() {
        return Ok(Command::Help);
    }
    let argv = std::iter::once("fleetlock".to_owned()).chain(args.iter().cloned());
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(err) => {
            return match err.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
                    if is_root_help(args) =>
                {
                    Ok(Command::Help)
                }
                ErrorKind::DisplayVersion => Ok(Command::Version),
                _ => Err(usage_mistake(&err, args)),
            };
        }
    };
    Ok(match cli.command {
        None => Command::Help,
        Some(sub) => command_of(sub)?,
    })
}

/// `help`, `--help` or `-h` alone: this program's own help text.
fn is_root_help(args: &[String]) -> bool {
    matches!(args, [one] if matches!(one.as_str(), "help" | "--help" | "-h"))
}

/// The help clap writes for one command (`fleetlock help status`,
/// `fleetlock status --help`), or `None` when `args` ask for none.
pub fn command_help(args: &[String]) -> Option<String> {
    if args.is_empty() || is_root_help(args) {
        return None;
    }
    let argv = std::iter::once("fleetlock".to_owned()).chain(args.iter().cloned());
    match Cli::try_parse_from(argv) {
        Err(err) if err.kind() == ErrorKind::DisplayHelp => Some(err.to_string()),
        _ => None,
    }
}

fn command_of(sub: Sub) -> Result<Command, String> {
    Ok(match sub {
        Sub::Serve {
            listen,
            header_timeout,
            body_timeout,
            max_connections,
        } => {
            let defaults = Limits::default();
            Command::Serve {
                listen,
                limits: Limits {
                    header_timeout: header_timeout.unwrap_or(defaults.header_timeout),
                    body_timeout: body_timeout.unwrap_or(defaults.body_timeout),
                    max_connections: max_connections.unwrap_or(defaults.max_connections),
                },
            }
        }
        Sub::CreateTable { dry_run } => Command::CreateTable { dry_run },
        Sub::Status {
            group,
            json,
            function,
            all,
            hosts,
        } => Command::Status {
            group,
            json,
            function,
            all,
            hosts,
        },
        Sub::Hosts { ids, hosts, json } => Command::Hosts { ids, hosts, json },
        Sub::Release { group, id } => Command::Release { group, id },
        Sub::Drained {
            group,
            id,
            reserved_at,
        } => Command::Drained {
            group,
            id,
            reserved_at,
        },
        Sub::Forget { group, function } => Command::Forget { group, function },
        Sub::Pause {
            targets,
            reason,
            by,
            function,
            create,
        } => Command::Pause {
            groups: targets.into(),
            reason,
            by,
            function,
            create,
        },
        Sub::Resume { targets, function } => Command::Resume {
            groups: targets.into(),
            function,
        },
        Sub::Exclude {
            node: NodeArgs { group, id },
            reason,
            by,
            function,
        } => Command::Exclude {
            group,
            id,
            reason,
            by,
            function,
        },
        Sub::Include {
            node: NodeArgs { group, id },
            function,
        } => Command::Include {
            group,
            id,
            function,
        },
        Sub::Credential {
            name,
            groups,
            secret_stdin,
            url,
        } => Command::Credential {
            name,
            groups,
            secret_from_stdin: secret_stdin,
            url,
        },
        Sub::IamPolicy {
            policy_for,
            table_arn,
            function_arn,
        } => Command::IamPolicy {
            policy_for: policy_for.unwrap_or(PolicyFor::Operator),
            table_arn,
            function_arn,
        },
        Sub::Lock(args) => Command::Lock(args.request(Call::PreReboot)?),
        Sub::Unlock(args) => Command::Lock(args.request(Call::SteadyState)?),
        Sub::Config {
            command:
                ConfigSub::Check {
                    samconfig,
                    config_env,
                    tfvars,
                    from,
                    env,
                },
        } => Command::ConfigCheck {
            source: match (samconfig, tfvars) {
                (Some(file), _) => ConfigSource::Samconfig { file, config_env },
                (None, Some(file)) => ConfigSource::Tfvars(file),
                (None, None) => ConfigSource::Shell,
            },
            from,
            env,
        },
        Sub::Completions { shell } => Command::Completions(shell),
        Sub::Check {
            url,
            url_file,
            group,
            slots,
            strict,
            json,
        } => Command::Check(CheckRequest {
            url: match (url, url_file) {
                (Some(url), _) => UrlSource::Argument(url),
                (None, Some(file)) => UrlSource::File(file),
                (None, None) => UrlSource::Environment,
            },
            group,
            slots,
            strict,
            json,
        }),
        Sub::Id {
            machine_id,
            machine_id_file,
            app,
        } => Command::Id {
            machine: match (machine_id, machine_id_file) {
                (Some(hex), _) => MachineIdSource::Given(hex),
                (None, Some(file)) => MachineIdSource::File(file),
                (None, None) => MachineIdSource::Default,
            },
            app,
        },
        Sub::Windows {
            group,
            from,
            next,
            function,
        } => Command::Windows {
            group,
            from,
            next: usize::from(next),
            function,
        },
        Sub::Version => Command::Version,
    })
}

impl From<TargetArgs> for Targets {
    fn from(args: TargetArgs) -> Self {
        if args.all {
            Targets::All
        } else {
            Targets::Named(args.groups)
        }
    }
}

impl LockArgs {
    fn request(self, call: Call) -> Result<Request, String> {
        let identity = match self.id {
            Some(id) => Identity::Id(id),
            None => Identity::App(self.app.unwrap_or_else(|| DEFAULT_APP.into())),
        };
        let url = match (self.url, self.url_file) {
            (Some(url), _) => UrlSource::Argument(url),
            (None, Some(file)) => UrlSource::File(file),
            (None, None) => UrlSource::Environment,
        };
        if self.timeout.is_some() && !self.wait {
            return Err("--timeout goes with --wait".into());
        }
        Ok(Request {
            call,
            group: self.group,
            identity,
            url,
            wait: self.wait.then_some(self.timeout),
        })
    }
}

/// A clap error as one sentence in this program's words.
fn usage_mistake(err: &clap::Error, args: &[String]) -> String {
    let text = |kind| match err.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(list)) => Some(list.join(", ")),
        Some(ContextValue::StyledStr(s)) => Some(s.to_string()),
        _ => None,
    };
    let strings = |kind| match err.get(kind) {
        Some(ContextValue::Strings(list)) => list.clone(),
        Some(ContextValue::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    };
    // "--group <G>" as the help writes it: "--group G".
    let option = |arg: String| arg.replace(['<', '>'], "");
    let option_name = |arg: &str| arg.split_whitespace().next().unwrap_or(arg).to_owned();
    let command = match args.first().map(String::as_str) {
        Some("config") => "config check".to_owned(),
        Some(first) => first.to_owned(),
        None => "fleetlock".to_owned(),
    };
    let suggested = |kind| {
        strings(kind)
            .first()
            .map_or(String::new(), |s| format!(" (did you mean '{s}'?)"))
    };
    match err.kind() {
        ErrorKind::InvalidSubcommand if args.first().is_some_and(|a| a == "config") => {
            let word = text(ContextKind::InvalidSubcommand).unwrap_or_default();
            format!("unknown command 'config {word}' (try 'config check')")
        }
        ErrorKind::InvalidSubcommand => {
            // A typo of a command is named, never run as something else.
            let word = text(ContextKind::InvalidSubcommand).unwrap_or_default();
            let definition = definition();
            let closest = definition
                .get_subcommands()
                .filter(|s| !s.is_hide_set())
                .map(clap::Command::get_name)
                .chain(["help"])
                .find(|known| edit_distance(&word, known) <= 2)
                .map_or(String::new(), |known| format!(" (did you mean '{known}'?)"));
            format!("unknown command '{word}'{closest}")
        }
        ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            "config needs a command: 'fleetlock config check'".into()
        }
        ErrorKind::MissingRequiredArgument => {
            let missing: Vec<String> = strings(ContextKind::InvalidArg)
                .into_iter()
                .map(option)
                .collect();
            let hint = match missing.first().map(|m| option_name(m)).as_deref() {
                Some("--reason") => ": it reaches the nodes' journals",
                Some("--groups") => " ('*' for all, or 'a,b')",
                Some("--group") if matches!(command.as_str(), "pause" | "resume") => {
                    " (repeatable) or --all"
                }
                _ => "",
            };
            format!("{command} needs {}{hint}", missing.join(" and "))
        }
        ErrorKind::ArgumentConflict => {
            let arg = text(ContextKind::InvalidArg).map(|a| option_name(&a));
            let prior = text(ContextKind::PriorArg).map(|a| option_name(&a));
            match (arg, prior) {
                (Some(arg), Some(prior)) if arg == prior => format!("{arg} given twice"),
                (Some(arg), Some(prior)) => {
                    format!("{command} takes {arg} or {prior}, not both")
                }
                (Some(arg), None) => format!("{arg} given twice"),
                _ => first_line(err),
            }
        }
        ErrorKind::UnknownArgument => {
            let arg = text(ContextKind::InvalidArg).unwrap_or_default();
            let tip = suggested(ContextKind::SuggestedArg);
            if arg.starts_with('-') {
                format!("unknown option '{arg}'{tip}")
            } else {
                format!("unexpected argument '{arg}'")
            }
        }
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => {
            let arg = text(ContextKind::InvalidArg)
                .map(|a| option_name(&a).replace(['<', '>'], ""))
                .unwrap_or_default();
            let value = text(ContextKind::InvalidValue).unwrap_or_default();
            match std::error::Error::source(err) {
                // A reason that names its option already stands alone.
                Some(why) if why.to_string().starts_with(&arg) => why.to_string(),
                Some(why) => format!("{arg}: {why}"),
                None if value.is_empty() => format!("{arg} needs a value"),
                None => {
                    let valid = text(ContextKind::ValidValue)
                        .map_or(String::new(), |v| format!(" (one of: {v})"));
                    format!("{arg}: '{value}' is not valid{valid}")
                }
            }
        }
        _ => first_line(err),
    }
}

/// " (did you mean 'x'?)" for the first of `known` closest to `word`, if
/// it is within two edits and not `word` itself; else nothing.
pub(crate) fn did_you_mean<'a>(word: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    known
        .into_iter()
        .filter(|known| *known != word)
        .map(|known| (edit_distance(word, known), known))
        .filter(|(distance, _)| *distance <= 2)
        .min_by_key(|(distance, _)| *distance)
        .map_or(String::new(), |(_, known)| {
            format!(" (did you mean '{known}'?)")
        })
}

/// Levenshtein distance: how many single-character edits turn `a` into `b`.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substituted = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substituted.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

/// clap's own sentence, without its "error: " and its usage lines.
fn first_line(err: &clap::Error) -> String {
    let rendered = err.render().to_string();
    let line = rendered.lines().next().unwrap_or_default();
    line.strip_prefix("error: ").unwrap_or(line).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_gives_the_lease_range_the_service_enforces() {
        use crate::domain::groups::{MAX_LEASE, MIN_LEASE};
        let range = format!(
            "FLEETLOCK_LEASE   per group, from {}m to {}h",
            MIN_LEASE.as_secs() / 60,
            MAX_LEASE.as_secs() / 3600
        );
        assert!(HELP.contains(&range), "{range}");
    }

    #[test]
    fn help_and_readme_list_every_command_the_parser_takes() {
        let readme = include_str!("../../docs/operating.md");
        let mut commands = vec!["help".to_owned()];
        for sub in definition().get_subcommands().filter(|s| !s.is_hide_set()) {
            // `config` is a command of two words.
            let command = match sub.get_name() {
                "config" => "config check".to_owned(),
                name => name.to_owned(),
            };
            // Every option of the command, in the help and in docs/operating.md.
            for option in sub.get_arguments().filter_map(|a| a.get_long()) {
                assert!(
                    HELP.contains(&format!("--{option}")),
                    "help lacks {command} --{option}"
                );
                assert!(
                    readme.contains(&format!("--{option}")),
                    "docs/operating.md lacks {command} --{option}"
                );
            }
            commands.push(command);
        }
        assert!(commands.len() > 10, "{commands:?}");
        for command in commands {
            let usage = format!("fleetlock {command}");
            assert!(HELP.contains(&usage), "help lacks {command}");
            assert!(readme.contains(&usage), "docs/operating.md lacks {command}");
            let parsed = parse(&args(&command));
            assert!(
                !parsed.is_err_and(|e| e.starts_with("unknown command")),
                "{command}"
            );
        }
    }

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn no_arguments_prints_help() {
        assert_eq!(parse(&[]), Ok(Command::Help));
    }

    #[test]
    fn commands_and_options() {
        assert_eq!(
            parse(&args("serve")),
            Ok(Command::Serve {
                listen: DEFAULT_LISTEN.parse().unwrap(),
                limits: Limits::default(),
            })
        );
        assert_eq!(
            parse(&args(
                "serve --listen 0.0.0.0:9000 --header-timeout 2s --body-timeout 1m \
                 --max-connections 64"
            )),
            Ok(Command::Serve {
                listen: "0.0.0.0:9000".parse().unwrap(),
                limits: Limits {
                    header_timeout: Duration::from_secs(2),
                    body_timeout: Duration::from_secs(60),
                    max_connections: 64,
                },
            })
        );
        assert_eq!(
            parse(&args("forget --group old.cluster")),
            Ok(Command::Forget {
                group: "old.cluster".into(),
                function: None,
            })
        );
        assert_eq!(
            parse(&args("status --json --group=workers")),
            Ok(Command::Status {
                group: Some("workers".into()),
                json: true,
                function: None,
                all: false,
                hosts: None,
            })
        );
        assert_eq!(
            parse(&args("release --id abc --group default")),
            Ok(Command::Release {
                group: "default".into(),
                id: "abc".into()
            })
        );
        assert_eq!(
            parse(&args("pause --group a --group b --reason oops --by bob")),
            Ok(Command::Pause {
                groups: Targets::Named(vec!["a".into(), "b".into()]),
                reason: "oops".into(),
                by: Some("bob".into()),
                function: None,
                create: false,
            })
        );
        assert_eq!(
            parse(&args("resume --all")),
            Ok(Command::Resume {
                groups: Targets::All,
                function: None,
            })
        );
        assert_eq!(
            parse(&args("create-table")),
            Ok(Command::CreateTable { dry_run: false })
        );
        assert_eq!(
            parse(&args("create-table --dry-run")),
            Ok(Command::CreateTable { dry_run: true })
        );
    }

    #[test]
    fn mistakes_are_explained() {
        for (line, says) in [
            ("reboot", "unknown command"),
            ("unlok", "unknown command 'unlok' (did you mean 'unlock'?)"),
            ("stauts", "(did you mean 'status'?)"),
            ("serve --listen nowhere", "not an address"),
            ("serve --listen", "needs a value"),
            ("serve --header-timeout 0s", "not from 1s to 10m"),
            ("serve --body-timeout 11m", "not from 1s to 10m"),
            ("serve --body-timeout soon", "not a duration"),
            ("serve --max-connections 0", "not a number from 1 to 65535"),
            ("forget", "needs --group"),
            ("lock", "lock needs --group"),
            ("lock --group g --id a --app b", "not both"),
            ("unlock --group g --url u --url-file f", "not both"),
            ("lock --group g --timeout 5m", "--timeout goes with --wait"),
            ("lock --group g --wait --timeout soon", "--timeout: "),
            ("release --group g", "needs --id"),
            ("status --verbose", "unknown option"),
            ("status --group a --group b", "given twice"),
            ("status extra", "unexpected argument"),
            ("pause --reason x", "needs --group"),
            ("pause --group a", "needs --reason"),
            ("pause --group a --all --reason x", "not both"),
            ("resume", "needs --group"),
            ("pause --group a --reason x --reason y", "given twice"),
        ] {
            let err = parse(&args(line)).unwrap_err();
            assert!(err.contains(says), "{line}: {err}");
        }
    }

    #[test]
    fn completions_cover_every_command_and_option() {
        assert_eq!(
            parse(&args("completions zsh")),
            Ok(Command::Completions(clap_complete::Shell::Zsh))
        );
        let err = parse(&args("completions tcsh")).unwrap_err();
        assert!(
            err.starts_with("SHELL: 'tcsh' is not valid (one of: bash"),
            "{err}"
        );
        let mut script = Vec::new();
        clap_complete::generate(
            clap_complete::Shell::Bash,
            &mut definition(),
            "fleetlock",
            &mut script,
        );
        let script = String::from_utf8(script).unwrap();
        for word in [
            "create-table",
            "iam-policy",
            "--max-connections",
            "--url-file",
            "check",
        ] {
            assert!(script.contains(word), "bash completions lack {word}");
        }
    }

    #[test]
    fn one_command_has_help_of_its_own_and_the_whole_help_is_this_programs() {
        let status = command_help(&args("status --help")).unwrap();
        assert!(status.contains("--function <NAME>"), "{status}");
        assert_eq!(command_help(&args("help status")), Some(status));
        assert_eq!(command_help(&args("--help")), None);
        assert_eq!(parse(&args("--help")), Ok(Command::Help));
        assert_eq!(parse(&args("-V")), Ok(Command::Version));
    }
}
