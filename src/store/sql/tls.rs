//! TLS to a `PostgreSQL` store: libpq's `sslmode` (`disable`, `prefer`, `require`, `verify-ca`,
//! `verify-full`) and `sslrootcert` read from the URL (the `postgres` crate parses only the first
//! three modes, and no certificate options), over rustls with the ring provider. As in libpq,
//! `prefer` (the default) and `require` encrypt without checking the server's certificate, unless
//! `sslrootcert` is given, when `require` checks it like `verify-ca`; `verify-ca` checks the chain
//! up to the root; `verify-full` also checks that the certificate names the host. A Unix socket
//! never uses TLS. Reads the root certificate file.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    fn parse(s: &str) -> Result<SslMode, String> {
        Ok(match s {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(format!(
                    "sslmode={other} is not one of disable, prefer, require, verify-ca, verify-full"
                ));
            }
        })
    }

    /// The mode the `postgres` crate negotiates with (it never checks certificates itself).
    pub(crate) fn negotiated(self) -> postgres::config::SslMode {
        match self {
            SslMode::Disable => postgres::config::SslMode::Disable,
            SslMode::Prefer => postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                postgres::config::SslMode::Require
            }
        }
    }
}

/// Where the trusted roots come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RootCert {
    /// A PEM file of one or more CA certificates.
    File(PathBuf),
    /// The operating system's trust store (`sslrootcert=system`).
    System,
}

/// The URL's TLS settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TlsSettings {
    pub(crate) mode: SslMode,
    pub(crate) root_cert: Option<RootCert>,
}

/// Takes `sslmode` and `sslrootcert` out of a `postgres://` URL: the URL left for the `postgres`
/// crate, and the settings. Any other TLS option (client certificates) is refused by name.
pub(crate) fn split_url(url: &str) -> Result<(String, TlsSettings), String> {
    let mut settings = TlsSettings {
        mode: SslMode::Prefer,
        root_cert: None,
    };
    let Some((head, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), settings));
    };
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "sslmode" => settings.mode = SslMode::parse(&percent_decode(v))?,
            "sslrootcert" => {
                let v = percent_decode(v);
                settings.root_cert = Some(if v == "system" {
                    RootCert::System
                } else {
                    RootCert::File(PathBuf::from(v))
                });
            }
            "sslcert" | "sslkey" | "sslpassword" | "sslcrl" => {
                return Err(format!(
                    "{k} (client certificates) is not supported; authenticate with a password"
                ));
            }
            _ => kept.push(pair),
        }
    }
    if settings.mode == SslMode::Disable && settings.root_cert.is_some() {
        return Err("sslrootcert has no effect with sslmode=disable".to_owned());
    }
    let rest = if kept.is_empty() {
        head.to_owned()
    } else {
        format!("{head}?{}", kept.join("&"))
    };
    Ok((rest, settings))
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b'+', _) => {
                out.push(b' ');
                i += 1;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The rustls connector for `settings`, or `None` where no TLS is attempted (`disable`).
pub(crate) fn connector(settings: &TlsSettings) -> Result<Option<MakeRustlsConnect>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier: Arc<dyn ServerCertVerifier> = match (settings.mode, &settings.root_cert) {
        (SslMode::Disable, _) => return Ok(None),
        (SslMode::Prefer | SslMode::Require, None) => Arc::new(Unverified {
            algorithms: provider.signature_verification_algorithms,
        }),
        (SslMode::VerifyCa | SslMode::VerifyFull, None) => {
            return Err(
                "sslmode=verify-ca and verify-full need sslrootcert=PATH (the PEM certificate of \
                 the CA that signed the server's) or sslrootcert=system"
                    .to_owned(),
            );
        }
        (mode, Some(root)) => {
            let roots = Arc::new(root_store(root)?);
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, Arc::clone(&provider))
                .build()
                .map_err(|e| format!("cannot check certificates with these roots: {e}"))?;
            if mode == SslMode::VerifyFull {
                webpki
            } else {
                Arc::new(ChainOnly(webpki))
            }
        }
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up failed: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(Some(MakeRustlsConnect::new(config)))
}

