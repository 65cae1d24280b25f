//! `credential`: a client credential for Zincati's base_url, and with the
//! deployment's URL the whole drop-in a node needs.

use std::io::Write;

use clap::Args;

use crate::domain::auth;

use super::Failure;

/// Make a client credential: a random secret for Zincati's base_url and its
/// FLEETLOCK_CLIENTS entry (with --url, the deployment's BaseUrl: the whole
/// Zincati drop-in)
#[derive(Args, Debug, PartialEq, Eq)]
pub(crate) struct Credential {
    /// The client's name
    #[arg(long, value_name = "N")]
    pub(crate) name: String,
    /// The groups it may use: '*' for all, or 'a,b'
    #[arg(long, value_name = "GROUPS")]
    pub(crate) groups: String,
    /// Read the secret from stdin instead of making one
    #[arg(long = "secret-stdin")]
    pub(crate) secret_stdin: bool,
    /// The deployment's base URL (its BaseUrl output): print the whole Zincati drop-in
    #[arg(long, value_name = "BASE_URL", conflicts_with = "secret_stdin")]
    pub(crate) url: Option<String>,
}

impl Credential {
    pub(crate) fn run(self, out: &mut impl Write) -> Result<(), Failure> {
        let secret = if self.secret_stdin {
            let mut secret = String::new();
            std::io::stdin()
                .read_line(&mut secret)
                .map_err(|e| Failure::Input(format!("cannot read the secret: {e}")))?;
            Some(secret.trim_end_matches(['\r', '\n']).to_owned())
        } else {
            None
        };
        credential(
            &self.name,
            &self.groups,
            secret.as_deref(),
            self.url.as_deref(),
            out,
        )
    }
}

/// `credential`: the entry of a given secret, or a new secret with its entry
/// and the base_url for Zincati; with the deployment's base URL, the whole
/// drop-in a node needs.
pub(crate) fn credential(
    name: &str,
    groups: &str,
    secret: Option<&str>,
    base_url: Option<&str>,
    out: &mut impl Write,
) -> Result<(), Failure> {
    if let Some(secret) = secret {
        say!(
            out,
            "{}",
            auth::entry_for(name, groups, secret).map_err(|why| Failure::Input(why.to_string()))?
        );
        return Ok(());
    }
    // Checked before a secret is made: nothing is shown for a bad URL.
    let base_url = base_url.map(deployment_url).transpose()?;
    let new = auth::new_credential(name, groups).map_err(|why| Failure::Input(why.to_string()))?;
    say!(
        out,
        "FLEETLOCK_CLIENTS entry (it holds only a salted hash):"
    );
    say!(out, "  {}", new.entry);
    say!(
        out,
        "Zincati base_url for the nodes of group(s) '{groups}':"
    );
    let Some(mut url) = base_url else {
        say!(out, "  https://{name}:{}@YOUR-API-HOST/", new.secret);
        say!(out, "The secret is shown once and stored nowhere.");
        say!(
            out,
            "Replace YOUR-API-HOST with the host (and path) of the deployment's BaseUrl \
             output, or pass --url BASE_URL for the whole Zincati drop-in."
        );
        return Ok(());
    };
    // Name and secret are URL-safe by construction (a-z A-Z 0-9 . _ - and hex).
    let _ = url.set_username(name);
    let _ = url.set_password(Some(&new.secret));
    say!(out, "  {url}");
    say!(out, "The secret is shown once and stored nowhere.");
    say!(
        out,
        "Zincati drop-in, /etc/zincati/config.d/55-updates-strategy.toml:"
    );
    say!(out, "  [updates]");
    say!(out, "  strategy = \"fleet_lock\"");
    say!(out, "");
    say!(out, "  [updates.fleet_lock]");
    say!(out, "  base_url = \"{url}\"");
    // One named group: the nodes must say they are in it.
    if !groups.contains([',', '*']) && groups.trim() != "default" {
        say!(
            out,
            "and /etc/zincati/config.d/60-group.toml (the nodes' group; without it they ask for 'default'):"
        );
        say!(out, "  [identity]");
        say!(out, "  group = \"{}\"", groups.trim());
    }
    Ok(())
}

/// The deployment's base URL as Zincati needs it: https (http only on
/// loopback), no credentials of its own, ending with '/'.
fn deployment_url(text: &str) -> Result<url::Url, Failure> {
    let bad = |why: &str| Failure::Input(format!("--url {text}: {why}"));
    let url = url::Url::parse(text.trim()).map_err(|_| bad("not a URL like https://host/"))?;
    let loopback = matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"));
    if url.scheme() != "https" && !(url.scheme() == "http" && loopback) {
        return Err(bad("Zincati's base_url is https"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("give the deployment's URL, without credentials"));
    }
    if !url.path().ends_with('/') || url.query().is_some() || url.fragment().is_some() {
        return Err(bad(
            "base_url must end with '/' (Zincati joins v1/pre-reboot to it)",
        ));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::testing::printed;

    #[test]
    fn a_credential_with_the_deployments_url_is_the_whole_drop_in() {
        let mut out = Vec::new();
        credential(
            "workers",
            "workers",
            None,
            Some("https://abc123.execute-api.eu-west-1.amazonaws.com/"),
            &mut out,
        )
        .unwrap();
        let text = printed(out);
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let url = lines[3];
        let secret = url
            .strip_prefix("https://workers:")
            .and_then(|rest| rest.strip_suffix("@abc123.execute-api.eu-west-1.amazonaws.com/"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(
            !secret.is_empty() && secret.chars().all(|c| c.is_ascii_hexdigit()),
            "{text}"
        );
        // The entry lets exactly that URL's credentials in.
        let clients = auth::Clients::parse(lines[1]).unwrap();
        let header = format!(
            "Basic {}",
            base64::Engine::encode(
                &base64::engine::general_purpose::STANDARD,
                format!("workers:{secret}")
            )
        );
        assert!(clients.authenticate(Some(header.as_bytes())).is_ok());
        assert!(
            text.contains(&format!("  base_url = \"{url}\"\n")),
            "{text}"
        );
        assert!(text.contains("  group = \"workers\"\n"), "{text}");

        // Several groups: no identity file; a fleet-wide one: none either.
        let mut out = Vec::new();
        credential(
            "fleet",
            "*",
            None,
            Some("https://h.example/Prod/"),
            &mut out,
        )
        .unwrap();
        let text = printed(out);
        assert!(
            text.contains("@h.example/Prod/\"\n") && !text.contains("[identity]"),
            "{text}"
        );

        for (bad, says) in [
            ("http://h.example/", "https"),
            ("https://h.example/Prod", "must end with '/'"),
            ("https://a:b@h.example/", "without credentials"),
            ("h.example", "not a URL"),
        ] {
            let mut out = Vec::new();
            let err = credential("n", "*", None, Some(bad), &mut out).unwrap_err();
            assert!(err.to_string().contains(says), "{bad}: {err}");
            assert!(out.is_empty(), "nothing shown for a bad URL: {bad}");
        }
    }
}
