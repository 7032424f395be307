//! Explicit invocation: the user names a skill in the message, as Claude Code (`/deploy prod`,
//! at the start of the message) and Codex (`$deploy`, anywhere) let them. The named skill is
//! placed for the turn with reason `explicit`, within the agent's view; it is the one way a
//! `disable-model-invocation` skill reaches the model.
//!
//! A slash command is the whole invocation: whatever follows it is its arguments (a `$name`
//! there is an argument, not a second invocation). Without one, each `$name` is a candidate,
//! and one that names no skill of the view is left alone (a shell variable is not an
//! invocation). Arguments are substituted into the body as Claude Code does:
//! [`substitute`].

use skillbase_format::SkillName;

/// Most skills one message may invoke.
pub const MAX_INVOCATIONS: usize = 8;
/// Most `$name` candidates read from one message (names of no skill included).
pub const MAX_CANDIDATES: usize = 64;
/// Longest argument text substituted, in bytes; the rest is cut.
pub const MAX_ARGUMENT_BYTES: usize = 4096;
/// Most bytes substitution may add to a body; placeholders past it stay as written.
pub const MAX_SUBSTITUTED_BYTES: usize = 65_536;

/// How a skill was named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `/name args` at the start of the message (Claude Code).
    Slash,
    /// `$name` anywhere in the message (Codex).
    Dollar,
}

/// One skill named by the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// The name as a valid skill name.
    pub name: String,
    /// How it was named.
    pub form: Form,
    /// The argument text: what follows a slash command (trimmed, cut at
    /// [`MAX_ARGUMENT_BYTES`]); empty for `$name`.
    pub arguments: String,
}

/// The skills a message names: its leading slash command alone, else its `$name`s in order,
/// each once, at most [`MAX_CANDIDATES`]. Names are checked against the skill-name grammar,
/// not against any view: the caller keeps those its view holds.
pub fn parse(message: &str) -> Vec<Invocation> {
    let text = message.trim_start();
    if let Some(rest) = text.strip_prefix('/') {
        let end = rest.find(|c: char| c.is_whitespace()).unwrap_or(rest.len());
        if let Ok(name) = SkillName::parse_canonical(&rest[..end]) {
            return vec![Invocation {
                name: name.to_string(),
                form: Form::Slash,
                arguments: cut(rest[end..].trim()).to_owned(),
            }];
        }
    }
    let mut out: Vec<Invocation> = Vec::new();
    let bytes = message.as_bytes();
    for (at, _) in message.match_indices('$') {
        if out.len() >= MAX_CANDIDATES {
            break;
        }
        // `$` at a word's start: not `a$b`, `$$b` or `\$b`.
        if at > 0 && (is_name_byte(bytes[at - 1]) || matches!(bytes[at - 1], b'$' | b'\\')) {
            continue;
        }
        let rest = &message[at + 1..];
        let end = rest
            .bytes()
            .position(|b| !is_name_byte(b))
            .unwrap_or(rest.len());
        // A name starts with a letter (`$5` is a price) and ends at a non-name character;
        // `$name[`, `$name(` and `${` are something else.
        let candidate = rest[..end].trim_end_matches('-');
        if !candidate.starts_with(|c: char| c.is_ascii_lowercase())
            || rest[end..].starts_with(['[', '{', '('])
        {
            continue;
        }
        if let Ok(name) = SkillName::parse(candidate)
            && !out.iter().any(|i| i.name == name.as_str())
        {
            out.push(Invocation {
                name: name.to_string(),
                form: Form::Dollar,
                arguments: String::new(),
            });
        }
    }
    out
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'
}

/// `s` cut to at most [`MAX_ARGUMENT_BYTES`] on a character boundary.
fn cut(s: &str) -> &str {
    if s.len() <= MAX_ARGUMENT_BYTES {
        return s;
    }
    let mut end = MAX_ARGUMENT_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Argument text split as a shell would, simply: on whitespace, a `"…"` or `'…'` run kept whole
/// (its quotes removed).
pub fn split_arguments(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                    started = false;
                }
            }
            (None, c) => cur.push(c),
        }
    }
    if started || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The body with the invocation's arguments substituted, in one pass (a value holding `$0` is
