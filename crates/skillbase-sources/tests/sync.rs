//! `sync`: an agent's view written into each target's skills folder, the manifest that keeps it
//! to its own folders, links refused, interrupted syncs finished, hostile manifests refused,
//! `--watch`, and the round trip store → folder → import.

use skillbase_format::{Bundle, BundleLimits};
use skillbase_sources::sync::folder::{LOCK, TEMP_PREFIX};
use skillbase_sources::sync::{
    self, Action, Conflict, MANIFEST, Manifest, Place, SyncError, SyncOptions, Target,
};
use skillbase_sources::{Limits, Reader, Source};
use skillbase_store::{AgentConfig, AgentName, Author, DbUrl, NameSet, PutRequest, Scope, Store};
use std::path::{Path, PathBuf};
use std::sync::Arc;

struct World {
    store: Arc<Store>,
    dir: tempfile::TempDir,
}

impl World {
    async fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("project")).unwrap();
        std::fs::create_dir(dir.path().join("home")).unwrap();
        let store = Store::open(&DbUrl::Sqlite(dir.path().join("store.db")))
            .await
            .unwrap();
        World {
            store: Arc::new(store),
            dir,
        }
    }

    fn project(&self) -> PathBuf {
        self.dir.path().join("project")
    }

    fn opts(&self, target: Target, agent: Option<&str>) -> SyncOptions {
        SyncOptions {
            target,
            place: Place::Project(self.project()),
            agent: agent.map(|a| AgentName::parse(a).unwrap()),
            force: false,
            store_label: "test-store".into(),
        }
    }

    async fn put(&self, scope: &Scope, bundle: Bundle) -> i64 {
        let req = PutRequest {
            scope: scope.clone(),
            bundle,
            author: Author::Human("tester".into()),
            message: "test".into(),
            expect_rev: None,
            signature: None,
        };
        self.store.put(req).await.unwrap().rev
    }

    async fn agent(&self, name: &str, skills: &[&str]) {
        let config = AgentConfig {
            skills: NameSet::Names(skills.iter().map(|s| s.parse().unwrap()).collect()),
            ..AgentConfig::default()
        };
        let name = AgentName::parse(name).unwrap();
        self.store.set_agent(&name, &config).await.unwrap();
    }

    fn digest(&self, scope: &Scope, name: &str) -> String {
        self.store
            .index()
            .get(scope, name)
            .unwrap()
            .digest
            .to_string()
    }
}

fn md(name: &str, extra: &str, body: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: Does {name} things. Use when asked about {name}.\n{extra}---\n{body}\n"
    )
}

fn skill(name: &str, body: &str) -> Bundle {
    Bundle::single(md(name, "", body)).unwrap()
}

fn shared() -> Scope {
    Scope::Shared
}

fn digest_of(dir: &Path) -> String {
    sync::folder::folder_digest(dir, &BundleLimits::default())
        .unwrap()
        .to_string()
}

fn names(actions: &[Action], pick: fn(&Action) -> bool) -> Vec<String> {
    actions
        .iter()
        .filter(|a| pick(a))
        .map(|a| a.name().to_owned())
        .collect()
}

