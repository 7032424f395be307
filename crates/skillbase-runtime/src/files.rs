//! Level 3: a skill's files written into the session's workspace, atomically.
//!
//! Each skill gets `skills/<short-hash-of-scope/name>-<slug>/`: the hash keeps distinct skills
//! apart even when their slugs collide, the slug keeps it readable. Files are written to a
//! temporary folder beside it and renamed into place, so a reader never sees half a skill.
//! Paths come from a [`Bundle`], which cannot hold an unsafe path.

use sha2::{Digest as _, Sha256};
use skillbase_format::Bundle;
use std::path::Path;

const MARKER: &str = ".skillbase-bundle";

/// A folder name for a session id: the id itself when it is plain, else `s-` and 128 bits of its
/// SHA-256. Plain ids never start with `s-`, so no id can name another's hashed folder: the map
/// is one-to-one (up to a hash collision).
pub fn session_dir_name(session: &str) -> String {
    let plain = !session.is_empty()
        && session != "."
        && session != ".."
        && !session.starts_with("s-")
        && session
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if plain {
        session.to_owned()
    } else {
        format!("s-{}", &hex(&Sha256::digest(session.as_bytes()))[..32])
    }
}

/// The workspace folder of one agent's session: `<root>/<agent>/<session folder>`. Agent names
/// are plain path segments, so two agents' sessions never share a folder, whatever their ids.
pub fn session_root(root: &Path, agent: &str, session: &str) -> std::path::PathBuf {
    root.join(agent).join(session_dir_name(session))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `<8 hex of sha256("scope/name")>-<slug>`.
pub fn skill_dir_name(scope: &str, name: &str) -> String {
    let hash = hex(&Sha256::digest(format!("{scope}/{name}").as_bytes()));
    let slug: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(48)
        .collect();
    format!("{}-{slug}", &hash[..8])
}

/// Write the bundle under `<session_root>/skills/<dir>/`; returns `skills/<dir>`.
pub fn materialize(
    session_root: &Path,
    scope: &str,
    name: &str,
    bundle: &Bundle,
) -> Result<String, String> {
    let dir_name = skill_dir_name(scope, name);
    let skills = session_root.join("skills");
    std::fs::create_dir_all(&skills)
        .map_err(|e| format!("cannot create {}: {e}", skills.display()))?;
    let target = skills.join(&dir_name);
    let digest = bundle.digest().to_string();
    if std::fs::read_to_string(target.join(MARKER)).is_ok_and(|d| d == digest) {
        return Ok(format!("skills/{dir_name}"));
    }
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let tmp = skills.join(format!(".tmp-{dir_name}-{}-{nonce}", std::process::id()));
    let result = (|| {
        bundle.write_to_dir(&tmp).map_err(|e| e.to_string())?;
        std::fs::write(tmp.join(MARKER), &digest).map_err(|e| e.to_string())?;
        if target.exists() {
            let old = skills.join(format!(".old-{dir_name}-{}-{nonce}", std::process::id()));
            std::fs::rename(&target, &old).map_err(|e| e.to_string())?;
            std::fs::rename(&tmp, &target).map_err(|e| e.to_string())?;
            let _ = std::fs::remove_dir_all(&old);
        } else {
            std::fs::rename(&tmp, &target).map_err(|e| e.to_string())?;
        }
        Ok(())
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    Ok(format!("skills/{dir_name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_hashed_and_slugged() {
        let a = skill_dir_name("shared", "deploy-api");
        let b = skill_dir_name("agent:x", "deploy-api");
        assert!(a.ends_with("-deploy-api") && b.ends_with("-deploy-api"));
        assert_ne!(a, b);
        assert_eq!(session_dir_name("abc-1"), "abc-1");
        assert!(session_dir_name("..").starts_with("s-"));
        assert!(session_dir_name("a b").starts_with("s-"));
        // A session named like another's hashed folder gets a folder of its own.
        let hashed = session_dir_name("a b");
        assert_ne!(session_dir_name(&hashed), hashed);
        assert!(session_dir_name("s-1").starts_with("s-") && session_dir_name("s-1") != "s-1");
        // Per agent by construction.
        let root = Path::new("/w");
        assert_ne!(session_root(root, "a", "s1"), session_root(root, "b", "s1"));
    }

    #[test]
    fn writes_atomically_and_replaces() {
        let tmp = tempfile::tempdir().unwrap();
        let b1 = Bundle::from_pairs(
            [
                (
                    "SKILL.md",
                    b"---\nname: s\ndescription: d\n---\nv1\n".to_vec(),
                ),
                ("scripts/a.sh", b"echo 1\n".to_vec()),
            ],
            &Default::default(),
        )
        .unwrap();
        let dir = materialize(tmp.path(), "shared", "s", &b1).unwrap();
        let full = tmp.path().join(&dir);
        assert_eq!(
            std::fs::read(full.join("scripts/a.sh")).unwrap(),
            b"echo 1\n"
        );
        let b2 = Bundle::single("---\nname: s\ndescription: d\n---\nv2\n").unwrap();
        materialize(tmp.path(), "shared", "s", &b2).unwrap();
        assert!(
            !full.join("scripts/a.sh").exists(),
            "a new revision replaces the folder whole"
        );
        let leftovers: Vec<_> = std::fs::read_dir(tmp.path().join("skills"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn failure_to_write_is_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("not-a-dir");
        std::fs::write(&file, "x").unwrap();
        let b = Bundle::single("---\nname: s\ndescription: d\n---\nv\n").unwrap();
        assert!(materialize(&file, "shared", "s", &b).is_err());
    }
}
