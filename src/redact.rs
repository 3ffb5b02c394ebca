//! Redaction of credentials from every message utilgate prints or stores: the values of the
//! known secret variables (registered once, at start, by `commands::run`) and anything shaped
//! like a GitHub token (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` and `github_pat_` followed by
//! token characters), whatever its source: an API error body that echoes the Authorization
//! header, a harness that prints its environment, a config value. No I/O; the registry is a
//! process-wide list so that every output path (errors, warnings, progress, stored stderr
//! tails, GitHub error messages) uses the one function [`redact`].

use std::borrow::Cow;
use std::sync::{PoisonError, RwLock};

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
        let value = value.trim().to_owned();
        if value.len() >= MIN_SECRET_LEN && !secrets.contains(&value) {
            secrets.push(value);
        }
    }
    // Longest first, so a secret that contains another is masked whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
}

/// `text` with every registered secret and every token-shaped string masked.
#[must_use]
pub fn redact(text: &str) -> String {
    let secrets = SECRETS.read().unwrap_or_else(PoisonError::into_inner);
    redact_with(text, &secrets).into_owned()
}

/// `text` with each of `secrets` (exact values) and every token-shaped string masked. Pure.
#[must_use]
pub fn redact_with<'a, S: AsRef<str>>(text: &'a str, secrets: &[S]) -> Cow<'a, str> {
    let mut out = Cow::Borrowed(text);
    for secret in secrets {
        let secret = secret.as_ref();
        if secret.len() >= MIN_SECRET_LEN && out.contains(secret) {
            out = Cow::Owned(out.replace(secret, MASK));
        }
    }
    match mask_token_shapes(&out) {
        Some(masked) => Cow::Owned(masked),
        None => out,
    }
}

fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
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
        let prefix = starts_word
            .then(|| {
                TOKEN_PREFIXES
                    .iter()
                    .find(|p| bytes[i..].starts_with(p.as_bytes()))
            })
            .flatten();
        let Some(prefix) = prefix else {
            i += 1;
            continue;
        };
        let body_start = i + prefix.len();
        let body_len = bytes[body_start..]
            .iter()
            .take_while(|b| is_token_char(**b))
            .count();
        if body_len < MIN_TOKEN_CHARS {
            i = body_start;
            continue;
        }
        let masked = out.get_or_insert_with(|| String::with_capacity(text.len()));
        masked.push_str(&text[copied..body_start]);
        masked.push_str(MASK);
        i = body_start + body_len;
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

    #[test]
    fn unchanged_text_is_borrowed() {
        assert!(matches!(
            redact_with("plain", &["abcdefghij"]),
            Cow::Borrowed(_)
        ));
    }
}
