//! What one value holds, judged by its text and the name it goes by, without I/O: a GitHub
//! token (a prefixed shape anywhere in the value, or a classic 40-hex token beside a token-like
//! name or word, either as it is or base64-encoded), or a database password (in a `postgres://`
//! URL anywhere in the value, or libpq's `password=` keyword). The credential check
//! ([`super::credentials`]) and the harness's environment scrub use this one judgement, so what
//! `run` refuses to start a harness beside is also what a trusted harness never inherits.
//!
//! Each rule is here because a second security review (#28) got a value past the first check,
//! which looked only at a value's start and at `postgres://` URLs: `Bearer ghp_...`, a JSON blob
//! (`${{ toJson(github) }}` carries the job's token), a classic 40-hex token, and
//! `host=db password=...`.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};

/// GitHub's token prefixes (personal, OAuth, user-to-server, installation, refresh,
/// fine-grained): a value that starts with one counts, whatever its length.
pub const TOKEN_PREFIXES: &[&str] = &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"];

/// Words that, anywhere in a variable's name (`MY_BOT_TOKEN`) or in the word before a value
/// (`Bearer`, `"token":`, `x-access-token:`), make 40 hex digits a token.
const TOKEN_WORDS: &[&str] = &["TOKEN", "BEARER", "OAUTH", "AUTHORIZATION"];

/// Words that do so beside GitHub's name (`GITHUB_API_KEY`, `GH_SECRET`) only: on their own
/// they name other services' keys, some of them 40 hex digits too (Weights & Biases'
/// `WANDB_API_KEY`), which are no GitHub credential and which a harness may need.
const SECRET_WORDS: &[&str] = &["SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"];

/// Parts of a name that count only as a whole part (`GH_PAT`, `GITHUB_KEY`), never inside
/// another word (`PATH`, `KEYBOARD`, `AUTHOR`). `PAT` (a personal access token) alone counts;
/// the others beside GitHub's name.
const SECRET_PARTS: &[&str] = &["KEY", "AUTH", "PASS", "PW", "PWD"];

/// The length of a classic GitHub token (personal and OAuth tokens before April 2021): 40 hex
/// digits. A commit id has the same shape, so 40 hex digits alone are not a token; beside a
/// token-like name or word, or as a URL's user information, they are.
const CLASSIC_TOKEN_LEN: usize = 40;

/// The shortest run of base64 characters worth decoding: a token's prefix and 16 characters
/// (see `redact`) take at least 27.
const MIN_BASE64_LEN: usize = 24;

/// What a value holds; never the secret itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Secret {
    /// A GitHub token of today's shapes (`ghp_`, `ghs_`, `github_pat_`, ...), anywhere in the
    /// value, as it is or base64-encoded.
    GithubToken,
    /// A classic GitHub token: 40 hex digits beside a token-like name or word, or as a URL's
    /// user information.
    ClassicToken,
    /// A database password: a `postgres://` URL's, or libpq's `password=` keyword.
    DbPassword,
}

/// What the value of variable `name` holds, if anything.
#[must_use]
pub(crate) fn secret_in(name: &str, value: &str) -> Option<Secret> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    if has_token(value) {
        return Some(Secret::GithubToken);
    }
    if has_classic_token(Some(name), value) {
        return Some(Secret::ClassicToken);
    }
    // A Basic `Authorization` header, a `.dockerconfigjson`, a token a script encoded.
    for decoded in base64_words(value) {
        if has_token(&decoded) {
            return Some(Secret::GithubToken);
        }
        if has_classic_token(None, &decoded) {
            return Some(Secret::ClassicToken);
        }
    }
    db_password(value).then_some(Secret::DbPassword)
}

/// Whether `value` carries a database password: a `postgres://` URL with one anywhere in it,
/// or libpq's keyword form (`host=db user=gate password=...`).
#[must_use]
pub(crate) fn db_password(value: &str) -> bool {
    embedded_urls(value).any(|url| url_password(url).is_some()) || conninfo_password(value)
}

