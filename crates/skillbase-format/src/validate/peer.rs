//! The keys other agents define that Skillbase honours ([`crate::keys::PEER_KEYS`]), checked for
//! type and sense, and what `allowed-tools` does not map onto.

use super::{Diagnostics, Severity};
use crate::frontmatter::SkillMd;
use crate::glob::PathGlob;
use crate::meta::{
    MAX_ARGUMENT_HINT_CHARS, MAX_ARGUMENTS, MAX_PATHS, argument_names, boolean, path_globs,
    valid_argument_name,
};
use crate::yaml::Node;

pub(super) fn validate(md: &SkillMd, out: &mut Diagnostics<'_>) {
    use Severity::{Error, Warning};
    let mut flags = [None, None];
    for (k, key) in ["disable-model-invocation", "user-invocable"]
        .into_iter()
        .enumerate()
    {
        if let Some(node) = md.get(key) {
            flags[k] = boolean(node);
            if flags[k].is_none() {
                out.field(
                    Error,
                    md,
                    key,
                    format!("Field '{key}' must be true or false, not {}", shown(node)),
                    "write `true` or `false`",
                );
            }
        }
    }
    if flags == [Some(true), Some(false)] {
        out.field(
            Warning,
            md,
            "user-invocable",
            "With disable-model-invocation: true and user-invocable: false, nobody can use this skill".into(),
            "drop one of the two keys",
        );
    }
    if let Some(node) = md.get("paths") {
        validate_paths(md, node, out);
    }
    if let Some(node) = md.get("argument-hint") {
        match node.as_str() {
            Some(h) if h.trim().chars().count() > MAX_ARGUMENT_HINT_CHARS => out.field(
                Error,
                md,
                "argument-hint",
                format!("Field 'argument-hint' exceeds {MAX_ARGUMENT_HINT_CHARS} character limit"),
                "say what to type after /name in a few words: `[environment] [version]`",
            ),
            Some(_) => {}
            None => out.field(
                Error,
                md,
                "argument-hint",
                format!(
                    "Field 'argument-hint' must be a string, not {}",
                    node.kind()
                ),
                "quote it: `argument-hint: \"[environment]\"`",
            ),
        }
    }
    if let Some(node) = md.get("arguments") {
        validate_arguments(md, node, out);
    }
    for line in crate::meta::allowed_tools(md.get("allowed-tools")).unmapped {
        out.field(
            Warning,
            md,
            "allowed-tools",
            line,
            "declare what Skillbase should allow under `capabilities:` (tools, vault, hosts)",
        );
    }
}

fn validate_paths(md: &SkillMd, node: &Node, out: &mut Diagnostics<'_>) {
    use Severity::Error;
    if node.as_map().is_some() {
        out.field(
            Error,
            md,
            "paths",
            "Field 'paths' must be a list of globs, not a mapping".into(),
            "write `paths: [\"src/**/*.rs\"]` or one `- glob` per line",
        );
        return;
    }
    if let Some(items) = node.as_seq()
        && items.iter().any(|i| i.as_str().is_none())
    {
        out.field(
            Error,
            md,
            "paths",
            "Every entry of 'paths' must be a string".into(),
            "write each glob as a string: `- \"docs/**/*.md\"`",
        );
        return;
    }
    let globs = path_globs(Some(node));
    if globs.len() > MAX_PATHS {
        out.field(
            Error,
            md,
            "paths",
            format!(
                "Field 'paths' has {} globs; at most {MAX_PATHS}",
                globs.len()
            ),
            "merge globs with `**` or `{a,b}`",
        );
        return;
    }
    for g in &globs {
        if let Err(e) = PathGlob::new(g) {
            let shown: String = g.chars().take(60).collect();
            out.field(
                Error,
                md,
                "paths",
                format!("paths: '{shown}' is not a glob: {e}"),
                "use `*`, `**`, `?`, `[a-z]` and `{a,b}`: `src/**/*.{ts,tsx}`",
            );
        }
    }
}

fn validate_arguments(md: &SkillMd, node: &Node, out: &mut Diagnostics<'_>) {
    use Severity::Error;
    if node.as_map().is_some()
        || node
            .as_seq()
            .is_some_and(|s| s.iter().any(|i| i.as_str().is_none()))
    {
        out.field(
            Error,
            md,
            "arguments",
            "Field 'arguments' must be a list of names, or names separated by spaces".into(),
            "write `arguments: [environment, version]`",
        );
        return;
    }
    let names = argument_names(Some(node));
    if names.len() > MAX_ARGUMENTS {
        out.field(
            Error,
            md,
            "arguments",
            format!(
                "Field 'arguments' has {} names; at most {MAX_ARGUMENTS}",
                names.len()
            ),
            "name only the arguments the body uses",
        );
        return;
    }
    for n in names.iter().filter(|n| !valid_argument_name(n)) {
        let shown: String = n.chars().take(60).collect();
        out.field(
            Error,
            md,
            "arguments",
            format!("arguments: '{shown}' is not an argument name"),
            "start with a letter; use letters, digits, `_` and `-` (64 at most)",
        );
    }
}

