//! `skillbase sync` through the binary (issue 38): `--check` exits 1 on drift and 0 in sync,
//! writing nothing; conflicts exit 1 and leave the folder alone; `--user` writes under the home
//! folder; a link for a skills folder is refused; the folder imports back with the same digests.

use super::*;

fn digests(sb: &Sb) -> BTreeMap<String, String> {
    sb.list(&[])
        .into_iter()
        .map(|(k, v)| (k, v["digest"].as_str().unwrap().to_owned()))
        .collect()
}

#[test]
fn sync_check_exit_codes_conflicts_and_round_trip() {
    let sb = Sb::sqlite();
    let src = sb.path("src");
    sb.ok(&["put", s(&write_skill(&src, "alpha", "Alpha."))]);
    sb.ok(&["put", s(&write_skill(&src, "beta", "Beta."))]);
    sb.ok(&["agent", "create", "dev", "--skills", "alpha,beta"]);
    let proj = sb.path("proj");
    std::fs::create_dir(&proj).unwrap();
    let base = [
        "sync",
        "--target",
        "claude-code",
        "--agent",
        "dev",
        "--project",
        s(&proj),
    ];
    let with = |extra: &[&'static str]| -> Vec<&str> {
        base.iter().copied().chain(extra.iter().copied()).collect()
    };
    // Nothing synced yet: drift, and --check writes nothing.
    let r = sb.run(&with(&["--check"]));
    assert_eq!(r.code, 1, "{r:#?}");
    assert!(r.stdout.contains("missing alpha (revision 1)"), "{r:#?}");
    assert!(r.stdout.contains("the folder differs"), "{r:#?}");
    assert!(!proj.join(".claude").exists());
    let r = sb.ok(&with(&[]));
    assert!(r.stdout.contains("created alpha (revision 1)"), "{r:#?}");
    let skills = proj.join(".claude/skills");
    assert!(skills.join("beta/SKILL.md").is_file());
    let r = sb.ok(&with(&["--check"]));
    assert!(r.stdout.contains("2 skills in sync"), "{r:#?}");
    // Edited by hand: drift for --check, a conflict for sync (exit 1, the edit kept).
    std::fs::write(skills.join("alpha/SKILL.md"), skill_text("alpha", "Mine.")).unwrap();
    let r = sb.run(&with(&["--check"]));
    assert_eq!(r.code, 1, "{r:#?}");
    assert!(
        r.stdout
            .contains("conflict alpha: edited since sync wrote it"),
        "{r:#?}"
    );
    let r = sb.run(&with(&[]));
    assert_eq!(r.code, 1, "{r:#?}");
    assert!(
        std::fs::read_to_string(skills.join("alpha/SKILL.md"))
            .unwrap()
            .contains("Mine.")
    );
    let r = sb.ok(&with(&["--force"]));
    assert!(r.stdout.contains("hand edits overwritten"), "{r:#?}");
    // A new revision in the store: outdated until synced.
    sb.ok(&["put", s(&write_skill(&src, "beta", "Beta two."))]);
    let r = sb.run(&with(&["--check"]));
    assert_eq!(r.code, 1, "{r:#?}");
    assert!(
        r.stdout.contains("outdated beta (revision 1 -> 2)"),
        "{r:#?}"
    );
    sb.ok(&with(&[]));
    sb.ok(&with(&["--check"]));
    // The folder imports back into another store with the same digests.
    let other = sb.fresh();
    other.ok(&["import", s(&skills)]);
    assert_eq!(digests(&other), digests(&sb));
    // The user's folder, under HOME.
    let home = sb.path("userhome");
    std::fs::create_dir(&home).unwrap();
    let out = sb
        .cmd(&["sync", "--target", "opencode", "--user"])
        .env("HOME", &home)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        home.join(".config/opencode/skills/alpha/SKILL.md")
            .is_file()
    );
    // Usage errors.
    let e = sb.fails(2, &["sync", "--target", "emacs", "--project", s(&proj)]);
    assert!(e.contains("claude-code, codex"), "{e}");
    sb.fails(
        2,
        &["sync", "--target", "codex", "--user", "--project", s(&proj)],
    );
    sb.fails(2, &["sync", "--target", "codex", "--watch", "--check"]);
}