/// Whether `value` names a `PostgreSQL` store (as the store itself decides: `store::sql`).
#[must_use]
pub(crate) fn is_postgres_url(value: &str) -> bool {
    value.starts_with("postgres://") || value.starts_with("postgresql://")
}

/// The password a `postgres://` (or `postgresql://`) URL carries, in its user information
/// (`USER:PASSWORD@`) or as a `password=` query parameter; `None` for any other text or a URL
/// without one. The value is returned only to be masked, never shown.
#[must_use]
pub fn url_password(value: &str) -> Option<&str> {
    let rest = value
        .strip_prefix("postgres://")
        .or_else(|| value.strip_prefix("postgresql://"))?;
    let (authority, query) = match rest.find(['/', '?', '#']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let from_userinfo = authority
        .rsplit_once('@')
        .and_then(|(userinfo, _)| userinfo.split_once(':'))
        .map(|(_, password)| password)
        .filter(|p| !p.is_empty());
    let from_query = || {
        let query = query.split_once('?')?.1;
        let query = query.split('#').next().unwrap_or(query);
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix("password="))
            .filter(|p| !p.is_empty())
    };
    from_userinfo.or_else(from_query)
}

/// A value that starts with a token prefix (any length), or holds a token shape anywhere
/// (a prefix at the start of a word and 16 or more token characters: `Bearer ghp_...`).
fn has_token(value: &str) -> bool {
    TOKEN_PREFIXES.iter().any(|p| value.starts_with(p)) || crate::redact::has_token_shape(value)
}

/// Whether `word` (a variable's name, or the word before a value) says "GitHub token".
fn token_like(word: &str) -> bool {
    let upper = word.to_ascii_uppercase();
    let parts: Vec<&str> = upper.split(|c: char| !c.is_ascii_alphanumeric()).collect();
    let github = upper.contains("GITHUB") || parts.contains(&"GH");
    TOKEN_WORDS.iter().any(|w| upper.contains(w))
        || parts.contains(&"PAT")
        || (github
            && (SECRET_WORDS.iter().any(|w| upper.contains(w))
                || parts.iter().any(|p| SECRET_PARTS.contains(p))))
}

/// 40 hex digits standing alone in `value`, where the variable's `name` (when given) or the
/// word before them says "GitHub token", or they are a URL's user information (`https://HEX@host`,
/// `https://user:HEX@host`).
fn has_classic_token(name: Option<&str>, value: &str) -> bool {
    let named = name.is_some_and(token_like);
    alphanumeric_words(value)
        .filter(|&(start, end)| {
            end - start == CLASSIC_TOKEN_LEN
                && value[start..end].bytes().all(|b| b.is_ascii_hexdigit())
        })
        .any(|(start, end)| {
            named || token_like(word_before(value, start)) || value[end..].starts_with('@')
        })
}

/// The byte ranges of the maximal runs of ASCII letters and digits in `value`.
fn alphanumeric_words(value: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let bytes = value.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() && !bytes[at].is_ascii_alphanumeric() {
            at += 1;
        }
        if at >= bytes.len() {
            return None;
        }
        let start = at;
        while at < bytes.len() && bytes[at].is_ascii_alphanumeric() {
            at += 1;
        }
        Some((start, at))
    })
}

/// The word before byte `at` of `value`, past the separators of a header, a JSON member or an
/// assignment (`Bearer `, `"token": "`, `token=`, `x-access-token:`).
fn word_before(value: &str, at: usize) -> &str {
    let head = value[..at]
        .trim_end_matches(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ':' | '=' | ','));
    let from = head
        .char_indices()
        .rev()
        .find(|&(_, c)| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .map_or(0, |(i, c)| i + c.len_utf8());
    &head[from..]
}