/// A value as quoted in a message: a scalar's first 40 characters, else its kind.
fn shown(node: &Node) -> String {
    match node.as_str() {
        Some(s) => format!("'{}'", s.chars().take(40).collect::<String>()),
        None => node.kind().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Profile, Report, Severity, ValidateOptions, validate_text};
    use crate::frontmatter::SkillMd;
    use crate::meta::SkillMeta;

    const OK: &str = "---\nname: my-skill\ndescription: Does things. Use when asked.\n";

    fn check(fm: &str, profile: Profile) -> Report {
        let opts = ValidateOptions {
            profile,
            ..ValidateOptions::default()
        };
        validate_text(
            &format!("{OK}{fm}---\nbody\n"),
            "SKILL.md",
            Some("my-skill"),
            &opts,
        )
    }

    fn meta(fm: &str) -> SkillMeta {
        let md = SkillMd::parse(&format!("{OK}{fm}---\nbody\n"), &Default::default()).unwrap();
        SkillMeta::from_md(&md).unwrap()
    }

    fn said(r: &Report, severity: Severity) -> Vec<String> {
        r.diagnostics
            .iter()
            .filter(|d| d.severity == severity)
            .map(|d| d.message.clone())
            .collect()
    }

    #[test]
    fn peer_keys_are_read_and_accepted_without_warnings() {
        let fm = "disable-model-invocation: true\nuser-invocable: true\npaths:\n  - \"src/**/*.rs\"\n  - \"*.{ts,tsx}\"\n\
                  argument-hint: \"[env] [version]\"\narguments: env version\nmodel: sonnet\ncontext: fork\nagent: Explore\n\
                  hooks:\n  PreToolUse:\n    - command: rm -rf /\nallowed-tools: WebFetch(domain:docs.rs)\n";
        let r = check(fm, Profile::Skillbase);
        assert!(r.is_valid(), "{:?}", r.diagnostics);
        assert!(
            said(&r, Severity::Warning).is_empty(),
            "{:?}",
            r.diagnostics
        );
        let m = meta(fm);
        assert!(m.disable_model_invocation && m.user_invocable);
        assert_eq!(m.paths, ["src/**/*.rs", "*.{ts,tsx}"]);
        assert_eq!(m.argument_hint.as_deref(), Some("[env] [version]"));
        assert_eq!(m.arguments, ["env", "version"]);
        assert_eq!(m.capabilities.tools, ["web_fetch"]);
        assert_eq!(m.capabilities.hosts, ["docs.rs"]);
        // Defaults: the model may invoke, the user may too.
        let d = meta("");
        assert!(!d.disable_model_invocation && d.user_invocable && d.paths.is_empty());
        // The reference's rules still refuse keys outside the specification.
        assert!(!check(fm, Profile::Spec).is_valid());
    }

    #[test]
    fn malformed_peer_keys_are_errors_naming_the_key() {
        let cases = [
            ("disable-model-invocation: yes\n", "must be true or false"),
            ("user-invocable: [a]\n", "must be true or false"),
            ("paths:\n  a: b\n", "not a mapping"),
            ("paths:\n  - [nested]\n", "must be a string"),
            ("paths: [\"src/[oops\"]\n", "is not a glob"),
            ("paths: [\"{a,{b}}\"]\n", "is not a glob"),
            ("argument-hint: [a]\n", "must be a string"),
            ("arguments:\n  a: b\n", "list of names"),
            ("arguments: [\"9lives\"]\n", "not an argument name"),
        ];
        for (fm, want) in cases {
            let r = check(fm, Profile::Skillbase);
            let errors = said(&r, Severity::Error);
            assert!(errors.iter().any(|e| e.contains(want)), "{fm}: {errors:?}");
        }
        // Lenient reading: what does not parse is dropped, never guessed.
        let m = meta(
            "disable-model-invocation: yes\npaths: [\"src/[oops\", \"ok/*\"]\narguments: [\"9lives\", ok]\n",
        );
        assert!(!m.disable_model_invocation);
        assert_eq!(m.paths, ["ok/*"]);
        assert_eq!(m.arguments, ["ok"]);
    }

    #[test]
    fn hostile_and_oversized_values_are_refused_with_a_clear_error() {
        let many: String = (0..1000).map(|k| format!("  - \"d{k}/*\"\n")).collect();
        let r = check(&format!("paths:\n{many}"), Profile::Skillbase);
        assert!(
            said(&r, Severity::Error)[0].contains("1000 globs; at most 32"),
            "{:?}",
            r.diagnostics
        );
        assert_eq!(
            meta(&format!("paths:\n{many}")).paths.len(),
            crate::meta::MAX_PATHS
        );
        let long = "a".repeat(5000);
        let r = check(&format!("paths: [\"{long}\"]\n"), Profile::Skillbase);
        let e = said(&r, Severity::Error);
        assert!(e[0].contains("at most 256") && e[0].len() < 300, "{e:?}");
        let r = check(&format!("argument-hint: \"{long}\"\n"), Profile::Skillbase);
        assert!(said(&r, Severity::Error)[0].contains("200 character limit"));
        let names: String = (0..40).map(|k| format!("a{k} ")).collect();
        let r = check(&format!("arguments: {names}\n"), Profile::Skillbase);
        assert!(said(&r, Severity::Error)[0].contains("at most 16"));
        let braces = "{a,b}".repeat(10);
        assert!(!check(&format!("paths: [\"{braces}\"]\n"), Profile::Skillbase).is_valid());
    }

    #[test]
    fn allowed_tools_that_do_not_map_are_warnings() {
        // The harness's own tools are the harness's business: no warning.
        let r = check(
            "allowed-tools: Read Bash(git:*) WebFetch\n",
            Profile::Skillbase,
        );
        assert!(r.is_valid());
        let w = said(&r, Severity::Warning);
        assert!(w.is_empty(), "{w:?}");
        // An MCP tool and a domain that is not a host may have been meant for Skillbase.
        let r = check(
            "allowed-tools: mcp__gh__issues WebFetch(domain:/etc/passwd)\n",
            Profile::Skillbase,
        );
        assert!(r.is_valid());
        let w = said(&r, Severity::Warning);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].contains("'mcp__gh__issues'") && w[1].contains("names no host"),
            "{w:?}"
        );
        assert_eq!(
            meta("allowed-tools: Read Bash(git:*) WebFetch\n")
                .capabilities
                .tools,
            ["web_fetch"]
        );
    }

    #[test]
    fn both_flags_together_leave_nobody_to_invoke() {
        let r = check(
            "disable-model-invocation: true\nuser-invocable: false\n",
            Profile::Skillbase,
        );
        assert!(said(&r, Severity::Warning)[0].contains("nobody can use this skill"));
    }

    #[test]
    fn skillbase_keys_under_metadata_keep_the_reference_validator_happy() {
        let fm = "metadata:\n  owner: ops\n  skillbase:\n    triggers:\n      - refund\n    cost: seconds\n    disable-model-invocation: true\n";
        let spec = check(fm, Profile::Spec);
        assert!(spec.is_valid(), "{:?}", spec.diagnostics);
        let r = check(fm, Profile::Skillbase);
        assert!(
            r.is_valid() && said(&r, Severity::Warning).is_empty(),
            "{:?}",
            r.diagnostics
        );
        let m = meta(fm);
        assert_eq!(m.triggers, ["refund"]);
        assert_eq!(m.cost, crate::Cost::Seconds);
        assert!(m.disable_model_invocation);
        // A bad nested value is checked like a top-level one.
        let r = check(
            "metadata:\n  skillbase:\n    cost: forever\n",
            Profile::Skillbase,
        );
        assert!(!r.is_valid());
        // Top level wins, with a warning; an unknown nested key is a warning.
        let fm = "cost: immediate\nmetadata:\n  skillbase:\n    cost: seconds\n    trigers: [x]\n";
        let r = check(fm, Profile::Skillbase);
        let w = said(&r, Severity::Warning);
        assert!(w.iter().any(|m| m.contains("top level wins")), "{w:?}");
        assert!(
            w.iter().any(|m| m.contains("metadata.skillbase.trigers")),
            "{w:?}"
        );
        assert_eq!(meta(fm).cost, crate::Cost::Immediate);
        // Keys that never nest (the specification's own) are not read from there.
        let md = SkillMd::parse(
            &format!("{OK}metadata:\n  skillbase:\n    license: MIT\n---\nb\n"),
            &Default::default(),
        )
        .unwrap();
        assert!(md.get("license").is_none());
    }
}