#[tokio::test]
async fn every_target_writes_its_documented_folder_for_a_project_and_the_user() {
    let w = World::new().await;
    w.put(&shared(), skill("alpha", "Alpha.")).await;
    let expected: [(Target, &str, &str); 6] = [
        (Target::CLAUDE_CODE, ".claude/skills", ".claude/skills"),
        (Target::CODEX, ".agents/skills", ".agents/skills"),
        (Target::GEMINI_CLI, ".gemini/skills", ".gemini/skills"),
        (Target::COPILOT, ".github/skills", ".copilot/skills"),
        (Target::CURSOR, ".cursor/skills", ".cursor/skills"),
        (
            Target::OPENCODE,
            ".opencode/skills",
            ".config/opencode/skills",
        ),
    ];
    for (target, project, user) in expected {
        assert_eq!(Target::parse(target.name()).unwrap(), target);
        for (place, rel) in [
            (Place::Project(w.project()), project),
            (Place::User(w.dir.path().join("home")), user),
        ] {
            let root = match &place {
                Place::Project(p) | Place::User(p) => p.clone(),
            };
            let opts = SyncOptions {
                place,
                ..w.opts(target, None)
            };
            let report = sync::sync(&w.store, &opts).await.unwrap();
            assert!(report.failed.is_empty(), "{:?}", report.failed);
            let folder = root.canonicalize().unwrap().join(rel);
            assert_eq!(report.plan.folder, folder, "{target}");
            let written = std::fs::read_to_string(folder.join("alpha/SKILL.md")).unwrap();
            assert_eq!(written, md("alpha", "", "Alpha."));
            assert!(folder.join(MANIFEST).is_file());
            // Synced again: nothing to do.
            let again = sync::plan(&w.store, &opts).unwrap();
            assert!(!again.drifted(), "{target}: {:?}", again.actions);
        }
    }
    let e = Target::parse("vim").unwrap_err();
    assert!(
        e.contains("claude-code, codex, gemini-cli, copilot, cursor, opencode"),
        "{e}"
    );
    // One list of agents: every agent of the compatibility table with a skills folder is a
    // target, and the validator, which reads none, is refused with why.
    use skillbase_format::compat::Target as Agent;
    for agent in Agent::ALL {
        assert_eq!(
            Target::new(agent).map(Target::agent),
            (agent != Agent::SkillsRef).then_some(agent)
        );
    }
    let e = Target::parse("skills-ref").unwrap_err();
    assert!(e.contains("reads no skills folder"), "{e}");
}

