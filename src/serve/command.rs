//! The command of a service suite: the variables its template can use and their rendering for
//! one grid point and repeat, every value shell-quoted as in a step suite's command. Pure.

use serde::Serialize;

use super::key::format_rate;
use crate::case::TemplateError;

/// The names a service command template may use: the fields of [`ServeCommandVars`].
pub const SERVE_VARIABLES: [&str; 13] = [
    "suite",
    "model",
    "request_rate",
    "max_concurrency",
    "input_len",
    "output_len",
    "num_prompts",
    "seed",
    "burstiness",
    "repeat",
    "result_file",
    "utilgate",
    "config_dir",
];

/// The values a service suite's `command` template can use. Every name is always defined
/// (an unset limit or length renders as an empty string), so a typo is an error.
#[derive(Debug, Clone, Serialize)]
pub struct ServeCommandVars<'a> {
    pub suite: &'a str,
    pub model: &'a str,
    /// `"inf"` or a number, as `vllm bench serve --request-rate` takes it.
    pub request_rate: String,
    pub max_concurrency: String,
    pub input_len: String,
    pub output_len: String,
    pub num_prompts: u64,
    pub seed: u64,
    pub burstiness: f64,
    pub repeat: u32,
    /// The file the load generator must write (`--result-filename`, `--output-file`).
    pub result_file: &'a str,
    pub utilgate: &'a str,
    pub config_dir: &'a str,
}

/// Renders a service suite's command for one grid point and repeat.
pub fn render_serve_command(
    template: &str,
    vars: &ServeCommandVars<'_>,
) -> Result<String, TemplateError> {
    crate::case::render_shell_template(template, vars, &SERVE_VARIABLES)
}

/// The fix for a template error of a service command.
#[must_use]
pub fn serve_template_hint(err: &TemplateError) -> String {
    match err {
        TemplateError::InsideQuotes { .. } => err.hint(),
        TemplateError::Syntax(_) | TemplateError::UnknownVariable { .. } => format!(
            "use {}",
            SERVE_VARIABLES.map(|v| format!("{{{{ {v} }}}}")).join(", ")
        ),
    }
}

/// `Some(n)` as its number, `None` as the empty string (a template can test it).
#[must_use]
pub fn opt_text(v: Option<u64>) -> String {
    v.map(|n| n.to_string()).unwrap_or_default()
}

/// Checks that a template compiles and uses only the service variables.
pub fn check_serve_template(template: &str) -> Result<(), TemplateError> {
    let vars = ServeCommandVars {
        suite: "s",
        model: "m",
        request_rate: format_rate(Some(1.0)),
        max_concurrency: String::new(),
        input_len: "1".into(),
        output_len: "1".into(),
        num_prompts: 1,
        seed: 0,
        burstiness: 1.0,
        repeat: 0,
        result_file: "r.json",
        utilgate: "utilgate",
        config_dir: ".",
    };
    render_serve_command(template, &vars).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vllm_command_renders_and_a_typo_is_an_error() {
        let t = "vllm bench serve --model {{ model }} --request-rate {{ request_rate }} \
                 --random-input-len {{ input_len }} --num-prompts {{ num_prompts }} \
                 --seed {{ seed }} --save-result --result-filename {{ result_file }}";
        check_serve_template(t).expect("valid");
        let err = check_serve_template("x {{ reqest_rate }}").expect_err("typo");
        assert!(
            err.to_string().contains("did you mean `request_rate`"),
            "{err}"
        );
        assert!(serve_template_hint(&err).contains("{{ result_file }}"));
    }

    #[test]
    fn values_are_shell_quoted_and_an_unset_limit_can_be_tested() {
        let t = "bench --model {{ model }} --result-filename {{ result_file }}\
                 {% if max_concurrency %} --max-concurrency {{ max_concurrency }}{% endif %}";
        let mut vars = ServeCommandVars {
            suite: "s",
            model: "org/m; rm -rf x",
            request_rate: "inf".into(),
            max_concurrency: String::new(),
            input_len: String::new(),
            output_len: String::new(),
            num_prompts: 10,
            seed: 0,
            burstiness: 1.0,
            repeat: 0,
            result_file: "/tmp/a dir/r.json",
            utilgate: "utilgate",
            config_dir: ".",
        };
        assert_eq!(
            render_serve_command(t, &vars).expect("renders"),
            "bench --model 'org/m; rm -rf x' --result-filename '/tmp/a dir/r.json'"
        );
        vars.max_concurrency = "16".into();
        assert!(
            render_serve_command(t, &vars)
                .expect("renders")
                .ends_with(" --max-concurrency 16")
        );
    }
}
