//! Marketplaces: read from a folder and from git (its own plugins and plugins in repositories
//! of their own, over HTTP), every malformed, oversized or hostile manifest refused naming the
//! entry at fault, and exported marketplaces read back with the same digests.

use super::*;
use crate::test_http::{GitHttp, commit_and_serve, git_in};
use crate::{Limits, Reader, Source};
use std::os::unix::fs::symlink;
use tempfile::TempDir;

fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, bytes).unwrap();
}

/// A valid skill `name` at `root/rel/name`.
fn skill(root: &Path, rel: &str, name: &str) {
    let text = format!("---\nname: {name}\ndescription: Skill {name}.\n---\nDo {name}.\n");
    write(
        root,
        &join(rel, &format!("{name}/SKILL.md")),
        text.as_bytes(),
    );
}

fn manifest(root: &Path, json: &str) {
    write(root, MANIFEST, json.as_bytes());
}

fn reader(tmp: &TempDir) -> Reader {
    Reader::new(Limits::default(), tmp.path().join("cache"))
}

/// A marketplace: `tools` (two skills, one more folder named by `skills`), `docs` (one skill,
/// under `metadata.pluginRoot`), `hooks-only` (no skills).
fn standard(root: &Path) {
    manifest(
        root,
        r#"{
          "name": "team", "owner": {"name": "Team"},
          "metadata": {"pluginRoot": "./plugins"},
          "plugins": [
            {"name": "tools", "source": "./tools", "skills": ["./extra/"]},
            {"name": "docs", "source": "docs", "description": "Docs", "version": "1.0.0"},
            {"name": "hooks-only", "source": "./hooks-only", "strict": false}
          ]
        }"#,
    );
    skill(root, "plugins/tools/skills", "lint");
    skill(root, "plugins/tools/skills", "format");
    skill(root, "plugins/tools/extra", "release");
    write(
        root,
        "plugins/tools/.claude-plugin/plugin.json",
        b"{\"name\":\"tools\"}",
    );
    skill(root, "plugins/docs/skills", "write-docs");
    write(root, "plugins/hooks-only/hooks/hooks.json", b"{}");
}

fn names(read: &Read) -> Vec<String> {
    let mut v: Vec<String> = read.skills.iter().filter_map(|s| s.name()).collect();
    v.sort();
    v
}

