//! The spec of a git source, `git+URL[@ref][#subdir]`: parsed and checked before anything is
//! fetched, and written back in canonical form (what a lockfile records).

use super::error::GitError;
use gix::bstr::ByteSlice;
use std::fmt;

/// Longest spec accepted, in bytes.
pub const MAX_SPEC_BYTES: usize = 2048;

/// The URL schemes a spec may use.
const SCHEMES: [&str; 5] = ["file", "git", "ssh", "https", "http"];

/// A git source as written on the command line: `git+URL[@ref][#subdir]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitSource {
    /// The repository's URL (`file://`, `git://`, `ssh://`, `https://` or `http://`).
    pub url: String,
    /// A branch, a tag, a full reference name (`refs/...`) or a full or abbreviated commit id;
    /// `None`: the remote's HEAD.
    pub reference: Option<String>,
    /// A folder inside the repository ('/'-separated, relative, no trailing '/'); `None`: the root.
    pub subdir: Option<String>,
}

impl GitSource {
    /// Parse `git+URL[@ref][#subdir]`.
    ///
    /// `#subdir` is what follows the last `#`; `@ref` is what follows the last `@` in the URL's
    /// path (after the host), so `git+ssh://git@host/repo.git@v1` has the ref `v1`,
    /// `git+ssh://git@host/repo.git` none, and a ref may hold '/' (`@feature/x`).
    pub fn parse(spec: &str) -> Result<GitSource, GitError> {
        let bad = |problem: String| GitError::Spec {
            spec: shown(spec),
            problem,
        };
        if spec.len() > MAX_SPEC_BYTES {
            return Err(bad(format!(
                "it is {} bytes long, over the limit of {MAX_SPEC_BYTES} bytes; write a shorter URL \
                 or folder",
                spec.len()
            )));
        }
        if let Some(c) = spec.chars().find(|c| c.is_control() || c.is_whitespace()) {
            return Err(bad(format!(
                "it contains {}; write the spec without spaces or control characters \
                 (percent-encode them in the URL, e.g. %20)",
                describe_char(c)
            )));
        }
        let Some(rest) = spec.strip_prefix("git+") else {
            return Err(bad(
                "a git source starts with `git+`; write git+URL[@ref][#subdir], e.g. \
                 git+https://example.com/skills.git@v1#skills/pdf"
                    .into(),
            ));
        };
        let (url_ref, subdir) = match rest.rfind('#') {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, None),
        };
        let subdir = match subdir {
            Some(s) => Some(check_subdir(s).map_err(bad)?),
            None => None,
        };
        let Some(sep) = url_ref.find("://") else {
            return Err(bad(format!(
                "the URL has no scheme; write one of {} (for scp-like `git@host:repo`, write \
                 `ssh://git@host/repo`)",
                scheme_list()
            )));
        };
        let scheme = &url_ref[..sep];
        if !SCHEMES.contains(&scheme) {
            return Err(bad(format!(
                "the URL scheme `{scheme}` is not supported; write one of {}",
                scheme_list()
            )));
        }
        let after_scheme = sep + 3;
        let Some(path_start) = url_ref[after_scheme..].find('/').map(|i| i + after_scheme) else {
            return Err(bad(format!(
                "the URL has no repository path; write {scheme}://HOST/PATH/TO/REPO{}",
                if scheme == "file" {
                    " (file:///absolute/path)"
                } else {
                    ""
                }
            )));
        };
        let (url, reference) = match url_ref[path_start..].rfind('@') {
            Some(i) => {
                let at = path_start + i;
                (&url_ref[..at], Some(&url_ref[at + 1..]))
            }
            None => (url_ref, None),
        };
        let host = &url[after_scheme..path_start];
        if scheme == "file" && !host.is_empty() {
            return Err(bad(format!(
                "a file URL names no host (`{host}` found); write file:///absolute/path/to/repo"
            )));
        }
        if scheme != "file" && host.rsplit('@').next().unwrap_or("").is_empty() {
            return Err(bad(format!(
                "the URL has no host; write {scheme}://HOST/PATH/TO/REPO"
            )));
        }
        if url[path_start..].trim_matches('/').is_empty() {
            return Err(bad(format!(
                "the URL has no repository path after the host; write {scheme}://{host}/PATH/TO/REPO"
            )));
        }
        if let Err(e) = gix::url::parse(url.as_bytes().as_bstr()) {
            return Err(bad(format!(
                "the URL `{url}` is not valid ({e}); write {scheme}://HOST/PATH/TO/REPO"
            )));
        }
        let reference = match reference {
            Some(r) => Some(check_reference(r).map_err(bad)?),
            None => None,
        };
        Ok(GitSource {
            url: url.to_string(),
            reference,
            subdir,
        })
    }

    /// The canonical text (what a lockfile records), `git+URL[@ref][#subdir]`.
    pub fn to_spec(&self) -> String {
        let mut s = format!("git+{}", self.url);
        if let Some(r) = &self.reference {
            s.push('@');
            s.push_str(r);
        }
        if let Some(d) = &self.subdir {
            s.push('#');
            s.push_str(d);
        }
        s
    }

    /// The URL's scheme (`file`, `git`, `ssh`, `https` or `http`).
    pub(super) fn scheme(&self) -> &str {
        self.url.split("://").next().unwrap_or("")
    }
}

