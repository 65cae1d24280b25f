//! The refusals of the HTTP edge: a request that never reached the service
//! (no such path, a method other than POST, no protocol header, a body too
//! large or too slow to arrive). Each has its kind and status and a sentence
//! that stands alone in a node's journal, in the same `{kind, value}` body as
//! the service's refusals ([`Refusal`] is either).

use crate::domain::error::Error;

/// A request refused before the service was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// No route for this path.
    NotFound(String),
    /// A FleetLock path asked with a method other than POST.
    MethodNotAllowed(String),
    /// The `fleet-lock-protocol: true` header is missing or not `true`.
    MissingProtocolHeader,
    /// The body is larger than the service reads.
    BodyTooLarge { limit: usize },
    /// The body did not arrive within the local server's body timeout.
    RequestTimeout { seconds: u64 },
}

impl Transport {
    /// The edge's kinds, beside the service's ([`Error::KINDS`]).
    pub const KINDS: &'static [&'static str] = &[
        "not_found",
        "method_not_allowed",
        "missing_protocol_header",
        "body_too_large",
        "request_timeout",
    ];

    pub fn kind(&self) -> &'static str {
        match self {
            Transport::NotFound(_) => "not_found",
            Transport::MethodNotAllowed(_) => "method_not_allowed",
            Transport::MissingProtocolHeader => "missing_protocol_header",
            Transport::BodyTooLarge { .. } => "body_too_large",
            Transport::RequestTimeout { .. } => "request_timeout",
        }
    }

    pub(crate) fn status(&self) -> u16 {
        match self {
            Transport::NotFound(_) => 404,
            Transport::MethodNotAllowed(_) => 405,
            Transport::MissingProtocolHeader => 400,
            Transport::BodyTooLarge { .. } => 413,
            Transport::RequestTimeout { .. } => 408,
        }
    }

    /// A sentence for the operator reading Zincati's journal.
    pub(crate) fn value(&self) -> String {
        match self {
            Transport::NotFound(path) => format!(
                "no FleetLock endpoint at {path}; expected v1/pre-reboot or \
                 v1/steady-state{}",
                not_found_hint(path)
            ),
            Transport::MethodNotAllowed(method) => {
                format!("method {method} is not allowed; FleetLock endpoints take POST")
            }
            Transport::MissingProtocolHeader => {
                "the header 'fleet-lock-protocol: true' is required".into()
            }
            Transport::BodyTooLarge { limit } => {
                format!("the request body is larger than {limit} bytes")
            }
            Transport::RequestTimeout { seconds } => {
                format!("the request body did not arrive within {seconds} s; nothing was decided")
            }
        }
    }
}

/// The hint of a 404, for the mistake its path shows: base_url carried a
/// path in front of `v1/...` that this server does not serve. Nothing when
/// the path shows no such mistake.
fn not_found_hint(path: &str) -> &'static str {
    let under_a_prefix = ["/v1/pre-reboot", "/v1/steady-state"]
        .iter()
        .any(|endpoint| path.len() > endpoint.len() && path.ends_with(endpoint));
    if under_a_prefix {
        " (base_url has a path this server does not serve: it should be the URL the \
         deployment printed, ending with '/')"
    } else {
        ""
    }
}

/// What a caller hears when it gets no slot: the edge's refusal or the
/// service's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Transport(Transport),
    Service(Error),
}

impl From<Transport> for Refusal {
    fn from(refused: Transport) -> Self {
        Refusal::Transport(refused)
    }
}

impl From<Error> for Refusal {
    fn from(err: Error) -> Self {
        Refusal::Service(err)
    }
}

impl Refusal {
    pub fn kind(&self) -> &'static str {
        match self {
            Refusal::Transport(refused) => refused.kind(),
            Refusal::Service(err) => err.kind(),
        }
    }

    pub(crate) fn status(&self) -> u16 {
        match self {
            Refusal::Transport(refused) => refused.status(),
            Refusal::Service(err) => err.status(),
        }
    }

    /// The body: `{kind, value}`, nothing else.
    pub(crate) fn body(&self) -> serde_json::Value {
        let value = match self {
            Refusal::Transport(refused) => refused.value(),
            Refusal::Service(err) => err.value(),
        };
        serde_json::json!({ "kind": self.kind(), "value": value })
    }
}

/// Every kind a caller may hear, the edge's and the service's: the closed
/// set Zincati labels its metrics with.
pub fn every_kind() -> impl Iterator<Item = &'static str> {
    Transport::KINDS.iter().chain(Error::KINDS).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_of_each() -> Vec<Transport> {
        vec![
            Transport::NotFound("/x".into()),
            Transport::MethodNotAllowed("GET".into()),
            Transport::MissingProtocolHeader,
            Transport::BodyTooLarge { limit: 1 },
            Transport::RequestTimeout { seconds: 1 },
        ]
    }

    /// Stops compiling when a variant is added without a place here, and
    /// so in `one_of_each` and `KINDS`.
    fn every_variant_is_counted(refused: &Transport) {
        match refused {
            Transport::NotFound(_)
            | Transport::MethodNotAllowed(_)
            | Transport::MissingProtocolHeader
            | Transport::BodyTooLarge { .. }
            | Transport::RequestTimeout { .. } => {}
        }
    }

    #[test]
    fn every_kind_is_listed_once_and_apart_from_the_services() {
        one_of_each().iter().for_each(every_variant_is_counted);
        let kinds: Vec<_> = one_of_each().iter().map(Transport::kind).collect();
        assert_eq!(kinds, Transport::KINDS);
        let every: Vec<_> = every_kind().collect();
        let mut unique = every.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), every.len(), "a kind listed twice: {every:?}");
        for kind in every {
            assert!(
                kind.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{kind}"
            );
        }
    }

    #[test]
    fn the_edges_refusals_are_4xx_a_retry_cannot_mend_and_never_429() {
        for refused in one_of_each() {
            let status = refused.status();
            assert!((400..500).contains(&status), "{refused:?}");
            assert_ne!(status, 429, "{refused:?}");
        }
    }

    #[test]
    fn the_answers_table_lists_every_kind_with_its_status() {
        let answers = include_str!("../../docs/configuration.md");
        for refused in one_of_each() {
            let row = format!("| `{}` | {} |", refused.kind(), refused.status());
            assert!(
                answers.contains(&row),
                "docs/configuration.md lacks the row {row}"
            );
        }
    }

    #[test]
    fn a_404_hints_only_where_the_path_shows_the_mistake() {
        let plain = Transport::NotFound("/v2/pre-reboot".into()).value();
        assert!(!plain.contains("base_url"), "{plain}");
        let prefixed = Transport::NotFound("/fleet/v1/pre-reboot".into()).value();
        assert!(prefixed.contains("base_url has a path"), "{prefixed}");
    }

    #[test]
    fn body_is_kind_and_value_only() {
        let body = Refusal::from(Transport::BodyTooLarge { limit: 4096 }).body();
        assert_eq!(body["kind"], "body_too_large");
        assert_eq!(body["value"], "the request body is larger than 4096 bytes");
        assert_eq!(body.as_object().unwrap().len(), 2);
        let body = Refusal::from(Error::UnknownGroup {
            group: "db".into(),
            meant: None,
        })
        .body();
        assert_eq!(body["kind"], "unknown_group");
        assert_eq!(body["value"], "group 'db' is not configured on this server");
        assert_eq!(body.as_object().unwrap().len(), 2);
    }
}
