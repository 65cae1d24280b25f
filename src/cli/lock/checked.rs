//! What `lock` and `unlock` check before anything is sent: the URL, the
//! group, and the id, which is never the one Zincati uses on this host.

use super::{Identity, Pacing, Request, UrlSource};
use crate::client::{ClientError, Lock, job_id, parse_machine_id, zincati_id};
use crate::config::LockSettings;
use crate::domain::input::{GroupName, NodeId};

/// Why `lock` or `unlock` stops before sending anything: one line for a
/// person, naming the option.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LockArgError {
    #[error("--url-file {path}: {source}")]
    UrlFile {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "no FleetLock URL: set FLEETLOCK_URL or give --url-file FILE \
         (https://NAME:SECRET@host/, as in Zincati's base_url)"
    )]
    NoUrl,
    #[error(transparent)]
    Url(#[from] ClientError),
    #[error("--group: {0}")]
    Group(String),
    #[error(
        "--id {0} is the id Zincati uses on this host: Zincati would take the job's slot as \
         its own and reboot mid-job; use --app NAME or another id"
    )]
    ZincatisId(String),
    #[error("--app {app} derives the id from the machine id, which cannot be read: {why}")]
    NoMachineId { app: String, why: String },
    #[error("--id: {0}")]
    Id(String),
}

/// Everything checked before anything is sent: the URL, the group, the id.
pub struct Checked {
    pub lock: Lock,
    pub group: GroupName,
    pub id: NodeId,
    /// How long `--wait` pauses between tries.
    pub pacing: Pacing,
}

/// The server's URL where the command was told to find it, as Zincati's
/// base_url: the argument, the first line of the file, or `FLEETLOCK_URL`
/// (`None` when that is unset or blank). `Err` is one line for a person.
pub(crate) fn url_given(
    source: &UrlSource,
    settings: &LockSettings,
) -> Result<Option<String>, LockArgError> {
    Ok(match source {
        UrlSource::Argument(url) => Some(url.clone()),
        UrlSource::File(path) => Some(
            std::fs::read_to_string(path)
                .map_err(|source| LockArgError::UrlFile {
                    path: path.to_string(),
                    source,
                })?
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned(),
        ),
        UrlSource::Environment => settings.url.clone().filter(|u| !u.trim().is_empty()),
    })
}

/// Reads and checks the settings; `Err` is one line for a person.
pub(crate) fn check(request: &Request, settings: &LockSettings) -> Result<Checked, LockArgError> {
    let machine_id_file = settings.machine_id_file.as_path();
    let group = GroupName::parse(&request.group).map_err(|e| LockArgError::Group(e.value()))?;
    let url = url_given(&request.url, settings)?.ok_or(LockArgError::NoUrl)?;
    let lock = Lock::new(&url)?;
    let machine = std::fs::read_to_string(machine_id_file)
        .map_err(|e| format!("{}: {e}", machine_id_file.display()))
        .and_then(|text| parse_machine_id(&text).map_err(|why| why.to_string()));
    let id = match &request.identity {
        Identity::Id(id) => {
            // Never Zincati's own: its pre-reboot would hear "already held"
            // and reboot the host in the middle of the job.
            if let Ok(machine) = &machine
                && *id == zincati_id(machine)
            {
                return Err(LockArgError::ZincatisId(id.clone()));
            }
            id.clone()
        }
        Identity::App(app) => {
            let machine = machine.map_err(|why| LockArgError::NoMachineId {
                app: app.clone(),
                why,
            })?;
            job_id(&machine, app)
        }
    };
    let id = NodeId::parse(&id).map_err(|e| LockArgError::Id(e.value()))?;
    Ok(Checked {
        lock,
        group,
        id,
        pacing: Pacing::FLEET,
    })
}
