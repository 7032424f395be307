//! Activation by file path: a skill's `paths:` globs fire, like its triggers, on the file paths a
//! turn names: given with the turn (`TurnOptions::paths`) or written in the message
//! ([`in_message`]). The reason is `path:<glob>`.

use skillbase_format::glob::PathGlob;

/// Most paths one turn is matched on (given and found in the message together); the rest are
/// not read.
pub const MAX_TURN_PATHS: usize = 64;

/// Check the paths given with a turn: at most [`MAX_TURN_PATHS`], each non-empty, at most
/// [`skillbase_format::glob::MAX_PATH_BYTES`] bytes, without control characters. The error
/// says which rule, not the path.
pub fn check_given(paths: &[String]) -> Result<(), String> {
    if paths.len() > MAX_TURN_PATHS {
        return Err(format!(
            "paths: {} given; at most {MAX_TURN_PATHS}",
            paths.len()
        ));
    }
    for (k, p) in paths.iter().enumerate() {
        if p.trim().is_empty()
            || p.len() > skillbase_format::glob::MAX_PATH_BYTES
            || p.chars().any(char::is_control)
        {
            return Err(format!(
                "paths[{k}] must be a non-empty path of at most {} bytes, without control characters",
                skillbase_format::glob::MAX_PATH_BYTES
            ));
        }
    }
    Ok(())
}

/// The tokens of a message that look like file paths, in order, each once, at most
/// [`MAX_TURN_PATHS`]: a word with a `/` inside it (`src/main.rs`, `./x`, `/etc/hosts`), or one
/// ending in an extension with a letter (`README.md`, not `1.2`). Quotes, brackets and trailing
/// punctuation around it are dropped, and Claude Code's `@` file mention too; URLs are not
/// paths.
pub fn in_message(message: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for word in message.split_whitespace() {
        if out.len() >= MAX_TURN_PATHS {
            break;
        }
        // Most words have neither a `/` nor a `.`: no path.
        if !word.contains(['/', '.']) {
            continue;
        }
        const AROUND: &str = "\"'`()[]{}<>,;:!?*";
        let t = word.trim_start_matches(|c: char| AROUND.contains(c));
        let t = t.trim_end_matches(|c: char| c == '.' || AROUND.contains(c));
        let t = t.strip_prefix('@').unwrap_or(t);
        if looks_like_path(t) && !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

fn looks_like_path(t: &str) -> bool {
    if t.is_empty() || t.len() > skillbase_format::glob::MAX_PATH_BYTES {
        return false;
    }
    if t.contains("://") || t.starts_with('$') || t.chars().any(char::is_control) {
        return false;
    }
    if t.trim_start_matches('/').contains('/') {
        return true;
    }
    let last = t.rsplit('/').next().unwrap_or(t);
    match last.rsplit_once('.') {
        Some((stem, ext)) => {
            !stem.is_empty()
                && (1..=10).contains(&ext.len())
                && ext.bytes().all(|b| b.is_ascii_alphanumeric())
                && ext.bytes().any(|b| b.is_ascii_alphabetic())
        }
        None => false,
    }
}

/// Every skill's `paths:` globs, compiled once; hits point into the view's skills.
#[derive(Debug, Default)]
pub struct PathMatcher {
    globs: Vec<(usize, PathGlob)>,
}

impl PathMatcher {
    /// Compile `(skill, glob)` pairs; a glob that does not compile is skipped (validation
    /// reports it).
    pub fn new<'a>(globs: impl IntoIterator<Item = (usize, &'a str)>) -> PathMatcher {
        PathMatcher {
            globs: globs
                .into_iter()
                .filter_map(|(i, g)| PathGlob::new(g).ok().map(|g| (i, g)))
                .collect(),
        }
    }

    /// Whether no skill declares a glob.
    pub fn is_empty(&self) -> bool {
        self.globs.is_empty()
    }

    /// The skills whose globs match one of `paths`, each once with the first glob that matched,
    /// in the order of their globs. An absolute path (`/…`, `~/…`) matches a glob from any
    /// folder on; a relative one from its start.
    pub fn find(&self, paths: &[&str]) -> Vec<(usize, &str)> {
        let mut out: Vec<(usize, &str)> = Vec::new();
        for (skill, glob) in &self.globs {
            if out.iter().any(|(s, _)| s == skill) {
                continue;
            }
            let hit = paths.iter().any(|p| {
                if p.starts_with('/') || p.starts_with("~/") {
                    glob.matches_within(p)
                } else {
                    glob.matches(p)
                }
            });
            if hit {
                out.push((*skill, glob.as_str()));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_found_in_messages() {
        assert_eq!(
            in_message("fix `src/main.rs`, then README.md and @docs/a.md (see ./x/y). v1.2"),
            ["src/main.rs", "README.md", "docs/a.md", "./x/y"]
        );
        assert_eq!(
            in_message("/etc/hosts and ~/notes/todo.txt"),
            ["/etc/hosts", "~/notes/todo.txt"]
        );
        assert!(in_message("see https://example.com/a.md or /deploy $x/y 3.14").is_empty());
        let many: String = (0..500).map(|k| format!("f{k}.rs ")).collect();
        assert_eq!(in_message(&many).len(), MAX_TURN_PATHS);
    }

    #[test]
    fn matcher_reports_each_skill_once_with_its_glob() {
        let m = PathMatcher::new([
            (0, "src/**/*.rs"),
            (0, "*.toml"),
            (1, "docs/*.md"),
            (2, "[bad"),
        ]);
        assert_eq!(m.find(&["src/a/b.rs", "Cargo.toml"]), [(0, "src/**/*.rs")]);
        assert_eq!(m.find(&["/home/me/p/docs/x.md"]), [(1, "docs/*.md")]);
        assert!(m.find(&["lib/x.rs"]).is_empty());
        assert!(PathMatcher::new([(0, "[bad")]).is_empty());
    }
}
