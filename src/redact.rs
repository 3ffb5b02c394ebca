//! Redaction of credentials from every message utilgate prints or stores: the values of the
//! known secret variables (registered once, at start, by `commands::run`) and anything shaped
//! like a GitHub token (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` and `github_pat_` followed by
//! token characters), whatever its source: an API error body that echoes the Authorization
//! header, a harness that prints its environment, a config value. No I/O; the registry is a
//! process-wide list so that every output path (errors, warnings, progress, stored stderr
//! tails, GitHub error messages) uses the one function [`redact`].
//!
//! An API error may echo a credential encoded rather than as it is: percent-encoded in a URL
//! (`ghs%5F...`), or base64 in a Basic `Authorization` header (alone, or as
//! `x-access-token:<token>`, the form git and GitHub's apps use). A registered value is masked
//! in each of those forms too, and a token shape is recognised percent-encoded.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::{PoisonError, RwLock};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};

/// The credential variables of CI systems that utilgate knows: their values are masked in
/// every message, and they are removed from the harness's environment (a suite's
/// `env_passthrough` lists those its harness needs). GitHub (the job token, the `gh` CLI's,
/// Enterprise), GitHub Actions (the OIDC token request, the runtime, cache and results
/// services), GitLab CI, Buildkite, and libpq's password (the `PostgreSQL` store's).
pub const CREDENTIAL_VARS: [&str; 16] = [
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "GH_ENTERPRISE_TOKEN",
    "GITHUB_ENTERPRISE_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_URL",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_RUNTIME_URL",
    "ACTIONS_CACHE_URL",
    "ACTIONS_RESULTS_URL",
    "CI_JOB_TOKEN",
    "CI_JOB_JWT",
    "CI_JOB_JWT_V2",
    "CI_REGISTRY_PASSWORD",
    "BUILDKITE_AGENT_ACCESS_TOKEN",
    "PGPASSWORD",
];

/// What a redacted secret is replaced with.
pub const MASK: &str = "***";

/// GitHub's token prefixes (personal, OAuth, user-to-server, server-to-server, refresh, and
/// fine-grained personal tokens).
const TOKEN_PREFIXES: [&str; 6] = ["github_pat_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_"];

/// The fewest token characters after a prefix that make a string token-shaped. Real tokens
/// carry 36 or more; a shorter run (`ghp_` in prose, `ghs_x` in a test name) is left alone.
const MIN_TOKEN_CHARS: usize = 16;

/// A registered value shorter than this is never masked: masking "1" or "true" everywhere
/// would garble every message without protecting anything.
const MIN_SECRET_LEN: usize = 8;

/// The registered secrets in every form [`encoded_forms`] gives, longest first.
static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Registers secret values (e.g. the `GITHUB_TOKEN` of this process) to be masked by
/// [`redact`] from now on. Empty and very short values are ignored.
pub fn register_secrets<I, S>(values: I)
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut secrets = SECRETS.write().unwrap_or_else(PoisonError::into_inner);
    for value in values {
        let value: String = value.into();
        let value = value.trim();
        if value.len() >= MIN_SECRET_LEN {
            // Each encoded form once, here, rather than on every message redacted.
            secrets.extend(encoded_forms(value));
        }
    }
    secrets.sort();
    secrets.dedup();
    // Longest first, so a secret that contains another is masked whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
}

/// `text` with every registered secret and every token-shaped string masked.
#[must_use]
pub fn redact(text: &str) -> String {
    let forms = SECRETS.read().unwrap_or_else(PoisonError::into_inner);
    mask(text, &forms).into_owned()
}

/// `text` with each of `secrets` (in each of its encoded forms) and every token-shaped string
/// masked. Pure.
#[must_use]
pub fn redact_with<'a, S: AsRef<str>>(text: &'a str, secrets: &[S]) -> Cow<'a, str> {
    let mut forms: Vec<String> = secrets
        .iter()
        .map(AsRef::as_ref)
        .filter(|s| s.len() >= MIN_SECRET_LEN)
        .flat_map(encoded_forms)
        .collect();
    forms.sort_by_key(|s| std::cmp::Reverse(s.len()));
    mask(text, &forms)
}