#[cfg(unix)]
#[test]
fn sync_refuses_a_skills_folder_that_is_a_link() {
    let sb = Sb::sqlite();
    sb.ok(&["put", s(&write_skill(&sb.path("src"), "alpha", "Alpha."))]);
    let proj = sb.path("proj");
    let outside = sb.path("outside");
    std::fs::create_dir_all(proj.join(".github")).unwrap();
    std::fs::create_dir(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, proj.join(".github/skills")).unwrap();
    for extra in [&[][..], &["--check"][..]] {
        let mut args = vec!["sync", "--target", "copilot", "--project", s(&proj)];
        args.extend_from_slice(extra);
        let e = sb.fails(1, &args);
        assert!(
            e.contains("is a link") && e.contains("never follows a link"),
            "{e}"
        );
    }
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}

/// The real gemini-cli (`gemini skills list`, no model key, no network) lists what sync wrote,
/// for a project (trusted in the test's own home) and for the user, explicit-only skills too.
#[test]
#[cfg_attr(
    not(skillbase_gemini),
    ignore = "gemini-cli test skipped: set SKILLBASE_TEST_GEMINI_CLI (what .ci/gemini-cli prints) to run it"
)]
fn gemini_cli_lists_the_synced_skills() {
    let gemini = std::env::var("SKILLBASE_TEST_GEMINI_CLI")
        .ok()
        .or_else(|| option_env!("SKILLBASE_TEST_GEMINI_CLI").map(str::to_owned))
        .expect("SKILLBASE_TEST_GEMINI_CLI was set when the tests were built but is not set now");
    let sb = Sb::sqlite();
    let src = sb.path("src");
    sb.ok(&["put", s(&write_skill(&src, "alpha-notes", "Alpha."))]);
    let deploy = src.join("deploy-prod");
    std::fs::create_dir_all(&deploy).unwrap();
    std::fs::write(
        deploy.join("SKILL.md"),
        skill_md("deploy-prod", "disable-model-invocation: true\n", "Deploy."),
    )
    .unwrap();
    sb.ok(&["put", s(&deploy)]);
    sb.ok(&["agent", "create", "dev", "--skills", "alpha-notes"]);
    let proj = sb.path("proj");
    let home = sb.path("gemini-home");
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::create_dir(&proj).unwrap();
    let proj = proj.canonicalize().unwrap();
    sb.ok(&[
        "sync",
        "--target",
        "gemini-cli",
        "--agent",
        "dev",
        "--project",
        s(&proj),
    ]);
    let out = sb
        .cmd(&["sync", "--target", "gemini-cli", "--user"])
        .env("HOME", &home)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // The project is trusted in this home only; no usage statistics.
    std::fs::write(
        home.join(".gemini/trustedFolders.json"),
        serde_json::json!({ s(&proj): "TRUST_FOLDER" }).to_string(),
    )
    .unwrap();
    std::fs::write(
        home.join(".gemini/settings.json"),
        r#"{"privacy":{"usageStatisticsEnabled":false}}"#,
    )
    .unwrap();
    let out = std::process::Command::new(&gemini)
        .args(["skills", "list"])
        .current_dir(&proj)
        .env("HOME", &home)
        .env_remove("GEMINI_API_KEY")
        .env_remove("GOOGLE_API_KEY")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    let home = home.canonicalize().unwrap();
    for (name, folder) in [
        ("alpha-notes", proj.join(".gemini/skills")),
        ("deploy-prod", home.join(".gemini/skills")),
    ] {
        assert!(
            text.contains(&format!("{name} [Enabled]")),
            "{name}: {text}"
        );
        let at = folder.join(name).join("SKILL.md");
        assert!(text.contains(s(&at)), "{}: {text}", at.display());
    }
    assert!(text.contains("Does alpha-notes things."), "{text}");
}