/// Each run of base64 characters (either alphabet) long enough to hide a token, decoded; runs
/// that do not decode are skipped.
fn base64_words(value: &str) -> impl Iterator<Item = String> + '_ {
    value
        .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '-' | '_' | '=')))
        .map(|word| word.trim_end_matches('='))
        .filter(|word| word.len() >= MIN_BASE64_LEN)
        .filter_map(|word| {
            STANDARD_NO_PAD
                .decode(word)
                .or_else(|_| URL_SAFE_NO_PAD.decode(word))
                .ok()
        })
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

/// Every `postgres://` or `postgresql://` URL in `value`, each up to the next space or quote.
fn embedded_urls(value: &str) -> impl Iterator<Item = &str> + '_ {
    value.match_indices("postgres").filter_map(|(at, _)| {
        let url = &value[at..];
        let end = url
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>'))
            .unwrap_or(url.len());
        let url = &url[..end];
        is_postgres_url(url).then_some(url)
    })
}

/// libpq's keyword form (`host=db port=5432 password=...`): a `password` keyword, at the start
/// of the value or after a space or quote, with a non-empty value (`password = 'it''s'` and
/// quoted values with `\'` escapes included). Keywords are matched case-insensitively.
fn conninfo_password(value: &str) -> bool {
    const KEYWORD: &str = "password";
    let lower = value.to_ascii_lowercase();
    lower.match_indices(KEYWORD).any(|(at, _)| {
        let before = lower[..at].chars().next_back();
        if before.is_some_and(|c| !(c.is_whitespace() || matches!(c, '"' | '\''))) {
            return false;
        }
        let rest = lower[at + KEYWORD.len()..].trim_start();
        let Some(rest) = rest.strip_prefix('=') else {
            return false;
        };
        let rest = rest.trim_start();
        match rest.strip_prefix('\'') {
            // A quoted value: non-empty unless the quote closes at once.
            Some(quoted) => !quoted.is_empty() && !quoted.starts_with('\''),
            None => rest.chars().next().is_some_and(|c| !c.is_whitespace()),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODERN: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    const CLASSIC: &str = "0123456789abcdef0123456789abcdef01234567";

    #[test]
    fn a_token_anywhere_in_a_value_counts() {
        for value in [
            MODERN.to_owned(),
            format!("Bearer {MODERN}"),
            format!("token {MODERN}"),
            format!(r#"{{"event":{{}},"token":"{MODERN}","repository":"o/r"}}"#),
            format!("https://x-access-token:{MODERN}@github.com/o/r.git"),
            // A value that only starts with the prefix still counts (any length).
            "github_pat_11AAAA".to_owned(),
        ] {
            assert_eq!(
                secret_in("ANYTHING", &value),
                Some(Secret::GithubToken),
                "{value}"
            );
        }
        // Prose naming a prefix, and an identifier that merely ends in one, are not tokens.
        for value in [
            "use a ghp_ token",
            "xghp_abcdefghijklmnopqrstuvwxyz",
            "hf_abc",
        ] {
            assert_eq!(secret_in("NOTE", value), None, "{value}");
        }
    }

    #[test]
    fn forty_hex_digits_count_beside_a_token_name_or_word_never_as_a_commit() {
        for name in [
            "GITHUB_PAT",
            "GH_PAT",
            "MY_BOT_TOKEN",
            "HOMEBREW_GITHUB_API_TOKEN",
            "GITHUB_API_KEY",
            "GH_SECRET",
            "OAUTH",
        ] {
            assert_eq!(
                secret_in(name, CLASSIC),
                Some(Secret::ClassicToken),
                "{name}"
            );
        }
        for value in [
            format!("Bearer {CLASSIC}"),
            format!("token {CLASSIC}"),
            format!(r#"{{"token": "{CLASSIC}"}}"#),
            format!("oauth_token={CLASSIC}&scope=repo"),
            format!("https://{CLASSIC}@github.com/o/r.git"),
            format!("https://bot:{CLASSIC}@github.com/o/r.git"),
            format!("https://x-access-token:{CLASSIC}@github.com/o/r.git"),
        ] {
            assert_eq!(
                secret_in("CONTEXT", &value),
                Some(Secret::ClassicToken),
                "{value}"
            );
        }
        // A commit id is 40 hex digits too: by itself, or named as one, it is no token.
        for (name, value) in [
            ("GITHUB_SHA", CLASSIC.to_owned()),
            ("UTILGATE_REV", CLASSIC.to_owned()),
            ("PATH", CLASSIC.to_owned()),
            // Another service's 40-hex key is no GitHub credential (and its harness needs it).
            ("WANDB_API_KEY", CLASSIC.to_owned()),
            ("MSG", format!("merge {CLASSIC} into main")),
            // 39 and 41 digits are not the shape.
            ("GH_PAT", CLASSIC[1..].to_owned()),
            ("GH_PAT", format!("{CLASSIC}8")),
        ] {
            assert_eq!(secret_in(name, &value), None, "{name}={value}");
        }
    }

    #[test]
    fn a_base64_encoded_token_counts() {
        use base64::engine::general_purpose::STANDARD;
        let basic = STANDARD.encode(format!("x-access-token:{MODERN}"));
        assert_eq!(
            secret_in("EXTRA", &format!("AUTHORIZATION: basic {basic}")),
            Some(Secret::GithubToken)
        );
        let classic = STANDARD.encode(format!("x-access-token:{CLASSIC}"));
        assert_eq!(
            secret_in("EXTRA", &format!("Basic {classic}")),
            Some(Secret::ClassicToken)
        );
        // Ordinary base64 is left alone.
        let harmless = STANDARD.encode("a perfectly ordinary sentence, nothing else");
        assert_eq!(secret_in("BLOB", &harmless), None);
    }

    #[test]
    fn a_database_password_counts_in_a_url_or_in_libpq_keywords() {
        for value in [
            "postgres://gate:s3cret@db/perf",
            "postgresql://gate@db/perf?sslmode=require&password=x1",
            r#"{"store": "postgres://gate:s3cret@db/perf", "x": 1}"#,
            "host=db.internal port=5432 user=gate password=s3cret dbname=perf",
            "password=s3cret",
            "host=/var/run/postgresql password = 'it''s a secret' dbname=perf",
            "dbname=perf PASSWORD=s3cret",
        ] {
            assert_eq!(secret_in("DSN", value), Some(Secret::DbPassword), "{value}");
        }
        for value in [
            "postgres://gate@db/perf",
            "host=db user=gate dbname=perf",
            "password=",
            "password= ''",
            "host=db password=",
            "--password=x is a flag, not a keyword",
            "mypassword=x",
            "https://u:pw@proxy:3128",
        ] {
            assert_eq!(secret_in("DSN", value), None, "{value}");
        }
    }

    #[test]
    fn url_password_reads_userinfo_and_query_only_of_postgres_urls() {
        assert_eq!(url_password("postgres://u:p%40ss@h/db"), Some("p%40ss"));
        assert_eq!(url_password("postgresql://u:pw@h:5432"), Some("pw"));
        assert_eq!(
            url_password("postgres://u@h/db?password=x1&sslmode=require"),
            Some("x1")
        );
        // An `@` in the path is not user information.
        assert_eq!(url_password("postgres://h/db@x:y"), None);
        assert_eq!(url_password("postgres://u:@h/db"), None);
        assert_eq!(url_password("https://u:pw@proxy:3128"), None);
        assert_eq!(url_password("store.db"), None);
    }

    #[test]
    fn empty_and_odd_values_hold_nothing_and_never_panic() {
        for value in ["", "   ", "é", "password", "'", "=", "postgres", "@"] {
            assert_eq!(secret_in("X", value), None, "{value:?}");
        }
        assert_eq!(word_before("ééé token ", "ééé token ".len()), "token");
        assert_eq!(word_before("", 0), "");
    }
}