/// Whether `text` holds a token-shaped string anywhere (what [`redact`] would mask without
/// any registered secret). Pure.
#[must_use]
pub(crate) fn has_token_shape(text: &str) -> bool {
    mask_token_shapes(text).is_some()
}

/// `text` with each of `forms` (exact strings, longest first) and every token-shaped string
/// masked.
fn mask<'a>(text: &'a str, forms: &[String]) -> Cow<'a, str> {
    let mut out = Cow::Borrowed(text);
    for form in forms {
        if out.contains(form.as_str()) {
            out = Cow::Owned(out.replace(form.as_str(), MASK));
        }
    }
    match mask_token_shapes(&out) {
        Some(masked) => Cow::Owned(masked),
        None => out,
    }
}

/// `secret` as it is and as an error body may echo it: percent-encoded (every byte but letters
/// and digits, upper- and lower-case hex) and base64 (standard and URL-safe alphabets, with and
/// without padding) of the value alone and of `x-access-token:<value>`, longest first.
fn encoded_forms(secret: &str) -> Vec<String> {
    let mut forms = vec![secret.to_owned()];
    // RFC 3986 keeps `-._~` as they are; some encoders escape everything but letters and digits.
    for keep in [&b"-._~"[..], &b""[..]] {
        let mut upper = String::with_capacity(secret.len() * 3);
        for b in secret.bytes() {
            if b.is_ascii_alphanumeric() || keep.contains(&b) {
                upper.push(char::from(b));
            } else {
                let _ = write!(upper, "%{b:02X}");
            }
        }
        if upper != secret {
            let lower = percent_lower(&upper);
            forms.push(upper);
            forms.push(lower);
        }
    }
    for value in [format!("x-access-token:{secret}"), secret.to_owned()] {
        for engine in [&STANDARD, &URL_SAFE, &STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            forms.push(engine.encode(&value));
        }
    }
    forms.sort();
    forms.dedup();
    // Longest first, so a form that contains another is masked whole.
    forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
    forms
}

/// A percent-encoded string with its `%XX` escapes in lower-case hex.
fn percent_lower(encoded: &str) -> String {
    let mut out = String::with_capacity(encoded.len());
    let mut rest = encoded;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let escape = rest.get(at..at + 3).unwrap_or(&rest[at..]);
        out.push_str(&escape.to_ascii_lowercase());
        rest = &rest[at + escape.len()..];
    }
    out.push_str(rest);
    out
}

fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The percent-encoded underscore (`%5F` or `%5f`) at the start of `bytes`.
fn is_encoded_underscore(bytes: &[u8]) -> bool {
    bytes.len() >= 3 && bytes[0] == b'%' && bytes[1] == b'5' && matches!(bytes[2], b'F' | b'f')
}

/// The length in bytes of the token prefix at the start of `bytes`, its underscores as they
/// are or percent-encoded, or `None`.
fn prefix_len(bytes: &[u8]) -> Option<usize> {
    TOKEN_PREFIXES.iter().find_map(|prefix| {
        let mut at = 0;
        for &want in prefix.as_bytes() {
            if bytes.get(at) == Some(&want) {
                at += 1;
            } else if want == b'_' && is_encoded_underscore(&bytes[at..]) {
                at += 3;
            } else {
                return None;
            }
        }
        Some(at)
    })
}

/// The token characters at the start of `bytes`: their length in bytes and their count (a
/// percent-encoded underscore is three bytes and one character).
fn body_len(bytes: &[u8]) -> (usize, usize) {
    let (mut at, mut chars) = (0, 0);
    while at < bytes.len() {
        if is_token_char(bytes[at]) {
            at += 1;
        } else if is_encoded_underscore(&bytes[at..]) {
            at += 3;
        } else {
            break;
        }
        chars += 1;
    }
    (at, chars)
}

