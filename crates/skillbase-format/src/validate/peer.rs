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
                format!("Field 'argument-hint' must be a string, not {}", node.kind()),
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
            format!("Field 'paths' has {} globs; at most {MAX_PATHS}", globs.len()),
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
    if node.as_map().is_some() || node.as_seq().is_some_and(|s| s.iter().any(|i| i.as_str().is_none())) {
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
            format!("Field 'arguments' has {} names; at most {MAX_ARGUMENTS}", names.len()),
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