fn root_store(root: &RootCert) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    match root {
        RootCert::File(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(Iterator::collect::<Result<Vec<_>, _>>)
                .map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
            let (added, _) = store.add_parsable_certificates(certs);
            if added == 0 {
                return Err(format!(
                    "sslrootcert {} holds no usable PEM certificate",
                    path.display()
                ));
            }
        }
        RootCert::System => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = store.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(
                    "sslrootcert=system: the system trust store holds no certificates".to_owned(),
                );
            }
        }
    }
    Ok(store)
}

/// `prefer` and `require` without a root: the connection is encrypted, the server's certificate
/// is not checked (libpq's behaviour). The handshake's signatures are still verified, so the
/// session is bound to the certificate the server presented.
#[derive(Debug)]
struct Unverified {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// `verify-ca`: the full check of the chain, validity and usage, but not the host name
/// (webpki checks the name last, after the chain has passed).
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The TLS failure inside a connection error, in words, when there is one: a certificate the
/// roots do not vouch for, a name it does not carry, a server without TLS.
pub(crate) fn tls_failure(e: &postgres::Error) -> Option<String> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = source {
        // tokio-rustls wraps rustls's error in an `io::Error`, whose `source()` skips it.
        let inner = s
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
            .and_then(|e| e.downcast_ref::<rustls::Error>());
        if let Some(r) = inner.or_else(|| s.downcast_ref::<rustls::Error>()) {
            return Some(match r {
                rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
                    "the server's certificate is not signed by a CA in sslrootcert".to_owned()
                }
                rustls::Error::InvalidCertificate(
                    CertificateError::NotValidForName
                    | CertificateError::NotValidForNameContext { .. },
                ) => "the server's certificate does not name the host in the URL".to_owned(),
                other => format!("the TLS handshake failed: {other}"),
            });
        }
        source = s.source();
    }
    let text = e.to_string();
    text.contains("server does not support TLS")
        .then(|| "the server does not offer TLS (sslmode asks for it)".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libpq_tls_options_leave_the_url_and_the_rest_stays() {
        let (url, s) = split_url(
            "postgres://ci@db:5432/gate?connect_timeout=3&sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem",
        )
        .expect("parses");
        assert_eq!(url, "postgres://ci@db:5432/gate?connect_timeout=3");
        assert_eq!(s.mode, SslMode::VerifyFull);
        assert_eq!(s.root_cert, Some(RootCert::File("/etc/ca.pem".into())));
        let (url, s) = split_url("postgres://ci@db/gate").expect("parses");
        assert_eq!(
            (url.as_str(), s.mode),
            ("postgres://ci@db/gate", SslMode::Prefer)
        );
        let (_, s) = split_url("postgres://db/g?sslmode=require&sslrootcert=system").expect("ok");
        assert_eq!(s.root_cert, Some(RootCert::System));
    }

    #[test]
    fn unknown_modes_and_client_certificates_are_refused_by_name() {
        let e = split_url("postgres://db/g?sslmode=allow").expect_err("refused");
        assert!(e.contains("sslmode=allow"), "{e}");
        let e = split_url("postgres://db/g?sslcert=c.pem").expect_err("refused");
        assert!(e.contains("sslcert"), "{e}");
        let Err(e) = connector(&TlsSettings {
            mode: SslMode::VerifyFull,
            root_cert: None,
        }) else {
            panic!("verify-full needs a root");
        };
        assert!(e.contains("sslrootcert"), "{e}");
        let Err(e) = connector(&TlsSettings {
            mode: SslMode::VerifyCa,
            root_cert: Some(RootCert::File("/nonexistent/ca.pem".into())),
        }) else {
            panic!("a missing root file is refused");
        };
        assert!(e.contains("/nonexistent/ca.pem"), "{e}");
    }
}
