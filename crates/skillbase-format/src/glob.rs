//! Path globs, as `paths:` (Claude Code's key) writes them: `*` (any characters but `/`), `**`
//! (any number of whole segments), `?` (one character but `/`), `[abc]`, `[a-z]`, `[!a]`,
//! `{a,b}` (alternatives, not nested) and `\` to take the next character literally. A pattern
//! without a `/` is matched against the path's last segment, as `.gitignore` does.
//!
//! Matching is a table over pattern and path segments (no backtracking), bounded by
//! [`MAX_GLOB_CHARS`], [`MAX_ALTERNATIVES`] and the caller's path length.

use std::fmt;

/// Longest glob, in characters.
pub const MAX_GLOB_CHARS: usize = 256;
/// Most alternatives one glob's `{a,b}` groups may expand to.
pub const MAX_ALTERNATIVES: usize = 16;
/// Longest path matched, in bytes; a longer one matches nothing.
pub const MAX_PATH_BYTES: usize = 1024;

/// Why a glob was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobError(String);

impl fmt::Display for GlobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for GlobError {}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Lit(char),
    /// `*`: any run of characters but `/`.
    Star,
    /// `?`: one character but `/`.
    One,
    /// `[...]`: (negated, ranges).
    Class(bool, Vec<(char, char)>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    /// `**`: zero or more whole segments.
    Any,
    Toks(Vec<Tok>),
}

/// A compiled glob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathGlob {
    text: String,
    alternatives: Vec<Vec<Seg>>,
    basename: bool,
}

impl PathGlob {
    /// Compile a glob; refused when empty, too long, with an unclosed `[` or `{`, a nested `{`,
    /// or more than [`MAX_ALTERNATIVES`] alternatives.
    pub fn new(glob: &str) -> Result<PathGlob, GlobError> {
        let text = glob.trim();
        if text.is_empty() {
            return Err(GlobError("an empty glob matches nothing".into()));
        }
        let n = text.chars().count();
        if n > MAX_GLOB_CHARS {
            return Err(GlobError(format!(
                "the glob is {n} characters; at most {MAX_GLOB_CHARS}"
            )));
        }
        let text = text.strip_prefix("./").unwrap_or(text);
        let alternatives = expand(text)?
            .iter()
            .map(|a| compile(a))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(PathGlob {
            basename: !text.contains('/'),
            text: text.to_owned(),
            alternatives,
        })
    }

    /// The glob as written (trimmed, a leading `./` removed).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether `path` (`/`-separated; a leading `./` ignored) matches.
    pub fn matches(&self, path: &str) -> bool {
        self.matches_from(path, true)
    }

    /// Whether `path` matches from any of its segments on: the glob taken as relative to some
    /// folder above, as an absolute path written from outside the project needs
    /// (`/home/me/app/src/a.rs` matches `src/*.rs`).
    pub fn matches_within(&self, path: &str) -> bool {
        self.matches_from(path, false)
    }

    fn matches_from(&self, path: &str, anchored: bool) -> bool {
        if path.len() > MAX_PATH_BYTES {
            return false;
        }
        let path = path.strip_prefix("./").unwrap_or(path);
        let path = if self.basename {
            path.rsplit('/').next().unwrap_or(path)
        } else {
            path
        };
        let segs: Vec<Vec<char>> = path.split('/').map(|s| s.chars().collect()).collect();
        self.alternatives
            .iter()
            .any(|a| match_segments(a, &segs, anchored))
    }
}

/// `{a,b}` groups expanded, left to right (not nested).
fn expand(text: &str) -> Result<Vec<String>, GlobError> {
    let mut out = vec![String::new()];
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let next = chars.next().unwrap_or('\\');
                out.iter_mut().for_each(|s| {
                    s.push('\\');
                    s.push(next);
                });
            }
            '{' => {
                let mut group = String::new();
                loop {
                    match chars.next() {
                        None => return Err(GlobError("a `{` is never closed".into())),
                        Some('{') => return Err(GlobError("`{` groups cannot nest".into())),
                        Some('}') => break,
                        Some(c) => group.push(c),
                    }
                }
                let options: Vec<&str> = group.split(',').collect();
                if out.len() * options.len() > MAX_ALTERNATIVES {
                    return Err(GlobError(format!(
                        "the `{{a,b}}` groups expand to more than {MAX_ALTERNATIVES} alternatives"
                    )));
                }
                out = out
                    .iter()
                    .flat_map(|s| options.iter().map(move |o| format!("{s}{o}")))
                    .collect();
            }
            '}' => return Err(GlobError("a `}` has no `{`".into())),
            c => out.iter_mut().for_each(|s| s.push(c)),
        }
    }
    Ok(out)
}

fn compile(text: &str) -> Result<Vec<Seg>, GlobError> {
    text.split('/')
        .map(|seg| {
            if seg == "**" {
                return Ok(Seg::Any);
            }
            let mut toks = Vec::new();
            let mut chars = seg.chars();
            while let Some(c) = chars.next() {
                toks.push(match c {
                    '\\' => Tok::Lit(chars.next().unwrap_or('\\')),
                    '*' => {
                        if toks.last() != Some(&Tok::Star) {
                            Tok::Star
                        } else {
                            continue;
                        }
                    }
                    '?' => Tok::One,
                    '[' => class(&mut chars)?,
                    c => Tok::Lit(c),
                });
            }
            Ok(Seg::Toks(toks))
        })
        .collect()
}