fn err(r: Result<Read, SourceError>) -> String {
    match r {
        Ok(read) => panic!("expected an error, read {:?}", names(&read)),
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn a_folder_marketplace_imports_every_plugins_skills() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("market");
    standard(&root);
    let r = reader(&tmp);
    let read = r.read(&Source::Path(root.clone())).await.unwrap();
    assert_eq!(names(&read), ["format", "lint", "release", "write-docs"]);
    let canonical = root.canonicalize().unwrap().display().to_string();
    assert_eq!(read.source, canonical);
    assert!(read.skills.iter().all(|s| s.origin.source == canonical));
    assert_eq!(read.notes, ["plugin `hooks-only` has no skills; skipped"]);

    // One plugin, or two, by name.
    let docs = r
        .read_plugins(&Source::Path(root.clone()), &["docs".into()])
        .await
        .unwrap();
    assert_eq!(names(&docs), ["write-docs"]);
    let both = ["docs".to_string(), "tools".to_string()];
    let two = r.read_plugins(&Source::Path(root.clone()), &both).await;
    assert_eq!(names(&two.unwrap()).len(), 4);
    let m = err(r
        .read_plugins(&Source::Path(root.clone()), &["nope".into()])
        .await);
    assert!(
        m.contains("has no plugin named `nope`; its plugins are: tools, docs, hooks-only"),
        "{m}"
    );
    let m = err(r
        .read_plugins(&Source::Path(root.clone()), &["hooks-only".into()])
        .await);
    assert!(m.contains("the plugin `hooks-only` has no skills"), "{m}");
    // A folder of skills is not a marketplace.
    let plain = root.join("plugins/tools/skills");
    let m = err(r
        .read_plugins(&Source::Path(plain), &["tools".into()])
        .await);
    assert!(m.contains("is not a plugin marketplace"), "{m}");
    // What the lockfile re-reads: the marketplace's own skills.
    let again = r.read_path(&root, &canonical).unwrap();
    assert_eq!(again.len(), 4);
}

/// The message for `json` as the manifest of a marketplace with one plugin, `a`.
async fn manifest_error(json: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("m");
    skill(&root, "plugins/a/skills", "x");
    manifest(&root, json);
    err(reader(&tmp).read(&Source::Path(root)).await)
}

#[tokio::test]
async fn malformed_and_hostile_manifests_name_the_entry_at_fault() {
    let one = |source: &str| {
        format!(
            r#"{{"name":"m","owner":{{"name":"o"}},"plugins":[{{"name":"a","source":{source}}}]}}"#
        )
    };
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let many: Vec<String> = (0..=MAX_PLUGINS)
        .map(|i| format!(r#"{{"name":"p{i}","source":"./p{i}"}}"#))
        .collect();
    let many = format!(r#"{{"name":"m","plugins":[{}]}}"#, many.join(","));
    let cases: Vec<(String, &str)> = vec![
        ("{\"name\": \"m\", ".into(), "not valid JSON (line 1, column "),
        (deep, "not valid JSON"),
        ("[]".into(), "must be a JSON object"),
        (r#"{"plugins":[]}"#.into(), "name: missing"),
        (r#"{"name":"m"}"#.into(), "plugins: missing"),
        (r#"{"name":"m","plugins":{}}"#.into(), "plugins: must be an array"),
        (many, "plugins: 257 entries, over the limit of 256"),
        (r#"{"name":"m","plugins":["a"]}"#.into(), "plugins[0]: must be an object"),
        (
            r#"{"name":"m","plugins":[{"name":"a","source":"./plugins/a"},{"name":"a","source":"./b"}]}"#.into(),
            "plugins[1].name: `a` is listed twice",
        ),
        (r#"{"name":"m","plugins":[{"name":"../a","source":"./a"}]}"#.into(), "plugins[0].name: \"../a\" is not a plugin name"),
        (r#"{"name":"m","plugins":[{"name":"a"}]}"#.into(), "plugins[0].source: missing"),
        (one("\"../../etc\""), "plugins[0].source: \"../../etc\" escapes the marketplace"),
        (one("\"./plugins/../../x\""), "plugins[0].source: \"./plugins/../../x\" escapes the marketplace"),
        (one("\"/etc\""), "plugins[0].source: \"/etc\" is an absolute path outside the marketplace"),
        (one("\"~/x\""), "is an absolute path"),
        (one("\"C:/x\""), "is an absolute path"),
        (one("\"plugins\\\\a\""), "contains a backslash"),
        (one("\"./.git/hooks\""), "goes into `.git`"),
        (one("\"./plugins/missing\""), "plugins[0].source: \"plugins/missing\" does not exist in the marketplace"),
        (one("3"), "plugins[0].source: must be a relative path"),
        (one(r#"{"source":"npm","package":"x"}"#), "plugins[0].source.source: `npm` sources are not supported"),
        (one(r#"{"source":"github"}"#), "plugins[0].source.repo: missing"),
        (one(r#"{"source":"github","repo":"../x"}"#), "plugins[0].source.repo: \"../x\" is not owner/repo"),
        (one(r#"{"source":"github","repo":"-o/x"}"#), "is not owner/repo"),
        (one(r#"{"source":"github","repo":"o/r","ref":"--upload-pack=x"}"#), "reference `--upload-pack=x` starts with `-`"),
        (one(r#"{"source":"github","repo":"o/r","sha":"abc"}"#), "plugins[0].source.sha: \"abc\" is not a full commit id"),
        (one(r#"{"source":"url","url":"file:///etc/repo"}"#), "plugins[0].source.url: a marketplace cannot name a repository on this machine"),
        (one(r#"{"source":"url","url":"ssh://-oProxyCommand=x/r"}"#), "starts with `-`"),
        (one(r#"{"source":"url","url":"https://h.example/r.git@v1"}"#), "write the branch or tag in `ref`"),
        (one(r#"{"source":"git-subdir","url":"https://h.example/r.git","path":"../x"}"#), "plugins[0].source.path: \"../x\" escapes the repository"),
        (
            r#"{"name":"m","plugins":[{"name":"a","source":"./plugins/a","skills":["../../x"]}]}"#.into(),
            "plugins[0].skills[0]: \"../../x\" escapes the plugin",
        ),
        (
            r#"{"name":"m","plugins":[{"name":"a","source":"./plugins/a","skills":"./nope"}]}"#.into(),
            "plugins[0].skills[0]: \"nope\" does not exist in the marketplace",
        ),
        (
            r#"{"name":"m","metadata":{"pluginRoot":"../up"},"plugins":[]}"#.into(),
            "metadata.pluginRoot: \"../up\" escapes the marketplace",
        ),
        (r#"{"name":"m","plugins":[]}"#.into(), "no plugin of the marketplace has skills"),
    ];
    for (json, expected) in cases {
        let m = manifest_error(&json).await;
        assert!(m.contains(MANIFEST), "{m}");
        assert!(
            m.contains(expected),
            "{json}\n  expected: {expected}\n  got: {m}"
        );
    }
    // Oversized: refused before it is parsed.
    let big = format!(
        r#"{{"name":"m","plugins":[],"pad":"{}"}}"#,
        "x".repeat(MAX_MANIFEST_BYTES as usize)
    );
    let m = manifest_error(&big).await;
    assert!(
        m.contains("over the limit of 1048576 bytes for a manifest"),
        "{m}"
    );
}

#[tokio::test]
async fn links_in_a_folder_marketplace_are_refused_not_followed() {
    let outside = tempfile::tempdir().unwrap();
    skill(outside.path(), "skills", "secret");
    write(
        outside.path(),
        "m.json",
        br#"{"name":"m","plugins":[{"name":"a","source":"./a"}]}"#,
    );
    let ok = r#"{"name":"m","plugins":[{"name":"a","source":"./a"}]}"#;
    type Setup = fn(&Path, &Path);
    let cases: [(&str, Setup, &str); 4] = [
        (
            ok,
            |root, out| symlink(out, root.join("a")).unwrap(),
            "plugins[0].source: \"a\" is reached through a symbolic link",
        ),
        (
            ok,
            |root, out| {
                fs::create_dir_all(root.join("a")).unwrap();
                symlink(out.join("skills"), root.join("a/skills")).unwrap();
            },
            "plugins[0]: \"skills\" is reached through a symbolic link",
        ),
        (
            "",
            |root, out| {
                fs::create_dir_all(root.join(".claude-plugin")).unwrap();
                symlink(out.join("m.json"), root.join(MANIFEST)).unwrap();
            },
            "is not a plain file",
        ),
        (
            "",
            |root, out| {
                fs::create_dir_all(out.join("cp")).unwrap();
                fs::copy(out.join("m.json"), out.join("cp/marketplace.json")).unwrap();
                symlink(out.join("cp"), root.join(".claude-plugin")).unwrap();
            },
            ".claude-plugin is reached through a symbolic link",
        ),
    ];
    for (json, setup, expected) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("m");
        fs::create_dir_all(&root).unwrap();
        if !json.is_empty() {
            manifest(&root, json);
        }
        setup(&root, outside.path());
        let m = err(reader(&tmp).read(&Source::Path(root)).await);
        assert!(m.contains(expected), "expected: {expected}\n  got: {m}");
        assert!(!m.contains("secret"), "{m}");
    }
}

#[tokio::test]
async fn a_skill_offered_by_two_plugins_is_refused_naming_both() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("m");
    manifest(
        &root,
        r#"{"name":"m","plugins":[{"name":"a","source":"./a"},{"name":"b","source":"./b"},{"name":"c","source":"./c"}]}"#,
    );
    skill(&root, "a/skills", "one");
    skill(&root, "b/skills", "two");
    skill(&root, "c/skills", "one");
    let r = reader(&tmp);
    let m = err(r.read(&Source::Path(root.clone())).await);
    assert!(
        m.contains("the skill `one` is offered by both plugins[0] (`a`) and plugins[2] (`c`); import one of them with --plugin"),
        "{m}"
    );
    let picked = r
        .read_plugins(&Source::Path(root), &["a".into(), "b".into()])
        .await;
    assert_eq!(names(&picked.unwrap()), ["one", "two"]);
}

#[tokio::test]
async fn more_skills_than_an_import_allows_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("m");
    manifest(
        &root,
        r#"{"name":"m","plugins":[{"name":"a","source":"./a"}]}"#,
    );
    for i in 0..3 {
        skill(&root, "a/skills", &format!("s{i}"));
    }
    let mut limits = Limits::default();
    limits.pack.max_skills = 2;
    let r = Reader::new(limits, tmp.path().join("cache"));
    let m = err(r.read(&Source::Path(root)).await);
    assert!(
        m.contains("holds 3 skills, over the limit of 2")
            || m.contains("over the limit of 2 per import"),
        "{m}"
    );
}

/// A git repository holding the standard marketplace, plus a plugin `remote` fetched from
/// `owner/plugin` under the HTTP server's base.
#[tokio::test]
async fn a_git_marketplace_reads_its_plugins_and_remote_ones_over_http() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    fs::create_dir_all(&home).unwrap();
    // The remote plugin's repository, served over HTTP as owner/plugin.git.
    let plugin = tmp.path().join("plugin");
    skill(&plugin, "skills", "remote-skill");
    let served = tmp.path().join("served");
    let plugin_commit = commit_and_serve(&home, &plugin, &served.join("owner/plugin.git"));
    let Some(server) = GitHttp::start(&served, &home, None) else {
        eprintln!("skipped: git-http-backend not available");
        return;
    };
    let base = format!("http://127.0.0.1:{}/", server.port);
    // The marketplace's repository.
    let work = tmp.path().join("market");
    standard(&work);
    let text = fs::read_to_string(work.join(MANIFEST)).unwrap().replace(
        r#"{"name": "hooks-only""#,
        r#"{"name": "remote", "source": {"source": "github", "repo": "owner/plugin", "ref": "main"}},
            {"name": "hooks-only""#,
    );
    manifest(&work, &text);
    git_in(&home, &work, &["init", "-q"]);
    git_in(&home, &work, &["add", "-A"]);
    git_in(&home, &work, &["commit", "-q", "-m", "market"]);
    let commit = git_in(&home, &work, &["rev-parse", "HEAD"]);

    let r = reader(&tmp).with_git_base(&base).unwrap();
    let spec = format!("git+file://{}", work.display());
    let source = Source::parse(Path::new(&spec), r.git_base()).unwrap();
    let read = r.read(&source).await.unwrap();
    assert_eq!(
        names(&read),
        ["format", "lint", "release", "remote-skill", "write-docs"]
    );
    assert_eq!(read.commit.as_deref(), Some(commit.as_str()));
    let lint = read
        .skills
        .iter()
        .find(|s| s.name().as_deref() == Some("lint"))
        .unwrap();
    assert_eq!(lint.origin.source, spec);
    assert_eq!(lint.origin.reference.as_deref(), Some(commit.as_str()));
    assert_eq!(
        lint.origin.path.as_deref(),
        Some("plugins/tools/skills/lint")
    );
    let remote = read
        .skills
        .iter()
        .find(|s| s.name().as_deref() == Some("remote-skill"))
        .unwrap();
    assert_eq!(remote.origin.source, format!("git+{base}owner/plugin.git"));
    assert_eq!(
        remote.origin.reference.as_deref(),
        Some(plugin_commit.as_str())
    );
    assert_eq!(remote.origin.path.as_deref(), Some("skills/remote-skill"));
    assert_eq!(read.notes, ["plugin `hooks-only` has no skills; skipped"]);

    // The lockfile's entries, re-read at their origins, match.
    assert_lock_verifies(&r, &read).await;

    // GitHub shorthand, under the same base: owner/repo[/path][@ref].
    let short = Source::parse(Path::new("owner/plugin/skills@main"), r.git_base()).unwrap();
    let short = r.read(&short).await.unwrap();
    assert_eq!(names(&short), ["remote-skill"]);
    assert_eq!(short.commit.as_deref(), Some(plugin_commit.as_str()));

    // One plugin by name; a remote plugin alone.
    let one = r.read_plugins(&source, &["remote".into()]).await.unwrap();
    assert_eq!(names(&one), ["remote-skill"]);
    // The git limits hold for the whole marketplace.
    let mut limits = Limits::default();
    limits.git.skills_per_import = 4;
    let small = Reader::new(limits, tmp.path().join("cache"))
        .with_git_base(&base)
        .unwrap();
    let m = err(small.read(&source).await);
    assert!(
        m.contains("5 skills, over the limit of 4 per import"),
        "{m}"
    );
    drop(server);
}

/// A lockfile of what `read` found verifies: each skill re-read at its origin is the same.
async fn assert_lock_verifies(r: &Reader, read: &Read) {
    let lock = crate::lock::LockFile {
        version: crate::lock::LOCK_VERSION,
        skills: read
            .skills
            .iter()
            .map(|s| crate::lock::Locked {
                name: s.name().unwrap(),
                source: s.origin.source.clone(),
                reference: s.origin.reference.clone(),
                path: s.origin.path.clone(),
                version: None,
                digest: s.bundle.digest().to_string(),
                signer: None,
                required_by: Vec::new(),
            })
            .collect(),
    };
    crate::lock::verify(r, &lock, Path::new("skillbase.lock"))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_link_in_a_git_marketplace_is_never_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    fs::create_dir_all(&home).unwrap();
    let work = tmp.path().join("market");
    manifest(
        &work,
        r#"{"name":"m","plugins":[{"name":"a","source":"./a"},{"name":"b","source":"./b","skills":"./more"}]}"#,
    );
    skill(&work, "real/skills", "x");
    fs::create_dir_all(work.join("b")).unwrap();
    symlink("../real", work.join("a")).unwrap();
    symlink("../real/skills", work.join("b/more")).unwrap();
    git_in(&home, &work, &["-c", "core.symlinks=true", "init", "-q"]);
    git_in(&home, &work, &["add", "-A"]);
    git_in(&home, &work, &["commit", "-q", "-m", "links"]);
    let r = reader(&tmp);
    let source = Source::parse(
        Path::new(&format!("git+file://{}", work.display())),
        r.git_base(),
    )
    .unwrap();
    let m = err(r.read(&source).await);
    assert!(
        m.contains("plugins[0] (`a`): ") && m.contains("`a` is not a folder"),
        "{m}"
    );
    let m = err(r.read_plugins(&source, &["b".into()]).await);
    assert!(
        m.contains("plugins[1] (`b`): ") && m.contains("`b/more` is not a folder"),
        "{m}"
    );
}

#[tokio::test]
async fn export_then_import_yields_the_same_digests_and_the_same_bytes_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    skill(&src, "", "alpha");
    skill(&src, "", "beta");
    write(&src, "beta/scripts/run.sh", b"#!/bin/sh\necho beta\n");
    let r = reader(&tmp);
    let skills: Vec<ExportSkill> = r
        .read(&Source::Path(src.clone()))
        .await
        .unwrap()
        .skills
        .into_iter()
        .map(|s| ExportSkill {
            name: s.name().unwrap(),
            bundle: s.bundle,
            signature: s.signature,
        })
        .collect();
    let e = Export {
        marketplace: "skillbase-support".into(),
        owner: "Support team".into(),
        plugin: "support".into(),
        description: "The support agent's skills".into(),
    };
    let out = tmp.path().join("out");
    let done = export(&out, &e, &skills).unwrap();
    assert_eq!(
        done.skills,
        [
            "plugins/support/skills/alpha",
            "plugins/support/skills/beta"
        ]
    );
    let read = r.read(&Source::Path(out.clone())).await.unwrap();
    let digests = |v: Vec<(String, String)>| {
        let mut v = v;
        v.sort();
        v
    };
    assert_eq!(
        digests(
            read.skills
                .iter()
                .map(|s| (s.name().unwrap(), s.bundle.digest().to_string()))
                .collect()
        ),
        digests(
            skills
                .iter()
                .map(|s| (s.name.clone(), s.bundle.digest().to_string()))
                .collect()
        ),
    );
    let (m, p) = manifests(&e, 2);
    assert_eq!(fs::read_to_string(out.join(MANIFEST)).unwrap(), m);
    assert_eq!(
        fs::read_to_string(out.join("plugins/support/.claude-plugin/plugin.json")).unwrap(),
        p
    );
    let parsed = parse(m.as_bytes(), crate::DEFAULT_GIT_BASE).unwrap();
    assert_eq!(
        parsed.plugins[0].source,
        PluginSource::Local("plugins/support".into())
    );

    // Deterministic: a second export is byte for byte the same (an empty folder is fine).
    let again = tmp.path().join("again");
    fs::create_dir_all(&again).unwrap();
    export(&again, &e, &skills).unwrap();
    assert_eq!(tree(&out), tree(&again));
    // Never into a folder that holds anything, nor over a file; nothing is written then.
    let before = tree(&out);
    let m = export(&out, &e, &skills).unwrap_err().to_string();
    assert!(m.contains("exists and is not an empty folder"), "{m}");
    assert_eq!(tree(&out), before);
    write(tmp.path(), "file", b"x");
    assert!(export(&tmp.path().join("file"), &e, &skills).is_err());
    // Names that cannot be manifest names are refused.
    let bad = Export {
        plugin: "../x".into(),
        ..e.clone()
    };
    let m = export(&tmp.path().join("new"), &bad, &skills)
        .unwrap_err()
        .to_string();
    assert!(m.contains("--plugin `../x` is not usable"), "{m}");
    assert!(!tmp.path().join("new").exists());
    assert!(matches!(
        export(&tmp.path().join("new"), &e, &[]),
        Err(ExportError::Empty)
    ));
}

/// Every file under `dir`, by relative path, with its bytes and mode.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                let mode = fs::metadata(&p).unwrap().permissions().mode();
                out.push((rel, fs::read(&p).unwrap(), mode));
            }
        }
    }
    out.sort();
    out
}