/// not expanded again), as Claude Code does: `$ARGUMENTS` is the whole argument text,
/// `$ARGUMENTS[N]` the N-th argument (from 0; empty when absent), `$N` the N-th argument (left
/// as written when absent, so a price such as `$5` survives), and `$name` (or `{{name}}`,
/// Skillbase's `inputs` placeholder) the argument at that name's place in the skill's
/// `arguments`. Without arguments, a skill that declares none and has no `$ARGUMENTS` is left
/// as written. A body with
/// no placeholder that is given arguments gets them appended as an `ARGUMENTS:` line.
/// Substitution adds at most [`MAX_SUBSTITUTED_BYTES`]; placeholders past that stay as written.
pub fn substitute(body: &str, arguments: &str, names: &[String]) -> String {
    if arguments.is_empty() && names.is_empty() && !body.contains("$ARGUMENTS") {
        return body.to_owned();
    }
    let args = split_arguments(arguments);
    let mut out = String::with_capacity(body.len() + arguments.len());
    let mut added = 0usize;
    let mut rest = body;
    let mut used_all = false;
    while let Some(at) = rest.find(['$', '{']) {
        out.push_str(&rest[..at]);
        let (value, len) = if rest[at..].starts_with('{') {
            braced(&rest[at..], &args, names, &mut used_all)
        } else {
            let (v, len) = placeholder(&rest[at + 1..], arguments, &args, names, &mut used_all);
            (v, len + 1)
        };
        match value {
            Some(v) if added + v.len() <= MAX_SUBSTITUTED_BYTES => {
                added += v.len();
                out.push_str(v);
                rest = &rest[at + len..];
            }
            _ => {
                // The `$` or `{` alone, as written.
                out.push_str(&rest[at..at + 1]);
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    if !used_all && !arguments.is_empty() {
        out.push_str("\n\nARGUMENTS: ");
        out.push_str(arguments);
    }
    out
}

/// The value of the placeholder `after` starts with (what follows a `$`), and the bytes it
/// takes; `None` when it is not one.
fn placeholder<'a>(
    after: &str,
    all: &'a str,
    args: &'a [String],
    names: &[String],
    used_all: &mut bool,
) -> (Option<&'a str>, usize) {
    let nth = |n: Option<usize>| n.map(|n| args.get(n).map_or("", String::as_str));
    if let Some(tail) = after.strip_prefix("ARGUMENTS") {
        *used_all = true;
        if let Some(index) = tail.strip_prefix('[')
            && let Some(close) = index.find(']')
            && close > 0
            && index[..close].bytes().all(|b| b.is_ascii_digit())
        {
            let n = index[..close].parse::<usize>().ok();
            return (nth(n), "ARGUMENTS".len() + close + 2);
        }
        return (Some(all), "ARGUMENTS".len());
    }
    let digits = after.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 {
        // `$N` past the arguments stays as written (Claude Code leaves a missing positional).
        return match after[..digits]
            .parse::<usize>()
            .ok()
            .and_then(|n| args.get(n))
        {
            Some(v) => {
                *used_all = true;
                (Some(v.as_str()), digits)
            }
            None => (None, 0),
        };
    }
    let word = after
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-')
        .count();
    match names.iter().position(|n| n == &after[..word]) {
        Some(k) if word > 0 => {
            *used_all = true;
            (nth(Some(k)), word)
        }
        _ => (None, 0),
    }
}

/// `{{name}}` (Skillbase's `inputs` placeholder, what `load_skill` fills) for a name of the
/// skill's `arguments`: the argument at that name's place. `rest` starts with `{`.
fn braced<'a>(
    rest: &str,
    args: &'a [String],
    names: &[String],
    used_all: &mut bool,
) -> (Option<&'a str>, usize) {
    let Some(inner) = rest.strip_prefix("{{") else {
        return (None, 0);
    };
    let Some(close) = inner.find("}}") else {
        return (None, 0);
    };
    match names.iter().position(|n| *n == inner[..close]) {
        Some(k) => {
            *used_all = true;
            (Some(args.get(k).map_or("", String::as_str)), close + 4)
        }
        None => (None, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(m: &str) -> Vec<(String, Form, String)> {
        parse(m)
            .into_iter()
            .map(|i| (i.name, i.form, i.arguments))
            .collect()
    }

    #[test]
    fn slash_command_takes_the_rest_as_its_arguments() {
        assert_eq!(
            names("  /deploy prod $other --fast"),
            [("deploy".into(), Form::Slash, "prod $other --fast".into())]
        );
        assert_eq!(
            names("/deploy"),
            [("deploy".into(), Form::Slash, String::new())]
        );
        // Not a slash command: a path, an invalid name, a slash later in the message.
        assert!(names("/usr/bin/env ls").is_empty());
        assert!(names("/Deploy now").is_empty());
        assert!(names("please /deploy").is_empty());
    }

    #[test]
    fn dollar_names_are_candidates_each_once() {
        let got: Vec<String> = parse("use $review and $lint-fix, then $review again; cost $5")
            .into_iter()
            .map(|i| i.name)
            .collect();
        assert_eq!(got, ["review", "lint-fix"]);
        // Not at a word start, escaped, shell forms, upper case.
        assert!(parse("a$b \\$c $$d ${e} $f[0] $HOME").is_empty());
        assert_eq!(parse("$trail- x")[0].name, "trail");
    }

    #[test]
    fn hostile_messages_are_bounded() {
        let many: String = (0..500).map(|k| format!("$s{k} ")).collect();
        assert_eq!(parse(&many).len(), MAX_CANDIDATES);
        let long = format!("/deploy {}", "é".repeat(10_000));
        let i = &parse(&long)[0];
        assert!(i.arguments.len() <= MAX_ARGUMENT_BYTES);
        assert!(parse(&"$".repeat(100_000)).is_empty());
        assert!(parse("").is_empty() && parse("/").is_empty() && parse("$").is_empty());
    }

    #[test]
    fn arguments_are_substituted_as_claude_code_does() {
        let n = vec!["env".to_owned(), "version".to_owned()];
        assert_eq!(
            substitute(
                "to $0 at $1 ($ARGUMENTS[1]); all: $ARGUMENTS; $env/$version; $2.",
                "prod \"1.2 rc\"",
                &n
            ),
            "to prod at 1.2 rc (1.2 rc); all: prod \"1.2 rc\"; prod/1.2 rc; $2."
        );
        // Skillbase's `{{name}}` placeholder is filled from the same named argument.
        assert_eq!(
            substitute("{{env}}@{{version}} {{other}} {x} {{", "prod", &n),
            "prod@ {{other}} {x} {{"
        );
        // One pass: a value holding a placeholder stays as given.
        assert_eq!(substitute("[$0] [$1]", "$1 x", &[]), "[$1] [x]");
        // No placeholder: the arguments are appended.
        assert_eq!(
            substitute("Deploy.", "prod", &[]),
            "Deploy.\n\nARGUMENTS: prod"
        );
        assert_eq!(substitute("Deploy.", "", &[]), "Deploy.");
        // Not placeholders: a price, an unknown name, an unclosed index.
        assert_eq!(substitute("$ $x $ARGUMENTS[a", "a", &[]), "$ $x a[a");
        // A price survives: `$5` past the arguments stays, and a skill declaring no arguments,
        // invoked without any, is left as written.
        assert_eq!(
            substitute("Costs $5, not $0.", "cheap", &[]),
            "Costs $5, not cheap."
        );
        assert_eq!(substitute("Costs $5 or $0.", "", &[]), "Costs $5 or $0.");
        assert_eq!(
            substitute("Costs $5 ($ARGUMENTS).", "", &[]),
            "Costs $5 ()."
        );
        assert_eq!(
            substitute("Costs $5.", "x", &[]),
            "Costs $5.\n\nARGUMENTS: x"
        );
        // Repeated placeholders cannot grow a body without bound.
        let body = "$ARGUMENTS".repeat(1000);
        let arg = "y".repeat(MAX_ARGUMENT_BYTES);
        assert!(substitute(&body, &arg, &[]).len() <= body.len() + MAX_SUBSTITUTED_BYTES);
    }

    #[test]
    fn quoted_arguments_split_as_a_shell_would() {
        assert_eq!(
            split_arguments(r#"a "b c" 'd' "" e"#),
            ["a", "b c", "d", "", "e"]
        );
        assert_eq!(split_arguments("  "), Vec::<String>::new());
        assert_eq!(split_arguments("\"unclosed x"), ["unclosed x"]);
    }
}
