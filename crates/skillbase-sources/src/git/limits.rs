//! The limits of one import from git.

/// Limits of one import from git (AgentArea's defaults), configurable in `[git]`. Its per-skill
/// counts are stricter than [`Limits::pack`](crate::Limits::pack)'s, which a git skill is loaded under too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitLimits {
    /// Largest repository: both the packed size of the cache repository after a network fetch
    /// (the `.pack` files' total) and the total size of the files (blobs) in the tree at
    /// `#subdir` (the only measure for `file://`, read in place) are held to it. 25 MiB.
    pub archive_bytes: u64,
    /// Most files in one skill. 200.
    pub files_per_skill: usize,
    /// Most bytes of files in one skill. 10 MiB.
    pub bytes_per_skill: u64,
    /// Most `SKILL.md` files found in the tree at `#subdir`, nested ones included. 50.
    pub skill_md_candidates: usize,
    /// Most skills in one import. 10.
    pub skills_per_import: usize,
}

impl Default for GitLimits {
    fn default() -> Self {
        GitLimits {
            archive_bytes: 25 * 1024 * 1024,
            files_per_skill: 200,
            bytes_per_skill: 10 * 1024 * 1024,
            skill_md_candidates: 50,
            skills_per_import: 10,
        }
    }
}

impl GitLimits {
    /// The defaults with `[git]` of skillbase.toml (`t`) over them, each key a positive integer;
    /// what is wrong, with the keys there are, otherwise.
    pub fn from_table(t: &toml::Table) -> Result<GitLimits, String> {
        let mut l = GitLimits::default();
        for (k, v) in t {
            let n = v
                .as_integer()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("{k} must be a positive integer"))?;
            match k.as_str() {
                "archive_bytes" => l.archive_bytes = n as u64,
                "files_per_skill" => l.files_per_skill = n as usize,
                "bytes_per_skill" => l.bytes_per_skill = n as u64,
                "skill_md_candidates" => l.skill_md_candidates = n as usize,
                "skills_per_import" => l.skills_per_import = n as usize,
                other => {
                    return Err(format!(
                        "has no key '{other}' (archive_bytes, files_per_skill, bytes_per_skill, skill_md_candidates, skills_per_import)"
                    ));
                }
            }
        }
        Ok(l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_git_table_overrides_defaults_and_refuses_what_it_cannot_read() {
        let table = |text: &str| text.parse::<toml::Table>().unwrap();
        let l = GitLimits::from_table(&table("skills_per_import = 3\narchive_bytes = 1024\n"));
        assert_eq!(
            l.unwrap(),
            GitLimits {
                skills_per_import: 3,
                archive_bytes: 1024,
                ..GitLimits::default()
            }
        );
        for (text, expected) in [
            (
                "skills_per_import = 0",
                "skills_per_import must be a positive integer",
            ),
            (
                "files_per_skill = \"many\"",
                "files_per_skill must be a positive integer",
            ),
            (
                "depth = 3",
                "has no key 'depth' (archive_bytes, files_per_skill",
            ),
        ] {
            let e = GitLimits::from_table(&table(text)).unwrap_err();
            assert!(e.contains(expected), "{text}: {e}");
        }
    }
}
