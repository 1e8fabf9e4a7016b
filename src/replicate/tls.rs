//! TLS for the TCP transport (feature `write`, native): rustls on ring,
//! TLS 1.3 only. A publisher has a certificate and key, and may let in
//! only subscribers that present one of a list of certificates; a
//! subscriber trusts a CA file or one pinned certificate (its SHA-256
//! fingerprint). [`self_signed`] makes a pair for a first try
//! (`dendro tls selfsigned`).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{ring, verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::{ParsedCertificate, WebPkiClientVerifier};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig,
    SignatureScheme,
};

use crate::error::{Error, Result};

/// ring's provider. rustls marks it deprecated because ring has no
/// post-quantum key exchange; aws-lc-rs has one but needs cmake and a C
/// toolchain this crate does not ask for. X25519 and the P-curves remain.
#[allow(deprecated)]
fn provider() -> Arc<CryptoProvider> {
    Arc::new(ring::default_provider())
}

fn invalid(file: &Path, message: String) -> Error {
    Error::Invalid {
        file: file.display().to_string(),
        message,
    }
}

/// Every certificate in a PEM file; none is an error.
pub fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|iter| iter.collect::<std::result::Result<Vec<_>, _>>())
        .map_err(|e| invalid(path, format!("cannot read PEM certificates: {e}")))?;
    if certs.is_empty() {
        return Err(invalid(path, "holds no PEM certificate".into()));
    }
    Ok(certs)
}

/// The private key in a PEM file.
pub fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>> {
    PrivateKeyDer::from_pem_file(path)
        .map_err(|e| invalid(path, format!("cannot read a PEM private key: {e}")))
}

/// A certificate's SHA-256 fingerprint, lowercase hex.
pub fn fingerprint(cert: &[u8]) -> String {
    let digest = ::ring::digest::digest(&::ring::digest::SHA256, cert);
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads a fingerprint written as 64 hex digits, with or without colons.
pub fn parse_fingerprint(text: &str) -> Result<[u8; 32]> {
    let hex: String = text.chars().filter(|c| *c != ':').collect();
    let bad = || Error::Invalid {
        file: "--tls-pin".into(),
        message: format!("{text:?} is not a SHA-256 fingerprint (64 hex digits)"),
    };
    if hex.len() != 64 || !hex.is_ascii() {
        return Err(bad());
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    Ok(out)
}

/// A publisher's TLS: its certificate chain and key, and optionally the
/// certificates of the only subscribers it lets in (each trusted as its
/// own anchor, so a subscriber must hold the key of one of them).
pub fn server_config(cert: &Path, key: &Path, clients: Option<&Path>) -> Result<Arc<ServerConfig>> {
    let provider = provider();
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| invalid(cert, format!("cannot configure TLS: {e}")))?;
    let builder = match clients {
        None => builder.with_no_client_auth(),
        Some(path) => {
            let mut roots = RootCertStore::empty();
            for known in load_certs(path)? {
                roots
                    .add(known)
                    .map_err(|e| invalid(path, format!("not a usable certificate: {e}")))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| invalid(path, format!("cannot check client certificates: {e}")))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder
        .with_single_cert(load_certs(cert)?, load_key(key)?)
        .map_err(|e| invalid(key, format!("the key does not suit the certificate: {e}")))?;
    Ok(Arc::new(config))
}

/// What a subscriber trusts.
#[derive(Debug, Clone)]
pub enum Trust {
    /// Certificates signed by the CAs in this PEM file, for the name the
    /// subscriber connects to.
    Ca(std::path::PathBuf),
    /// The one certificate with this SHA-256 fingerprint, whatever its
    /// names, while it is valid.
    Pin([u8; 32]),
}

/// A subscriber's TLS settings.
#[derive(Debug, Clone)]
pub struct ClientTls {
    /// The rustls configuration.
    pub config: Arc<ClientConfig>,
    /// The name the publisher's certificate must carry (with a CA).
    pub server_name: ServerName<'static>,
}

/// A subscriber's TLS: whom it trusts, the name it expects, and its own
/// certificate and key when the publisher asks for one.
pub fn client_config(
    trust: &Trust,
    server_name: &str,
    identity: Option<(&Path, &Path)>,
) -> Result<ClientTls> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| Error::Invalid {
            file: "tls".into(),
            message: format!("cannot configure TLS: {e}"),
        })?;
    let builder = match trust {
        Trust::Ca(path) => {
            let mut roots = RootCertStore::empty();
            for ca in load_certs(path)? {
                roots
                    .add(ca)
                    .map_err(|e| invalid(path, format!("not a usable CA certificate: {e}")))?;
            }
            builder.with_root_certificates(roots)
        }
        Trust::Pin(pin) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Pinned {
                pin: *pin,
                provider,
            })),
    };
    let config = match identity {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => builder
            .with_client_auth_cert(load_certs(cert)?, load_key(key)?)
            .map_err(|e| invalid(key, format!("the key does not suit the certificate: {e}")))?,
    };
    let server_name =
        ServerName::try_from(server_name.to_string()).map_err(|e| Error::Invalid {
            file: server_name.to_string(),
            message: format!("not a name a certificate can carry: {e}"),
        })?;
    Ok(ClientTls {
        config: Arc::new(config),
        server_name,
    })
}

