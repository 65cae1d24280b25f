//! The roots the functions' HTTPS client trusts: the five roots of Amazon
//! Trust Services (Amazon Root CA 1 to 4, and the Starfield Services Root
//! G2 that cross-signs them), to which every AWS endpoint the functions call
//! chains (DynamoDB, EventBridge, CloudWatch). They are compiled in: the
//! SDK's default client reads and parses the host's whole trust store at
//! every start, most of a cold start's time, for roots these calls never use.
//!
//! Where a function must trust more (a TLS-inspecting proxy on its way out of
//! the VPC, a partition whose endpoints chain elsewhere), setting
//! `SSL_CERT_FILE` (or `SSL_CERT_DIR`) in its environment adds the roots of
//! that file or folder, read as the SDK reads the system's. The command line
//! keeps the system's trust store as it is: a person's own CA lives there.

use aws_smithy_http_client::tls::{self, TlsContext, TrustStore, rustls_provider::CryptoMode};
use aws_smithy_runtime_api::client::http::SharedHttpClient;

/// Amazon Trust Services' roots, as PEM (each with its subject, expiry and
/// SHA-256 fingerprint above it).
pub(crate) const AWS_ROOTS_PEM: &str = include_str!("roots/amazon-trust-services.pem");

/// Whether this environment names roots of its own to trust as well.
pub(crate) fn extra_roots_named(var: impl Fn(&str) -> Option<String>) -> bool {
    ["SSL_CERT_FILE", "SSL_CERT_DIR"]
        .iter()
        .any(|name| var(name).is_some_and(|v| !v.trim().is_empty()))
}

/// The functions' HTTPS client: the compiled-in roots, and the system's
/// store only where `SSL_CERT_FILE` or `SSL_CERT_DIR` point at one.
pub(crate) fn function_https_client(var: impl Fn(&str) -> Option<String>) -> SharedHttpClient {
    let trust = TrustStore::empty()
        .with_native_roots(extra_roots_named(var))
        .with_pem_certificate(AWS_ROOTS_PEM.as_bytes());
    let context = TlsContext::builder().with_trust_store(trust).build();
    // `build` cannot fail (it only stores what it was given); the default
    // context, the SDK's own, is the fallback all the same.
    let context = context.unwrap_or_default();
    aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(CryptoMode::AwsLc))
        .tls_context(context)
        .build_https()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;

    #[test]
    fn the_compiled_in_roots_are_amazons_five_and_all_parse() {
        let certs: Vec<CertificateDer<'_>> =
            CertificateDer::pem_slice_iter(AWS_ROOTS_PEM.as_bytes())
                .collect::<Result<_, _>>()
                .unwrap();
        assert_eq!(certs.len(), 5);
        let mut roots = rustls::RootCertStore::empty();
        let (valid, invalid) = roots.add_parsable_certificates(certs);
        assert_eq!((valid, invalid), (5, 0));
        for name in [
            "Amazon Root CA 1",
            "Amazon Root CA 4",
            "Starfield Services Root",
        ] {
            assert!(AWS_ROOTS_PEM.contains(name), "{name}");
        }
    }

    #[test]
    fn the_system_store_is_read_only_where_the_environment_names_one() {
        assert!(!extra_roots_named(|_| None));
        assert!(!extra_roots_named(|_| Some(" ".into())));
        assert!(extra_roots_named(|name| {
            (name == "SSL_CERT_FILE").then(|| "/opt/proxy-ca.pem".into())
        }));
        assert!(extra_roots_named(
            |name| (name == "SSL_CERT_DIR").then(|| "/opt/ca".into())
        ));
    }
}