/// `Some(text)` with token-shaped strings masked (the prefix kept, so the reader knows what
/// kind of credential leaked), or `None` when there is none.
fn mask_token_shapes(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        // A token starts a word: `xghp_...` is some other identifier.
        let starts_word = i == 0 || !is_token_char(bytes[i - 1]);
        let Some(prefix) = starts_word.then(|| prefix_len(&bytes[i..])).flatten() else {
            i += 1;
            continue;
        };
        let body_start = i + prefix;
        let (body_bytes, body_chars) = body_len(&bytes[body_start..]);
        if body_chars < MIN_TOKEN_CHARS {
            i = body_start;
            continue;
        }
        let masked = out.get_or_insert_with(|| String::with_capacity(text.len()));
        masked.push_str(&text[copied..body_start]);
        masked.push_str(MASK);
        i = body_start + body_bytes;
        copied = i;
    }
    out.map(|mut masked| {
        masked.push_str(&text[copied..]);
        masked
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: [&str; 0] = [];

    #[test]
    fn token_shapes_are_masked_keeping_the_prefix() {
        let cases = [
            (
                "Authorization: token ghp_abcdefghijklmnopqrstuvwxyz0123456789 was echoed",
                "Authorization: token ghp_*** was echoed",
            ),
            (
                "bearer ghs_ABCDEFGHIJKLMNOPQRST, and gho_0123456789abcdefXYZ.",
                "bearer ghs_***, and gho_***.",
            ),
            (
                "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
                "github_pat_***",
            ),
            ("ghp_short stays", "ghp_short stays"),
            (
                "xghp_abcdefghijklmnopqrstuvwxyz is a word",
                "xghp_abcdefghijklmnopqrstuvwxyz is a word",
            ),
            ("nothing here", "nothing here"),
            ("", ""),
            ("ghp_", "ghp_"),
            ("é ghu_abcdefghijklmnopqrstu é", "é ghu_*** é"),
            ("ünïcödé — ✓ only", "ünïcödé — ✓ only"),
        ];
        for (text, want) in cases {
            assert_eq!(redact_with(text, &NONE), want, "{text:?}");
        }
    }

    #[test]
    fn registered_values_are_masked_whatever_their_shape() {
        let secrets = ["s3cr3t-value-xyz", "s3cr3t-value-xyz-longer"];
        let text = "a s3cr3t-value-xyz-longer and s3cr3t-value-xyz";
        let mut sorted = secrets.to_vec();
        sorted.sort_by_key(|s| std::cmp::Reverse(s.len()));
        assert_eq!(redact_with(text, &sorted), "a *** and ***");
        // Short values are not secrets worth garbling every message for.
        assert_eq!(redact_with("exit 1", &["1"]), "exit 1");
    }

    /// #28 item 9: an API error echoing the token URL-encoded or in a Basic header.
    #[test]
    fn encoded_secrets_and_encoded_token_shapes_are_masked() {
        let token = "ghs_EncodedToken0123456789abcdefSECRET";
        let encoded = [
            token.replace('_', "%5F"),
            token.replace('_', "%5f"),
            STANDARD.encode(token),
            URL_SAFE_NO_PAD.encode(token),
            STANDARD.encode(format!("x-access-token:{token}")),
            STANDARD_NO_PAD.encode(format!("x-access-token:{token}")),
        ];
        for form in &encoded {
            let text = format!("401 for https://api.example/x?t={form} (Basic {form})");
            let got = redact_with(&text, &[token]);
            assert!(!got.contains(form.as_str()), "{form} left in {got}");
            assert!(got.contains("***"), "{got}");
        }
        // Without registration, the percent-encoded shape alone is recognised.
        let text = format!(
            "GET /repos?access_token={}&page=2",
            token.replace('_', "%5F")
        );
        assert_eq!(
            redact_with(&text, &NONE),
            "GET /repos?access_token=ghs%5F***&page=2"
        );
        let pat = "github%5Fpat%5F11ABCDEFG0123456789%5Fabcdefghijklmnop";
        assert_eq!(redact_with(pat, &NONE), "github%5Fpat%5F***");
        // A password with reserved characters, percent-encoded in a connection URL.
        let password = "p@ss:w/rd-0123456789";
        let url = "postgres://ingest:p%40ss%3Aw%2Frd-0123456789@db/utilgate";
        assert_eq!(
            redact_with(url, &[password]),
            "postgres://ingest:***@db/utilgate"
        );
    }

    #[test]
    fn unchanged_text_is_borrowed() {
        assert!(matches!(
            redact_with("plain", &["abcdefghij"]),
            Cow::Borrowed(_)
        ));
    }
}
