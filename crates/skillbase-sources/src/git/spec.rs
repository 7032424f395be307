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
    /// The password of an `http(s)://user:password@host/` URL: taken out of `url`, used for the
    /// fetch only, and never shown, recorded or compared.
    pub(crate) password: Option<Password>,
}

/// A password given in a URL: its `Debug` shows nothing of it, and any two are equal (so a
/// source compares by what it names, not by its credentials).
#[derive(Clone)]
pub(crate) struct Password(pub(crate) String);

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Password(***)")
    }
}

impl PartialEq for Password {
    fn eq(&self, _: &Password) -> bool {
        true
    }
}

impl Eq for Password {}

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
        let (url, password) = check_url(url, scheme, after_scheme, path_start).map_err(bad)?;
        let reference = match reference {
            Some(r) => Some(check_reference(r).map_err(bad)?),
            None => None,
        };
        Ok(GitSource {
            url: url.to_string(),
            reference,
            subdir,
            password,
        })
    }

    /// A source of `url` (already checked, without a password) at `reference`, under `subdir`.
    pub(crate) fn at(&self, reference: Option<String>, subdir: Option<String>) -> GitSource {
        GitSource {
            url: self.url.clone(),
            reference,
            subdir,
            password: self.password.clone(),
        }
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

/// The URL (`scheme://[user[:password]@]host[:port]/path`, `after_scheme` and `path_start` its
/// host's and path's offsets) checked: without its password, and the password.
fn check_url(
    url: &str,
    scheme: &str,
    after_scheme: usize,
    path_start: usize,
) -> Result<(String, Option<Password>), String> {
    let host = &url[after_scheme..path_start];
    let (url, password) = take_password(url, scheme, after_scheme, path_start)?;
    let path_start = path_start - password.as_ref().map_or(0, |p| p.0.len() + 1);
    let host = match &password {
        Some(_) => &url[after_scheme..path_start],
        None => host,
    };
    if let Some(part) = host
        .split(['@', ':'])
        .chain(url[path_start..].split('/'))
        .find(|p| p.starts_with('-'))
    {
        return Err(format!(
            "`{part}` in the URL starts with `-`, which a program could read as an option; \
                 write a host, user and path that do not start with `-`"
        ));
    }
    if scheme == "file" && !host.is_empty() {
        return Err(format!(
            "a file URL names no host (`{host}` found); write file:///absolute/path/to/repo"
        ));
    }
    if scheme != "file" && host.rsplit('@').next().unwrap_or("").is_empty() {
        return Err(format!(
            "the URL has no host; write {scheme}://HOST/PATH/TO/REPO"
        ));
    }
    if url[path_start..].trim_matches('/').is_empty() {
        return Err(format!(
            "the URL has no repository path after the host; write {scheme}://{host}/PATH/TO/REPO"
        ));
    }
    if let Err(e) = gix::url::parse(url.as_bytes().as_bstr()) {
        return Err(format!(
            "the URL `{url}` is not valid ({e}); write {scheme}://HOST/PATH/TO/REPO"
        ));
    }
    Ok((url, password))
}

/// The spec as shown in an error: any password hidden, escaped, and cut when long.
pub(crate) fn shown(spec: &str) -> String {
    let spec = super::error::redact_userinfo(spec);
    let mut cut: String = spec.chars().take(120).collect();
    if cut.len() < spec.len() {
        cut.push('…');
    }
    format!("{cut:?}")
}

/// Split the password out of `url`'s `user:password@` (between `after_scheme` and
/// `path_start`): the URL without it, and the password. Only http(s) takes one.
fn take_password(
    url: &str,
    scheme: &str,
    after_scheme: usize,
    path_start: usize,
) -> Result<(String, Option<Password>), String> {
    let authority = &url[after_scheme..path_start];
    let Some(at) = authority.rfind('@') else {
        return Ok((url.to_string(), None));
    };
    let Some(colon) = authority[..at].find(':') else {
        return Ok((url.to_string(), None));
    };
    if scheme != "https" && scheme != "http" {
        return Err(format!(
            "a {scheme}:// URL takes no password (`user:***@` found); remove it (ssh uses its keys)"
        ));
    }
    let password = authority[colon + 1..at].to_string();
    let url = format!(
        "{}{}{}",
        &url[..after_scheme + colon],
        &authority[at..],
        &url[path_start..]
    );
    Ok((url, Some(Password(password))))
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
