//! The store's queries written once, in `SQLite`'s dialect, rewritten for `PostgreSQL`: `?N`
//! placeholders become `$N` and `INSERT OR IGNORE` becomes `ON CONFLICT DO NOTHING`. The
//! schema is not translated: each migration is written in both dialects
//! (`store/migrations/`). Pure.

/// A query or statement for `PostgreSQL`.
pub(crate) fn translate(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut chars = sql.chars().peekable();
    let mut quoted = false;
    let mut next_bare = 1;
    while let Some(c) = chars.next() {
        if c == '\'' {
            quoted = !quoted;
            out.push(c);
        } else if c == '?' && !quoted {
            out.push('$');
            if chars.peek().is_some_and(char::is_ascii_digit) {
                while let Some(d) = chars.next_if(char::is_ascii_digit) {
                    out.push(d);
                }
            } else {
                out.push_str(&next_bare.to_string());
                next_bare += 1;
            }
        } else {
            out.push(c);
        }
    }
    if let Some(rest) = strip_prefix_ci(out.trim_start(), "INSERT OR IGNORE INTO") {
        let body = rest.trim_end().trim_end_matches(';');
        return format!("INSERT INTO{body} ON CONFLICT DO NOTHING");
    }
    out
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_become_numbered_and_quotes_are_kept() {
        assert_eq!(
            translate("SELECT x FROM t WHERE a = ?1 AND b = '?' AND c = ?12"),
            "SELECT x FROM t WHERE a = $1 AND b = '?' AND c = $12"
        );
        assert_eq!(translate("VALUES (?, ?)"), "VALUES ($1, $2)");
    }

    #[test]
    fn insert_or_ignore_becomes_on_conflict() {
        assert_eq!(
            translate("INSERT OR IGNORE INTO blobs (a) VALUES (?1)"),
            "INSERT INTO blobs (a) VALUES ($1) ON CONFLICT DO NOTHING"
        );
    }
}
