//! The git source's tests: fixtures made with the `git` program (tests only), then one module
//! per concern.

mod daemon;
mod http;
mod limits;
mod local;
mod parse;

use super::*;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use tempfile::TempDir;

// ---- fixtures: repositories made with the `git` program (tests only) ----

/// Runs `git` in `dir` with no system or user configuration, and returns its trimmed stdout.
fn git(home: &Path, dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "tag.gpgsign=false",
            "-c",
            "core.symlinks=true",
        ])
        .args(args)
        .current_dir(dir)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", home.join("gitconfig"))
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .stdin(Stdio::null())
        .output()
        .expect("the git program runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A work repository (`origin`) in a temporary folder, with a cache folder beside it.
struct Repo {
    tmp: TempDir,
    work: PathBuf,
}

impl Repo {
    fn new() -> Repo {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("origin");
        fs::create_dir_all(&work).unwrap();
        fs::create_dir_all(tmp.path().join("home")).unwrap();
        let r = Repo { tmp, work };
        r.git(&["init", "-q"]);
        r
    }
    fn home(&self) -> PathBuf {
        self.tmp.path().join("home")
    }
    fn cache(&self) -> PathBuf {
        self.tmp.path().join("cache")
    }
    fn git(&self, args: &[&str]) -> String {
        git(&self.home(), &self.work, args)
    }
    fn write(&self, rel: &str, bytes: &[u8]) {
        let p = self.work.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, bytes).unwrap();
    }
    fn write_exec(&self, rel: &str, bytes: &[u8]) {
        self.write(rel, bytes);
        let p = self.work.join(rel);
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    }
    fn commit(&self, msg: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", msg]);
        self.git(&["rev-parse", "HEAD"])
    }
    fn url(&self) -> String {
        format!("file://{}", self.work.display())
    }
    fn src(&self, suffix: &str) -> GitSource {
        GitSource::parse(&format!("git+{}{suffix}", self.url())).unwrap()
    }
    fn fetch(&self, suffix: &str) -> Result<Fetched, GitError> {
        fetch(&self.src(suffix), &GitLimits::default(), &self.cache())
    }
    fn fetch_limited(&self, suffix: &str, limits: &GitLimits) -> Result<Fetched, GitError> {
        fetch(&self.src(suffix), limits, &self.cache())
    }
}

const A_SKILL: &[u8] = b"---\nname: a\ndescription: Skill a.\n---\nDo a.\n";
const A_RUN: &[u8] = b"#!/bin/sh\necho a\n";
const A_NOTES: &[u8] = b"notes for a\n";
const B_SKILL: &[u8] = b"---\nname: b\ndescription: Skill b.\n---\nDo b.\n";
const B_DEV: &[u8] = b"---\nname: b\ndescription: Skill b, on dev.\n---\nDo b better.\n";
const ROOT_SKILL: &[u8] = b"---\nname: root\ndescription: The root skill.\n---\nAll.\n";

/// main: C1 (skills/a, skills/b, README.md, docs/) then C2 (a SKILL.md at the root);
/// the annotated tag v1 and the lightweight tag light at C1; dev: C1 then C3 (skills/b changed).
struct Standard {
    repo: Repo,
    c1: String,
    c2: String,
    c3: String,
}

fn standard() -> Standard {
    let repo = Repo::new();
    repo.write("skills/a/SKILL.md", A_SKILL);
    repo.write_exec("skills/a/run.sh", A_RUN);
    repo.write("skills/a/ref/notes.md", A_NOTES);
    repo.write("skills/b/SKILL.md", B_SKILL);
    repo.write("README.md", b"# skills\n");
    repo.write("docs/guide.md", b"a guide\n");
    let c1 = repo.commit("c1");
    repo.git(&["tag", "-a", "v1", "-m", "version 1"]);
    repo.git(&["tag", "light"]);
    repo.git(&["checkout", "-q", "-b", "dev"]);
    repo.write("skills/b/SKILL.md", B_DEV);
    let c3 = repo.commit("c3");
    repo.git(&["checkout", "-q", "main"]);
    repo.write("SKILL.md", ROOT_SKILL);
    let c2 = repo.commit("c2");
    Standard { repo, c1, c2, c3 }
}

fn dirs(f: &Fetched) -> Vec<&str> {
    f.skills.iter().map(|s| s.dir.as_str()).collect()
}

fn paths(s: &FetchedSkill) -> Vec<&str> {
    s.files.iter().map(|f| f.path.as_str()).collect()
}

fn file<'a>(s: &'a FetchedSkill, path: &str) -> &'a FetchedFile {
    s.files
        .iter()
        .find(|f| f.path == path)
        .unwrap_or_else(|| panic!("{path} in {:?}", paths(s)))
}

/// Checks the two skills of commit C1 (or C3, with `b` the skills/b/SKILL.md text).
fn assert_c1_skills(f: &Fetched, b: &[u8]) {
    assert_eq!(dirs(f), ["skills/a", "skills/b"]);
    let a = &f.skills[0];
    assert_eq!(paths(a), ["SKILL.md", "ref/notes.md", "run.sh"]);
    assert_eq!(file(a, "SKILL.md").bytes, A_SKILL);
    assert_eq!(file(a, "ref/notes.md").bytes, A_NOTES);
    assert_eq!(file(a, "run.sh").bytes, A_RUN);
    assert!(file(a, "run.sh").executable, "100755 is executable");
    assert!(!file(a, "SKILL.md").executable);
    assert!(!file(a, "ref/notes.md").executable);
    assert_eq!(paths(&f.skills[1]), ["SKILL.md"]);
    assert_eq!(f.skills[1].files[0].bytes, b);
}

fn msg(r: Result<Fetched, GitError>) -> (GitError, String) {
    match r {
        Ok(f) => panic!("expected an error, got skills {:?}", dirs(&f)),
        Err(e) => {
            let m = e.to_string();
            (e, m)
        }
    }
}

/// The default limits.
fn limits() -> GitLimits {
    GitLimits::default()
}