/// A `[...]` class, after its `[`.
fn class(chars: &mut std::str::Chars<'_>) -> Result<Tok, GlobError> {
    let mut body: Vec<char> = Vec::new();
    loop {
        match chars.next() {
            None => return Err(GlobError("a `[` is never closed".into())),
            // A `]` first (after a `!` or `^`) is a member, not the end.
            Some(']') if !matches!(body[..], [] | ['!' | '^']) => break,
            Some(c) => body.push(c),
        }
    }
    let negated = matches!(body[0], '!' | '^');
    let items = if negated { &body[1..] } else { &body[..] };
    let mut ranges = Vec::new();
    let mut i = 0;
    while i < items.len() {
        if i + 2 < items.len() && items[i + 1] == '-' {
            ranges.push((items[i], items[i + 2]));
            i += 3;
        } else {
            ranges.push((items[i], items[i]));
            i += 1;
        }
    }
    Ok(Tok::Class(negated, ranges))
}

/// Pattern segments against path segments: `**` takes zero or more whole segments; when not
/// `anchored`, the pattern may start at any segment.
fn match_segments(pat: &[Seg], path: &[Vec<char>], anchored: bool) -> bool {
    // ok[j]: the pattern so far matches path[..j] (or a tail of it, when not anchored).
    let mut ok = vec![!anchored; path.len() + 1];
    ok[0] = true;
    for seg in pat {
        let mut next = vec![false; path.len() + 1];
        match seg {
            Seg::Any => {
                let mut reached = false;
                for j in 0..=path.len() {
                    reached |= ok[j];
                    next[j] = reached;
                }
            }
            Seg::Toks(toks) => {
                for j in 0..path.len() {
                    if ok[j] && match_segment(toks, &path[j]) {
                        next[j + 1] = true;
                    }
                }
            }
        }
        ok = next;
    }
    ok[path.len()]
}

/// One segment: the usual wildcard table, `*` and `?` never crossing a `/` (segments hold none).
fn match_segment(toks: &[Tok], s: &[char]) -> bool {
    let mut ok = vec![false; s.len() + 1];
    ok[0] = true;
    for t in toks {
        let mut next = vec![false; s.len() + 1];
        match t {
            Tok::Star => {
                let mut reached = false;
                for j in 0..=s.len() {
                    reached |= ok[j];
                    next[j] = reached;
                }
            }
            _ => {
                for j in 0..s.len() {
                    if ok[j] && one(t, s[j]) {
                        next[j + 1] = true;
                    }
                }
            }
        }
        ok = next;
    }
    ok[s.len()]
}

fn one(t: &Tok, c: char) -> bool {
    match t {
        Tok::Lit(l) => *l == c,
        Tok::One => true,
        Tok::Class(neg, ranges) => ranges.iter().any(|&(a, b)| a <= c && c <= b) != *neg,
        Tok::Star => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(glob: &str, path: &str) -> bool {
        PathGlob::new(glob).unwrap().matches(path)
    }

    #[test]
    fn stars_questions_and_segments() {
        let cases = [
            ("src/**/*.rs", "src/main.rs", true),
            ("src/**/*.rs", "src/a/b/c.rs", true),
            ("src/**/*.rs", "src/a/b/c.ts", false),
            ("src/**/*.rs", "lib/a.rs", false),
            ("src/*.rs", "src/a/b.rs", false),
            ("*.md", "docs/guide/README.md", true),
            ("*.md", "README.mdx", false),
            ("docs/*", "docs/a.md", true),
            ("docs/*", "docs", false),
            ("**", "anything/at/all", true),
            ("a?c", "abc", true),
            ("a?c", "a/c", false),
            ("**/test_*.py", "test_x.py", true),
            ("**/test_*.py", "a/b/test_x.py", true),
            ("./src/*.rs", "./src/a.rs", true),
            ("src/**", "src", true),
        ];
        for (g, p, want) in cases {
            assert_eq!(m(g, p), want, "{g} vs {p}");
        }
    }

    #[test]
    fn within_takes_the_glob_from_any_folder() {
        let g = PathGlob::new("src/*.rs").unwrap();
        assert!(g.matches_within("/home/me/app/src/a.rs"));
        assert!(!g.matches("/home/me/app/src/a.rs"));
        assert!(!g.matches_within("/home/me/app/src/x/a.rs"));
    }

    #[test]
    fn classes_braces_and_escapes() {
        assert!(m("*.{ts,tsx}", "app/x.tsx"));
        assert!(m("*.{ts,tsx}", "x.ts"));
        assert!(!m("*.{ts,tsx}", "x.js"));
        assert!(m("file[0-9].txt", "file7.txt"));
        assert!(!m("file[!0-9].txt", "file7.txt"));
        assert!(m("file[!0-9].txt", "filex.txt"));
        assert!(m(r"a\*b", "a*b"));
        assert!(!m(r"a\*b", "axb"));
        assert!(m("[]]x", "]x"));
    }

    #[test]
    fn malformed_and_hostile_globs_are_refused_or_bounded() {
        for bad in ["", "  ", "a[bc", "{a,b", "{a,{b}}", "a}b"] {
            assert!(PathGlob::new(bad).is_err(), "{bad:?}");
        }
        assert!(PathGlob::new(&"a".repeat(MAX_GLOB_CHARS + 1)).is_err());
        assert!(PathGlob::new("{a,b}{c,d}{e,f}{g,h}{i,j}").is_err());
        // Many stars against a long near-miss: a table, not backtracking, so this is quick.
        let g = PathGlob::new(&"*a".repeat(60)).unwrap();
        assert!(!g.matches(&"a".repeat(59)));
        let g = PathGlob::new(&format!("{}y", "**/".repeat(60))).unwrap();
        assert!(!g.matches(&"x/".repeat(400)));
        assert!(
            !PathGlob::new("**")
                .unwrap()
                .matches(&"a".repeat(MAX_PATH_BYTES + 1))
        );
    }
}
