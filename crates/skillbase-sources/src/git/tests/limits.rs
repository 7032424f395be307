//! The limits of one import, and the entries a skill may not hold.

use super::*;
use std::io::Read;

#[test]
fn too_many_files_in_a_skill() {
    let r = Repo::new();
    r.write("skills/big/SKILL.md", A_SKILL);
    for i in 0..4 {
        r.write(&format!("skills/big/f{i}.md"), b"x");
    }
    r.write("skills/small/SKILL.md", B_SKILL);
    r.commit("one");
    let l = GitLimits {
        files_per_skill: 4,
        ..limits()
    };
    let (e, m) = msg(r.fetch_limited("", &l));
    assert!(
        matches!(
            e,
            GitError::Limit {
                limit: "files_per_skill",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        m.starts_with("skills/big: 5 files, over the limit of 4 files per skill (files_per_skill)"),
        "{m}"
    );
    let l = GitLimits {
        files_per_skill: 5,
        ..limits()
    };
    assert_eq!(
        r.fetch_limited("", &l).unwrap().skills.len(),
        2,
        "5 files are allowed"
    );
}

#[test]
fn too_many_bytes_in_a_skill() {
    let r = Repo::new();
    r.write("SKILL.md", &[b'a'; 400]);
    r.write("data.bin", &[7u8; 700]);
    r.commit("one");
    let l = GitLimits {
        bytes_per_skill: 1099,
        ..limits()
    };
    let (e, m) = msg(r.fetch_limited("", &l));
    assert!(
        matches!(
            e,
            GitError::Limit {
                limit: "bytes_per_skill",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        m.starts_with(
            "the skill at the repository's root: 1100 bytes, over the limit of 1099 bytes \
             per skill (bytes_per_skill)"
        ),
        "{m}"
    );
    let l = GitLimits {
        bytes_per_skill: 1100,
        ..limits()
    };
    let f = r.fetch_limited("", &l).unwrap();
    assert_eq!(file(&f.skills[0], "data.bin").bytes, vec![7u8; 700]);
}

#[test]
fn too_many_skill_md_candidates_and_too_many_skills() {
    let r = Repo::new();
    for name in ["a", "b", "c"] {
        r.write(&format!("skills/{name}/SKILL.md"), A_SKILL);
    }
    // A nested SKILL.md inside skill a: a candidate, but not a skill of its own.
    r.write("skills/a/nested/SKILL.md", B_SKILL);
    r.commit("one");
    let l = GitLimits {
        skill_md_candidates: 3,
        ..limits()
    };
    let (e, m) = msg(r.fetch_limited("", &l));
    assert!(
        matches!(
            e,
            GitError::Limit {
                limit: "skill_md_candidates",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        m.contains("4 SKILL.md files, over the limit of 3 SKILL.md files per import"),
        "{m}"
    );
    let l = GitLimits {
        skills_per_import: 2,
        ..limits()
    };
    let (e, m) = msg(r.fetch_limited("", &l));
    assert!(
        matches!(
            e,
            GitError::Limit {
                limit: "skills_per_import",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        m.contains("3 skills, over the limit of 2 skills per import (skills_per_import)"),
        "{m}"
    );
    let l = GitLimits {
        skills_per_import: 3,
        skill_md_candidates: 4,
        ..limits()
    };
    let f = r.fetch_limited("", &l).unwrap();
    assert_eq!(dirs(&f), ["skills/a", "skills/b", "skills/c"]);
    assert_eq!(paths(&f.skills[0]), ["SKILL.md", "nested/SKILL.md"]);
    // #subdir narrows what is counted.
    let l = GitLimits {
        skills_per_import: 1,
        skill_md_candidates: 1,
        ..limits()
    };
    assert_eq!(
        dirs(&r.fetch_limited("#skills/b", &l).unwrap()),
        ["skills/b"]
    );
}

#[test]
fn archive_size_counts_the_files_of_the_tree() {
    let r = Repo::new();
    r.write("skills/a/SKILL.md", &[b'a'; 300]);
    r.write("other/big.bin", &[1u8; 5000]);
    r.commit("one");
    let l = GitLimits {
        archive_bytes: 5299,
        ..limits()
    };
    let (e, m) = msg(r.fetch_limited("", &l));
    assert!(
        matches!(
            e,
            GitError::Limit {
                limit: "archive_bytes",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        m.contains("5300 bytes of files, over the limit of 5299 bytes of files per import"),
        "{m}"
    );
    // Only the tree at #subdir counts.
    assert_eq!(dirs(&r.fetch_limited("#skills", &l).unwrap()), ["skills/a"]);
}

#[test]
fn a_symlink_inside_a_skill_is_refused_outside_ignored() {
    let r = Repo::new();
    r.write("skills/a/SKILL.md", A_SKILL);
    r.write("skills/a/target.md", b"t\n");
    std::os::unix::fs::symlink("target.md", r.work.join("skills/a/link.md")).unwrap();
    r.write("skills/b/SKILL.md", B_SKILL);
    std::os::unix::fs::symlink("skills", r.work.join("outside-link")).unwrap();
    r.commit("one");
    assert_eq!(
        r.git(&["ls-files", "-s", "skills/a/link.md"])
            .split(' ')
            .next(),
        Some("120000")
    );
    let (e, m) = msg(r.fetch(""));
    assert!(matches!(e, GitError::UnsafeEntry { .. }), "{e:?}");
    assert!(m.starts_with("skills/a/link.md: a symbolic link"), "{m}");
    assert!(m.contains("whole import"), "{m}");
    // The skill without the link is fine alone; the link outside any skill is ignored.
    assert_eq!(dirs(&r.fetch("#skills/b").unwrap()), ["skills/b"]);
}

#[test]
fn a_submodule_inside_a_skill_is_refused() {
    let r = Repo::new();
    r.write("skills/a/SKILL.md", A_SKILL);
    let c1 = r.commit("one");
    r.git(&[
        "update-index",
        "--add",
        "--cacheinfo",
        &format!("160000,{c1},skills/a/vendor"),
    ]);
    r.git(&["commit", "-q", "-m", "submodule"]);
    let (e, m) = msg(r.fetch(""));
    assert!(matches!(e, GitError::UnsafeEntry { .. }), "{e:?}");
    assert!(m.starts_with("skills/a/vendor: a submodule"), "{m}");
}

#[test]
fn dot_git_is_never_entered() {
    // A tree with a `.git` folder holding a SKILL.md, made with git's plumbing.
    let r = Repo::new();
    r.write("skills/a/SKILL.md", A_SKILL);
    r.commit("one");
    let blob = r.git(&["rev-parse", "HEAD:skills/a/SKILL.md"]);
    let skills = r.git(&["rev-parse", "HEAD:skills"]);
    let inner = {
        let mut child = Command::new("git")
            .args(["mktree"])
            .current_dir(&r.work)
            .env("HOME", r.home())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write as _;
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "100644 blob {blob}\tSKILL.md").unwrap();
        drop(stdin);
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        assert!(child.wait().unwrap().success());
        out.trim().to_string()
    };
    let mktree = |lines: String| {
        let mut child = Command::new("git")
            .args(["mktree"])
            .current_dir(&r.work)
            .env("HOME", r.home())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(lines.as_bytes())
            .unwrap();
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        assert!(child.wait().unwrap().success());
        out.trim().to_string()
    };
    let top = mktree(format!(
        "040000 tree {inner}\t.git\n040000 tree {skills}\tskills\n"
    ));
    let commit = r.git(&["commit-tree", &top, "-m", "dot git"]);
    r.git(&["update-ref", "refs/heads/odd", &commit]);
    let f = r.fetch("@odd").unwrap();
    assert_eq!(f.commit, commit);
    assert_eq!(dirs(&f), ["skills/a"], ".git/SKILL.md is not a skill");
    // Also under #subdir: `.git` is refused as a folder.
    let (e, _) = (GitSource::parse(&format!("git+{}#.git", r.url())), ());
    assert!(e.is_err());
}