impl fmt::Display for GitSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_spec())
    }
}

/// The spec as shown in an error: escaped, and cut when long.
pub(super) fn shown(spec: &str) -> String {
    let mut cut: String = spec.chars().take(120).collect();
    if cut.len() < spec.len() {
        cut.push('…');
    }
    format!("{cut:?}")
}

fn describe_char(c: char) -> String {
    if c == ' ' {
        "a space".into()
    } else if c.is_whitespace() {
        format!("whitespace ({})", c.escape_unicode())
    } else {
        format!("a control character ({})", c.escape_default())
    }
}

fn scheme_list() -> String {
    SCHEMES.map(|s| format!("{s}://")).join(", ")
}

/// A `#subdir`: relative, '/'-separated, no `..`, `.`, empty parts, backslashes or `.git`.
/// One trailing '/' is dropped.
fn check_subdir(s: &str) -> Result<String, String> {
    let fix = "write a folder relative to the repository's root, e.g. #skills/pdf";
    if s.is_empty() {
        return Err(format!(
            "the folder after `#` is empty; {fix}, or drop the `#`"
        ));
    }
    if s.starts_with('/') {
        return Err(format!("the folder `{s}` starts with `/`; {fix}"));
    }
    if s.contains('\\') {
        return Err(format!(
            "the folder `{s}` contains a backslash; write `/` between folders, e.g. #skills/pdf"
        ));
    }
    let s = s.strip_suffix('/').unwrap_or(s);
    for part in s.split('/') {
        match part {
            "" => return Err(format!("the folder `{s}` has an empty part (`//`); {fix}")),
            "." | ".." => {
                return Err(format!(
                    "the folder `{s}` contains `{part}`; {fix} (no `.` or `..` parts)"
                ));
            }
            ".git" => return Err(format!("the folder `{s}` goes into `.git`; {fix}")),
            _ => {}
        }
    }
    Ok(s.to_string())
}

/// An `@ref`: a valid (partial) git reference name or commit id.
fn check_reference(r: &str) -> Result<String, String> {
    let fix = "write a branch, a tag or a commit id after `@`, e.g. @main, @v1.2.0 or @3f2a9c1";
    if r.is_empty() {
        return Err(format!(
            "the reference after `@` is empty; {fix}, or drop the `@`"
        ));
    }
    if r.starts_with('-') {
        return Err(format!("the reference `{r}` starts with `-`; {fix}"));
    }
    if let Err(e) = gix::validate::reference::name_partial(r.as_bytes().as_bstr()) {
        return Err(format!("`{r}` is not a valid git reference ({e}); {fix}"));
    }
    Ok(r.to_string())
}
