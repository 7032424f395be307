//! References: a repository's branches and tags (read in place, or as a remote advertised
//! them), and the commit an `@ref` names.

use super::error::{GitError, chain, read_error};
use super::spec::GitSource;
use gix::ObjectId;

/// The branches and tags of a repository and its HEAD, each with the object it peels to.
pub(super) struct Refs {
    head: Option<ObjectId>,
    /// Full names (`refs/heads/..`, `refs/tags/..`, other `refs/..`) and peeled ids.
    names: Vec<(String, ObjectId)>,
}

impl Refs {
    fn find(&self, full: &str) -> Option<ObjectId> {
        self.names
            .iter()
            .find(|(n, _)| n == full)
            .map(|(_, id)| *id)
    }

    /// Up to 10 branches and tags, for an error message.
    fn available(&self) -> String {
        let pick = |prefix: &str| -> Vec<&str> {
            self.names
                .iter()
                .filter_map(|(n, _)| n.strip_prefix(prefix))
                .collect()
        };
        let branches = pick("refs/heads/");
        let tags = pick("refs/tags/");
        if branches.is_empty() && tags.is_empty() {
            return "It has no branches or tags.".into();
        }
        let total = branches.len() + tags.len();
        let shown_branches: Vec<&str> = branches.iter().take(10).copied().collect();
        let shown_tags: Vec<&str> = tags
            .iter()
            .take(10 - shown_branches.len())
            .copied()
            .collect();
        let mut parts = Vec::new();
        if !shown_branches.is_empty() {
            parts.push(format!("branches: {}", shown_branches.join(", ")));
        }
        if !shown_tags.is_empty() {
            parts.push(format!("tags: {}", shown_tags.join(", ")));
        }
        let more = if total > 10 {
            format!(" (and {} more)", total - 10)
        } else {
            String::new()
        };
        format!("It has {}{more}.", parts.join("; "))
    }
}

/// The references of a repository on this machine.
pub(super) fn local_refs(repo: &gix::Repository, url: &str) -> Result<Refs, GitError> {
    let head = repo.head_id().ok().map(|id| id.detach());
    let platform = repo
        .references()
        .map_err(|e| read_error(url, "cannot list references", &e))?;
    let iter = platform
        .all()
        .map_err(|e| read_error(url, "cannot list references", &e))?;
    let mut names = Vec::new();
    for r in iter {
        let Ok(mut r) = r else { continue };
        let name = r.name().as_bstr().to_string();
        if !name.starts_with("refs/") {
            continue;
        }
        if let Ok(id) = r.peel_to_id() {
            names.push((name, id.detach()));
        }
    }
    names.sort();
    Ok(Refs { head, names })
}

/// The commit `src.reference` names in `repo`, peeled from a tag if need be.
pub(super) fn resolve(
    repo: &gix::Repository,
    refs: &Refs,
    src: &GitSource,
) -> Result<ObjectId, GitError> {
    let url = &src.url;
    let (reference, target) = match src.reference.as_deref() {
        None | Some("HEAD") => {
            let Some(head) = refs.head else {
                return Err(GitError::NoHead {
                    url: url.clone(),
                    available: refs.available(),
                });
            };
            ("HEAD", head)
        }
        Some(r) => (r, find_reference(repo, refs, src, r)?),
    };
    let object = repo
        .find_object(target)
        .map_err(|e| GitError::RefNotFound {
            reference: reference.to_string(),
            url: url.clone(),
            available: format!("({}) {}", chain(&e), refs.available()),
        })?;
    let kind = object.kind;
    match object.peel_to_kind(gix::object::Kind::Commit) {
        Ok(commit) => Ok(commit.id),
        Err(_) => Err(GitError::NotACommit {
            reference: reference.to_string(),
            url: url.clone(),
            what: format!("a {kind} ({target})"),
        }),
    }
}

fn find_reference(
    repo: &gix::Repository,
    refs: &Refs,
    src: &GitSource,
    r: &str,
) -> Result<ObjectId, GitError> {
    let url = &src.url;
    if r.starts_with("refs/") {
        if let Some(id) = refs.find(r) {
            return Ok(id);
        }
    } else {
        let branch = refs.find(&format!("refs/heads/{r}"));
        let tag = refs.find(&format!("refs/tags/{r}"));
        match (branch, tag) {
            (Some(b), Some(t)) if b != t => {
                return Err(GitError::AmbiguousRef {
                    reference: r.to_string(),
                    url: url.clone(),
                    detail: format!(
                        "both a branch ({b}) and a tag ({t}); write @refs/heads/{r} or \
                         @refs/tags/{r}"
                    ),
                });
            }
            (Some(id), _) | (None, Some(id)) => return Ok(id),
            (None, None) => {}
        }
    }
    let is_hex = (4..=40).contains(&r.len()) && r.bytes().all(|b| b.is_ascii_hexdigit());
    if is_hex {
        let hex = r.to_ascii_lowercase();
        if hex.len() == 40 {
            if let Ok(id) = ObjectId::from_hex(hex.as_bytes())
                && repo.has_object(id)
            {
                return Ok(id);
            }
        } else if let Ok(prefix) = gix::hash::Prefix::from_hex(&hex) {
            match repo.objects.lookup_prefix(prefix, None) {
                Ok(Some(Ok(id))) => return Ok(id),
                Ok(Some(Err(()))) => {
                    return Err(GitError::AmbiguousRef {
                        reference: r.to_string(),
                        url: url.clone(),
                        detail: "more than one object starts with these digits; write more of \
                                 the commit id (or all 40 digits)"
                            .into(),
                    });
                }
                Ok(None) => {}
                Err(e) => return Err(read_error(url, "cannot look up the commit id", &e)),
            }
        }
    }
    // In place every object of the repository is looked at; over the network only what the
    // branches and tags reach is fetched.
    let reach = if src.scheme() == "file" {
        ""
    } else {
        " A commit id must be reachable from one of them."
    };
    Err(GitError::RefNotFound {
        reference: r.to_string(),
        url: url.clone(),
        available: format!("{}{reach}", refs.available()),
    })
}

/// The refs a remote advertised: its HEAD and its `refs/...` names (sorted), unborn ones left
/// out.
pub(super) fn advertised_refs(remote_refs: &[gix::protocol::handshake::Ref]) -> Refs {
    use gix::protocol::handshake::Ref;
    let mut head = None;
    let mut names = Vec::new();
    for r in remote_refs {
        let (name, id) = match r {
            Ref::Peeled {
                full_ref_name,
                object,
                ..
            }
            | Ref::Direct {
                full_ref_name,
                object,
            }
            | Ref::Symbolic {
                full_ref_name,
                object,
                ..
            } => (full_ref_name, *object),
            Ref::Unborn { .. } => continue,
        };
        let name = name.to_string();
        if name == "HEAD" {
            head = Some(id);
        } else if name.starts_with("refs/") {
            names.push((name, id));
        }
    }
    names.sort();
    Refs { head, names }
}
