//! Plugin marketplaces from the command line: `export --marketplace` then `import` of it gives
//! the same digests; `--plugin`; GitHub shorthand under `SKILLBASE_GIT_BASE`.

use super::*;
use serde_json::json;

/// The digest of each skill's latest revision, by name.
fn digests(sb: &Sb, names: &[String]) -> BTreeMap<String, Value> {
    names
        .iter()
        .map(|n| (n.clone(), sb.history(n, &[])[0]["digest"].clone()))
        .collect()
}

pub(super) fn marketplaces(sb: &Sb) {
    let names = example_names();
    sb.ok(&["import", s(&examples())]);
    let picked = format!("{},{}", names[0], names[1]);
    sb.ok(&["agent", "create", "support", "--skills", &picked]);

    // The agent's skills as a marketplace, and read back into a new store: the same digests.
    let out = sb.path("market");
    let r = sb.ok(&["export", "--marketplace", s(&out), "--agent", "support"]);
    assert!(
        r.stdout.contains("wrote 2 skills of agent support")
            && r.stdout
                .contains("as the marketplace skillbase-support (plugin support)"),
        "{r:?}"
    );
    assert!(out.join(".claude-plugin/marketplace.json").is_file());
    assert!(
        out.join("plugins/support/.claude-plugin/plugin.json")
            .is_file()
    );
    let fresh = sb.fresh();
    let r = fresh.ok(&["import", s(&out)]);
    assert!(r.stdout.contains("2 created"), "{r:?}");
    assert_eq!(fresh.list(&[]).len(), 2);
    let want = digests(sb, &names[..2]);
    assert!(
        want.values()
            .all(|d| d.as_str().is_some_and(|d| d.starts_with("sha256:")))
    );
    assert_eq!(digests(&fresh, &names[..2]), want);
    let err = fresh.fails(1, &["import", s(&out), "--plugin", "nope"]);
    assert!(
        err.contains("has no plugin named `nope`; its plugins are: support"),
        "{err}"
    );
    // Every shared skill, under names given; never into a folder that holds something.
    let all = sb.path("all");
    sb.ok(&[
        "export",
        "--marketplace",
        s(&all),
        "--marketplace-name",
        "team",
        "--plugin",
        "library",
    ]);
    let text = std::fs::read_to_string(all.join(".claude-plugin/marketplace.json")).unwrap();
    assert!(
        text.contains("\"name\": \"team\"") && text.contains("./plugins/library"),
        "{text}"
    );
    let err = sb.fails(1, &["export", "--marketplace", s(&out)]);
    assert!(err.contains("exists and is not an empty folder"), "{err}");
    let err = sb.fails(
        1,
        &[
            "export",
            "--marketplace",
            s(&sb.path("x")),
            "--agent",
            "nobody",
        ],
    );
    assert!(err.contains("nobody"), "{err}");
    assert!(!sb.path("x").exists());
    // Neither a name nor --marketplace: a usage error.
    assert_eq!(sb.run(&["export"]).code, 2);

    // GitHub shorthand, with the base pointed at a folder of bare repositories.
    let served = sb.path("served");
    let bare = served.join("acme/tools.git");
    std::fs::create_dir_all(&served).unwrap();
    let work = sb.path("tools");
    write_skill(&work.join("skills"), "shorthand-skill", "From owner/repo.");
    super::signatures::git(&sb.path(""), &["init", "-q", s(&work)]);
    super::signatures::git(&work, &["add", "-A"]);
    super::signatures::git(&work, &["commit", "-q", "-m", "tools"]);
    super::signatures::git(&sb.path(""), &["clone", "-q", "--bare", s(&work), s(&bare)]);
    let base = format!("file://{}/", served.display());
    let run = |args: &[&str]| {
        let out = sb
            .cmd(args)
            .env("SKILLBASE_GIT_BASE", &base)
            .current_dir(sb.path(""))
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stdout, stderr) = run(&["import", "acme/tools/skills@main"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("shorthand-skill (shared): created revision 1"),
        "{stdout}"
    );
    let author = &sb.history("shorthand-skill", &[])[0]["author"];
    assert_eq!(author, &json!(format!("import:git+{base}acme/tools.git")));
    // A hostile reference is refused before anything is fetched.
    let (code, _, stderr) = run(&["import", "acme/tools@--upload-pack=touch"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("starts with `-`"), "{stderr}");
}