/// Trusts one certificate, by fingerprint, while it is within its validity
/// period; its names are not checked (the pin is the identity).
#[derive(Debug)]
struct Pinned {
    pin: [u8; 32],
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _name: &ServerName<'_>,
        _ocsp: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        let seen = ::ring::digest::digest(&::ring::digest::SHA256, end_entity);
        if seen.as_ref() != self.pin {
            return Err(rustls::Error::General(format!(
                "the publisher's certificate (SHA-256 {}) is not the pinned one",
                fingerprint(end_entity)
            )));
        }
        // The dates (and, for a self-signed one, its signature) are checked
        // with the certificate as its own anchor; one issued by a CA has no
        // anchor here, and its pin is what is trusted.
        let mut roots = RootCertStore::empty();
        roots.add(end_entity.clone().into_owned())?;
        let parsed = ParsedCertificate::try_from(end_entity)?;
        let algorithms = self.provider.signature_verification_algorithms.all;
        match rustls::client::verify_server_cert_signed_by_trust_anchor(
            &parsed,
            &roots,
            intermediates,
            now,
            algorithms,
        ) {
            Ok(()) | Err(rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)) => {
                Ok(ServerCertVerified::assertion())
            }
            Err(e) => Err(e),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// A self-signed certificate and its key, in PEM, and its fingerprint.
#[derive(Debug, Clone)]
pub struct SelfSigned {
    /// The certificate, PEM.
    pub cert_pem: String,
    /// The private key (ECDSA P-256), PEM.
    pub key_pem: String,
    /// The certificate's SHA-256 fingerprint, for `--tls-pin`.
    pub fingerprint: String,
}

/// Makes a self-signed certificate for `names` (DNS names or IP
/// addresses) valid from `not_before` to `not_after` (whole UTC days),
/// usable by a publisher and by a subscriber.
pub fn self_signed(
    names: &[String],
    not_before: SystemTime,
    not_after: SystemTime,
) -> Result<SelfSigned> {
    let fail = |e: rcgen::Error| Error::Invalid {
        file: "tls selfsigned".into(),
        message: format!("cannot make a certificate: {e}"),
    };
    let mut params = rcgen::CertificateParams::new(names.to_vec()).map_err(fail)?;
    let key = rcgen::KeyPair::generate().map_err(fail)?;
    // A name of its own, so two such certificates never share a subject.
    let tag = fingerprint(key.public_key_raw());
    let first = names.first().map_or("dendro", String::as_str);
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(
        rcgen::DnType::CommonName,
        format!("dendro replication {first} {}", &tag[..12]),
    );
    params.extended_key_usages = vec![
        rcgen::ExtendedKeyUsagePurpose::ServerAuth,
        rcgen::ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let (y, m, d) = civil(not_before);
    params.not_before = rcgen::date_time_ymd(y, m, d);
    let (y, m, d) = civil(not_after);
    params.not_after = rcgen::date_time_ymd(y, m, d);
    let cert = params.self_signed(&key).map_err(fail)?;
    Ok(SelfSigned {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        fingerprint: fingerprint(cert.der()),
    })
}

/// A time as its UTC day (days since 1970 to a civil date, proleptic
/// Gregorian), for rcgen.
fn civil(at: SystemTime) -> (i32, u8, u8) {
    let secs = match at.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    };
    let days = secs.div_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    let year = (yoe + era * 400 + i64::from(month <= 2)) as i32;
    (year, month, day)
}

/// A day, for the callers of [`self_signed`].
pub const DAY: Duration = Duration::from_secs(86_400);
