//! The rule every name in a config obeys (model, suite and precision names): no control
//! character. Pure.

/// A name that reaches a shell, a terminal and the store must hold no control character
/// (escape sequences, NUL, bell).
pub(super) fn check_name(key: &str, name: &str, push: &mut impl FnMut(String, String, &str)) {
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        push(
            key.to_owned(),
            format!(
                "\"{}\" contains a control character (U+{:04X})",
                name.escape_debug(),
                u32::from(c)
            ),
            "use printable characters only in model, suite and precision names",
        );
    }
}