#[tokio::test]
async fn the_agents_view_is_written_with_its_overrides_files_and_explicit_only_skills() {
    let w = World::new().await;
    w.put(&shared(), skill("alpha", "Shared alpha.")).await;
    let agent_scope: Scope = "agent:dev".parse().unwrap();
    w.agent("dev", &["alpha", "beta", "deploy"]).await;
    w.put(&agent_scope, skill("alpha", "Dev's own alpha."))
        .await;
    // A skill with files, one of them executable.
    let beta = Bundle::from_files(
        vec![
            file(
                "SKILL.md",
                md("beta", "companions: [gamma]\n", "Beta.").as_bytes(),
                false,
            ),
            file("scripts/run.sh", b"#!/bin/sh\necho hi\n", true),
            file("references/notes.md", b"Notes.\n", false),
        ],
        &BundleLimits::default(),
    )
    .unwrap();
    w.put(&shared(), beta).await;
    w.put(&shared(), skill("gamma", "Gamma, not allowed."))
        .await;
    w.put(
        &shared(),
        Bundle::single(md("deploy", "disable-model-invocation: true\n", "Deploy.")).unwrap(),
    )
    .await;
    w.put(&shared(), skill("other", "Not in the allowlist."))
        .await;
    let report = sync::sync(&w.store, &w.opts(Target::CLAUDE_CODE, Some("dev")))
        .await
        .unwrap();
    let folder = report.plan.folder.clone();
    let mut listed: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    listed.sort();
    assert_eq!(listed, [MANIFEST, LOCK, "alpha", "beta", "deploy"]);
    let alpha = std::fs::read_to_string(folder.join("alpha/SKILL.md")).unwrap();
    assert!(alpha.contains("Dev's own alpha."), "{alpha}");
    assert_eq!(
        digest_of(&folder.join("alpha")),
        w.digest(&agent_scope, "alpha")
    );
    assert_eq!(digest_of(&folder.join("beta")), w.digest(&shared(), "beta"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &str| {
            std::fs::metadata(folder.join(p))
                .unwrap()
                .permissions()
                .mode()
                & 0o111
        };
        assert_ne!(mode("beta/scripts/run.sh"), 0);
        assert_eq!(mode("beta/references/notes.md"), 0);
    }
    assert!(
        report
            .plan
            .warnings
            .iter()
            .any(|w| w.contains("companion 'gamma'")),
        "{:?}",
        report.plan.warnings
    );
    // The manifest records what was written, whose and from where.
    let m = Manifest::read(&folder).unwrap().unwrap();
    assert_eq!(m.agent.as_deref(), Some("dev"));
    assert_eq!(m.target, "claude-code");
    assert_eq!(m.store, "test-store");
    assert_eq!(m.skills["alpha"].scope, "agent:dev");
    assert_eq!(m.skills["alpha"].digest, w.digest(&agent_scope, "alpha"));
    assert_eq!(m.skills["beta"].rev, 1);
    assert_eq!(m.skills.len(), 3);
}

fn file(path: &str, bytes: &[u8], executable: bool) -> skillbase_format::BundleFile {
    skillbase_format::BundleFile {
        path: skillbase_format::BundlePath::parse(path).unwrap(),
        bytes: bytes.to_vec().into(),
        digest: skillbase_format::Digest::of(bytes),
        executable,
    }
}

#[tokio::test]
async fn a_folder_made_by_hand_is_never_touched_and_is_reported() {
    let w = World::new().await;
    w.put(&shared(), skill("alpha", "Store's alpha.")).await;
    let folder = w.project().join(".claude/skills");
    std::fs::create_dir_all(folder.join("alpha")).unwrap();
    std::fs::create_dir_all(folder.join("mine")).unwrap();
    std::fs::write(folder.join("alpha/SKILL.md"), md("alpha", "", "Mine.")).unwrap();
    std::fs::write(folder.join("mine/SKILL.md"), md("mine", "", "Mine.")).unwrap();
    let opts = w.opts(Target::CLAUDE_CODE, None);
    let plan = sync::plan(&w.store, &opts).unwrap();
    assert!(plan.drifted());
    assert!(plan.actions.iter().any(|a| matches!(a,
        Action::Conflict { name, why: Conflict::HandMade, wanted: true } if name == "alpha")));
    // A folder of the person's own that the view does not name: not an action at all.
    assert!(plan.actions.iter().all(|a| a.name() != "mine"));
    for force in [false, true] {
        let report = sync::sync(
            &w.store,
            &SyncOptions {
                force,
                ..opts.clone()
            },
        )
        .await
        .unwrap();
        assert_eq!(report.conflicts(), 1);
        assert_eq!(
            std::fs::read_to_string(folder.join("alpha/SKILL.md")).unwrap(),
            md("alpha", "", "Mine.")
        );
        assert!(folder.join("mine/SKILL.md").is_file());
        let m = Manifest::read(&folder).unwrap().unwrap();
        assert!(m.skills.is_empty(), "{m:?}");
    }
    // An identical copy made by hand is the person's too.
    std::fs::write(
        folder.join("alpha/SKILL.md"),
        md("alpha", "", "Store's alpha."),
    )
    .unwrap();
    let plan = sync::plan(&w.store, &opts).unwrap();
    assert!(plan.drifted());
}

#[tokio::test]
async fn a_synced_skill_edited_by_hand_is_reported_not_overwritten_unless_forced() {
    let w = World::new().await;
    w.put(&shared(), skill("alpha", "One.")).await;
    let opts = w.opts(Target::CURSOR, None);
    let folder = sync::sync(&w.store, &opts).await.unwrap().plan.folder;
    std::fs::write(folder.join("alpha/SKILL.md"), md("alpha", "", "Edited.")).unwrap();
    std::fs::write(folder.join("alpha/extra.md"), "added\n").unwrap();
    let plan = sync::plan(&w.store, &opts).unwrap();
    assert!(plan.drifted());
    assert!(matches!(
        &plan.actions[..],
        [Action::Conflict {
            why: Conflict::Edited,
            ..
        }]
    ));
    w.put(&shared(), skill("alpha", "Two.")).await;
    let report = sync::sync(&w.store, &opts).await.unwrap();
    assert_eq!(report.conflicts(), 1);
    assert!(
        std::fs::read_to_string(folder.join("alpha/SKILL.md"))
            .unwrap()
            .contains("Edited.")
    );
    // Forced: the store's revision replaces the edits, whole.
    let forced = SyncOptions {
        force: true,
        ..opts.clone()
    };
    let report = sync::sync(&w.store, &forced).await.unwrap();
    assert!(matches!(
        &report.plan.actions[..],
        [Action::Update {
            forced: true,
            from_rev: 1,
            ..
        }]
    ));
    assert!(!folder.join("alpha/extra.md").exists());
    assert_eq!(
        digest_of(&folder.join("alpha")),
        w.digest(&shared(), "alpha")
    );
    assert!(!sync::plan(&w.store, &opts).unwrap().drifted());
    // An update sync wrote and nobody edited goes through without force.
    w.put(&shared(), skill("alpha", "Three.")).await;
    let report = sync::sync(&w.store, &opts).await.unwrap();
    assert!(matches!(
        &report.plan.actions[..],
        [Action::Update {
            forced: false,
            from_rev: 2,
            ..
        }]
    ));
    assert_eq!(
        Manifest::read(&folder).unwrap().unwrap().skills["alpha"].rev,
        3
    );
}

#[tokio::test]
async fn a_skill_the_agent_lost_is_removed_unless_it_was_edited() {
    let w = World::new().await;
    for n in ["alpha", "beta", "gamma"] {
        w.put(&shared(), skill(n, "Body.")).await;
    }
    w.agent("dev", &["alpha", "beta", "gamma"]).await;
    let opts = w.opts(Target::CODEX, Some("dev"));
    let folder = sync::sync(&w.store, &opts).await.unwrap().plan.folder;
    std::fs::write(folder.join("gamma/note.md"), "mine\n").unwrap();
    w.agent("dev", &["alpha"]).await;
    let report = sync::sync(&w.store, &opts).await.unwrap();
    assert_eq!(
        names(&report.plan.actions, |a| matches!(a, Action::Remove { .. })),
        ["beta"]
    );
    assert!(!folder.join("beta").exists());
    assert!(
        folder.join("gamma/note.md").is_file(),
        "an edited folder is kept"
    );
    assert!(matches!(
        report.plan.actions.iter().find(|a| a.name() == "gamma"),
        Some(Action::Conflict {
            why: Conflict::Edited,
            wanted: false,
            ..
        })
    ));
    let m = Manifest::read(&folder).unwrap().unwrap();
    assert_eq!(m.skills.keys().collect::<Vec<_>>(), ["alpha", "gamma"]);
    // Removed by hand: forgotten, not drift.
    std::fs::remove_dir_all(folder.join("gamma")).unwrap();
    let report = sync::sync(&w.store, &opts).await.unwrap();
    assert!(!report.plan.drifted(), "{:?}", report.plan.actions);
    let m = Manifest::read(&folder).unwrap().unwrap();
    assert_eq!(m.skills.keys().collect::<Vec<_>>(), ["alpha"]);
}

#[cfg(unix)]
#[tokio::test]
async fn links_in_or_on_the_way_to_the_skills_folder_are_refused_not_followed() {
    use std::os::unix::fs::symlink;
    let w = World::new().await;
    for n in ["alpha", "beta", "gamma"] {
        w.put(&shared(), skill(n, "Body.")).await;
    }
    w.agent("dev", &["alpha", "beta", "gamma"]).await;
    let outside = w.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("keep.txt"), "precious\n").unwrap();
    let opts = w.opts(Target::CLAUDE_CODE, Some("dev"));
    let folder = sync::sync(&w.store, &opts).await.unwrap().plan.folder;
    // A link named as a wanted skill, one inside a synced skill, one to another skill.
    std::fs::remove_dir_all(folder.join("alpha")).unwrap();
    symlink(&outside, folder.join("alpha")).unwrap();
    symlink("/etc/passwd", folder.join("beta/passwd")).unwrap();
    std::fs::remove_dir_all(folder.join("gamma")).unwrap();
    symlink(folder.join("beta"), folder.join("gamma")).unwrap();
    for force in [false, true] {
        // Lost by the agent too: a link is never removed through, or followed into.
        w.agent(
            "dev",
            if force {
                &["gamma"][..]
            } else {
                &["alpha", "beta", "gamma"][..]
            },
        )
        .await;
        let report = sync::sync(
            &w.store,
            &SyncOptions {
                force,
                ..opts.clone()
            },
        )
        .await
        .unwrap();
        assert_eq!(report.conflicts(), 3, "{:?}", report.plan.actions);
        for a in &report.plan.actions {
            match (a.name(), a) {
                (
                    "alpha" | "gamma",
                    Action::Conflict {
                        why: Conflict::Link(_),
                        ..
                    },
                ) => {}
                (
                    "beta",
                    Action::Conflict {
                        why: Conflict::Unreadable(why),
                        ..
                    },
                ) => {
                    assert!(why.contains("passwd is a link"), "{why}")
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
        assert_eq!(
            std::fs::read_to_string(outside.join("keep.txt")).unwrap(),
            "precious\n"
        );
        assert!(
            std::fs::symlink_metadata(folder.join("beta/passwd"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }
    // The skills folder itself, or a folder on the way, a link: refused, nothing written there.
    for (link_at, to) in [(".cursor/skills", &outside), (".gemini", &outside)] {
        let at = w.project().join(link_at);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        symlink(to, &at).unwrap();
    }
    for target in [Target::CURSOR, Target::GEMINI_CLI] {
        let opts = w.opts(target, None);
        for e in [
            sync::plan(&w.store, &opts).unwrap_err(),
            sync::sync(&w.store, &opts).await.unwrap_err(),
        ] {
            assert!(matches!(e, SyncError::LinkRefused { .. }), "{e}");
            assert!(e.to_string().contains("is a link"), "{e}");
        }
    }
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
}

#[tokio::test]
async fn an_interrupted_sync_is_finished_and_every_skill_is_old_or_new() {
    let w = World::new().await;
    w.put(&shared(), skill("alpha", "Old alpha.")).await;
    w.put(&shared(), skill("beta", "Old beta.")).await;
    let opts = w.opts(Target::OPENCODE, None);
    let folder = sync::sync(&w.store, &opts).await.unwrap().plan.folder;
    let old_beta = digest_of(&folder.join("beta"));
    w.put(&shared(), skill("alpha", "New alpha.")).await;
    w.put(&shared(), skill("beta", "New beta.")).await;
    // A crash while writing: a half-written temporary folder, and alpha set aside before its
    // new copy was renamed in.
    let tmp = folder.join(".skillbase-sync-tmp-99999-0");
    std::fs::create_dir_all(tmp.join("scripts")).unwrap();
    std::fs::write(tmp.join("SKILL.md"), "---\nname: alp").unwrap();
    std::fs::rename(
        folder.join("alpha"),
        folder.join(".skillbase-sync-old-alpha"),
    )
    .unwrap();
    std::fs::write(folder.join(".skillbase-sync-manifest-tmp-99999-1"), "{").unwrap();
    // Check sees drift and writes nothing.
    let plan = sync::plan(&w.store, &opts).unwrap();
    assert!(plan.drifted());
    assert!(tmp.exists() && folder.join(".skillbase-sync-old-alpha").exists());
    let report = sync::sync(&w.store, &opts).await.unwrap();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    assert!(
        report
            .recovered
            .iter()
            .any(|l| l.starts_with("alpha: restored")),
        "{:?}",
        report.recovered
    );
    let left: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(".skillbase-sync-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    for n in ["alpha", "beta"] {
        assert_eq!(digest_of(&folder.join(n)), w.digest(&shared(), n));
    }
    // A crash after the new copy was renamed in but before the manifest said so: the pending
    // digest makes it sync's, in sync.
    let mut m = Manifest::read(&folder).unwrap().unwrap();
    let e = m.skills.get_mut("beta").unwrap();
    e.pending = Some(e.digest.clone());
    e.digest = old_beta;
    m.write(&folder).unwrap();
    let plan = sync::plan(&w.store, &opts).unwrap();
    assert!(!plan.drifted(), "{:?}", plan.actions);
}

/// Every file under `dir` with its bytes, and every folder (bytes `None`), by path.
fn tree(dir: &Path) -> Vec<(String, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            if p.is_dir() {
                out.push((rel, None));
                todo.push(p);
            } else {
                out.push((rel, Some(std::fs::read(&p).unwrap())));
            }
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn a_sync_into_a_folder_another_sync_holds_fails_at_once_and_changes_nothing() {
    let w = World::new().await;
    w.put(&shared(), skill("alpha", "Old alpha.")).await;
    let opts = w.opts(Target::CLAUDE_CODE, None);
    let folder = sync::sync(&w.store, &opts).await.unwrap().plan.folder;
    // The lock file stays (two syncs must always lock the same file), and is no temporary
    // entry that recovery would remove.
    assert!(folder.join(LOCK).is_file());
    assert!(!LOCK.starts_with(TEMP_PREFIX));
    w.put(&shared(), skill("alpha", "New alpha.")).await;
    w.put(&shared(), skill("beta", "Beta.")).await;
    // What an interrupted sync left: recovery must not run while another sync holds the folder.
    std::fs::create_dir(folder.join(".skillbase-sync-tmp-99999-0")).unwrap();
    let before = tree(&folder);

    // Another sync, as this test, holds the lock: refused at once, nothing changed.
    let held = std::fs::File::open(folder.join(LOCK)).unwrap();
    held.try_lock().unwrap();
    let started = std::time::Instant::now();
    let e = sync::sync(&w.store, &opts).await.unwrap_err();
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    let msg = e.to_string();
    assert!(matches!(e, SyncError::Busy { .. }), "{msg}");
    assert!(msg.contains(&folder.display().to_string()), "{msg}");
    assert!(msg.contains("another `skillbase sync` is running"), "{msg}");
    assert_eq!(tree(&folder), before);

    // Released: the next sync runs, finishes the interrupted one, and keeps the lock file.
    drop(held);
    let report = sync::sync(&w.store, &opts).await.unwrap();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    assert!(
        report.recovered.iter().all(|l| !l.contains(LOCK)),
        "{:?}",
        report.recovered
    );
    for n in ["alpha", "beta"] {
        assert_eq!(digest_of(&folder.join(n)), w.digest(&shared(), n));
    }
    assert!(!folder.join(".skillbase-sync-tmp-99999-0").exists());
    assert!(folder.join(LOCK).is_file());
    // A plan (`--check`) takes no lock: it writes nothing.
    let held = std::fs::File::open(folder.join(LOCK)).unwrap();
    held.try_lock().unwrap();
    assert!(!sync::plan(&w.store, &opts).unwrap().drifted());
    drop(held);

    // A link in the lock file's place is refused, not followed.
    #[cfg(unix)]
    {
        let outside = w.dir.path().join("outside.txt");
        std::fs::write(&outside, "precious\n").unwrap();
        std::fs::remove_file(folder.join(LOCK)).unwrap();
        std::os::unix::fs::symlink(&outside, folder.join(LOCK)).unwrap();
        let e = sync::sync(&w.store, &opts).await.unwrap_err();
        assert!(matches!(e, SyncError::LinkRefused { .. }), "{e}");
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious\n");
    }
}

#[tokio::test]
async fn check_writes_nothing_not_even_the_folder() {
    let w = World::new().await;
    w.put(&shared(), skill("alpha", "Alpha.")).await;
    let plan = sync::plan(&w.store, &w.opts(Target::COPILOT, None)).unwrap();
    assert!(!plan.exists);
    assert!(matches!(&plan.actions[..], [Action::Create(_)]));
    assert!(!w.project().join(".github").exists());
}

#[tokio::test]
async fn store_to_folder_to_import_round_trips_every_digest() {
    let w = World::new().await;
    let tool = Bundle::from_files(
        vec![
            file("SKILL.md", md("tool-user", "", "Run it.").as_bytes(), false),
            file("scripts/go.py", b"print('go')\n", true),
            file("a/b/c.txt", b"deep\n", false),
        ],
        &BundleLimits::default(),
    )
    .unwrap();
    w.put(&shared(), tool).await;
    w.put(&shared(), skill("café", "Unicode name.")).await;
    w.put(&shared(), skill("plain", "Plain.")).await;
    let report = sync::sync(&w.store, &w.opts(Target::GEMINI_CLI, None))
        .await
        .unwrap();
    let reader = Reader::new(Limits::default(), w.dir.path().join("git"));
    let read = reader
        .read(&Source::Path(report.plan.folder.clone()))
        .await
        .unwrap();
    assert_eq!(read.skills.len(), 3);
    let other = Store::open(&DbUrl::Sqlite(w.dir.path().join("other.db")))
        .await
        .unwrap();
    let items = read.skills.into_iter().map(|s| s.into_import()).collect();
    other
        .import_from(
            &shared(),
            items,
            &Author::Import("test".into()),
            "round trip",
            &|_| {},
        )
        .await
        .unwrap();
    for n in ["tool-user", "café", "plain"] {
        let back = other.index().get(&shared(), n).unwrap().digest.to_string();
        assert_eq!(back, w.digest(&shared(), n), "{n}");
    }
}

#[tokio::test]
async fn hostile_or_broken_manifests_are_refused_and_nothing_changes() {
    let w = World::new().await;
    w.put(&shared(), skill("alpha", "Alpha.")).await;
    let opts = w.opts(Target::CLAUDE_CODE, None);
    let folder = sync::sync(&w.store, &opts).await.unwrap().plan.folder;
    let good = std::fs::read_to_string(folder.join(MANIFEST)).unwrap();
    let d = w.digest(&shared(), "alpha");
    let entry = |name: &str| {
        format!(
            r#"{{"skillbase_sync":1,"target":"claude-code","agent":null,"store":"s","skills":{{"{name}":{{"digest":"{d}","rev":1,"scope":"shared"}}}}}}"#
        )
    };
    let big = format!("{{\"pad\":\"{}\"}}", "x".repeat(2 * 1024 * 1024));
    let cases: Vec<(String, &str)> = vec![
        ("not json".into(), "is not a sync manifest"),
        ("[]".into(), "is not a sync manifest"),
        (entry("../outside"), "names '../outside'"),
        (entry("/etc"), "names '/etc'"),
        (entry(".."), "names '..'"),
        (entry("a\\\\b"), "which is a path"),
        (entry(".hidden"), "starts with a dot"),
        (entry("alpha").replace(&d, "sha256:zz"), "not sha256:"),
        (
            entry("alpha").replace("\"skillbase_sync\":1", "\"skillbase_sync\":9"),
            "format 9",
        ),
        (
            entry("alpha").replace("\"rev\":1", "\"rev\":1,\"extra\":true"),
            "unknown field",
        ),
        (big, "over the 1048576-byte limit"),
    ];
    let outside = w.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("keep.txt"), "precious\n").unwrap();
    for (text, why) in cases {
        std::fs::write(folder.join(MANIFEST), &text).unwrap();
        for e in [
            sync::plan(&w.store, &opts).unwrap_err(),
            sync::sync(&w.store, &opts).await.unwrap_err(),
        ] {
            let msg = e.to_string();
            assert!(matches!(e, SyncError::Manifest { .. }), "{msg}");
            assert!(msg.contains(why), "{why}: {msg}");
            assert!(msg.contains("nothing was changed"), "{msg}");
        }
        assert_eq!(
            std::fs::read_to_string(folder.join(MANIFEST)).unwrap(),
            text
        );
        assert!(folder.join("alpha/SKILL.md").is_file());
    }
    assert!(outside.join("keep.txt").is_file());
    #[cfg(unix)]
    {
        std::fs::remove_file(folder.join(MANIFEST)).unwrap();
        std::os::unix::fs::symlink(outside.join("keep.txt"), folder.join(MANIFEST)).unwrap();
        let e = sync::sync(&w.store, &opts).await.unwrap_err().to_string();
        assert!(e.contains("not a plain file"), "{e}");
        assert_eq!(
            std::fs::read_to_string(outside.join("keep.txt")).unwrap(),
            "precious\n"
        );
        std::fs::remove_file(folder.join(MANIFEST)).unwrap();
    }
    // Another agent's folder: refused, named.
    std::fs::write(
        folder.join(MANIFEST),
        good.replace("\"agent\": null", "\"agent\": \"ops\""),
    )
    .unwrap();
    let e = sync::plan(&w.store, &opts).unwrap_err().to_string();
    assert!(
        e.contains("synced for target claude-code, agent ops"),
        "{e}"
    );
    // An unknown agent.
    let e = sync::plan(&w.store, &w.opts(Target::CODEX, Some("nobody"))).unwrap_err();
    assert!(matches!(e, SyncError::UnknownAgent(_)), "{e}");
}

#[tokio::test]
async fn watch_syncs_each_change_and_idles_when_nothing_changes() {
    let w = World::new().await;
    w.put(&shared(), skill("alpha", "One.")).await;
    let opts = w.opts(Target::CLAUDE_CODE, None);
    let folder = w.project().join(".claude/skills");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let watcher = sync::Watcher::start(
        w.store.clone(),
        opts,
        std::time::Duration::from_millis(50),
        move |r| {
            let _ = tx.send(r.map(|r| r.failed.len()).map_err(|e| e.to_string()));
        },
    );
    let first = tokio::time::timeout(std::time::Duration::from_secs(10), rx.recv()).await;
    assert_eq!(first.unwrap().unwrap(), Ok(0));
    assert!(folder.join("alpha/SKILL.md").is_file());
    let manifest_time = std::fs::metadata(folder.join(MANIFEST))
        .unwrap()
        .modified()
        .unwrap();
    // Idle: many polls, no sync, nothing written.
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    assert_eq!(watcher.syncs(), 1);
    assert_eq!(
        std::fs::metadata(folder.join(MANIFEST))
            .unwrap()
            .modified()
            .unwrap(),
        manifest_time
    );
    // A change in the store reaches the folder.
    w.put(&shared(), skill("alpha", "Two.")).await;
    w.put(&shared(), skill("beta", "New.")).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !(folder.join("beta/SKILL.md").is_file()
        && std::fs::read_to_string(folder.join("alpha/SKILL.md"))
            .unwrap()
            .contains("Two."))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the watch did not sync the change"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(watcher.syncs() >= 2);
}
