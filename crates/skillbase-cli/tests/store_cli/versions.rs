//! Versions and digests (issue 20): history, show and export show a revision's version and
//! digest (the digest equal to `skillbase digest` of the folder and to README's definition
//! recomputed here); a version not raised is a warning, or refused under `[store] versions =
//! "require-increase"` with nothing written; a revision written before versions were recorded
//! is compared through its SKILL.md.

use super::*;
use crate::cli::readme_digest;

fn versioned(parent: &Path, name: &str, version: &str, body: &str) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let v = if version.is_empty() {
        String::new()
    } else {
        format!("version: \"{version}\"\n")
    };
    std::fs::write(dir.join("SKILL.md"), skill_md(name, &v, body)).unwrap();
    dir
}

pub(super) fn versions_and_digests(sb: &Sb) {
    let work = sb.path("work");
    let dir = versioned(&work, "gamma", "1.0.0", "v1");
    sb.ok(&["put", s(&dir)]);
    versioned(&work, "gamma", "1.1.0", "v2");
    let r = sb.ok(&["put", s(&dir)]);
    assert!(r.stderr.is_empty(), "{r:?}");
    // Lower: written, with a warning on stderr saying what to write.
    versioned(&work, "gamma", "1.0.5", "v3");
    let r = sb.ok(&["put", s(&dir)]);
    assert_eq!(
        r.stdout.trim(),
        "gamma (shared): wrote revision 3 (now active)"
    );
    assert!(
        r.stderr
            .contains("gamma (shared): warning: version 1.0.5 is not higher than 1.1.0")
            && r.stderr.contains("`version: \"1.1.1\"`"),
        "{r:?}"
    );

    // The digest: history, show and export agree with `digest DIR` and README's definition.
    let md = std::fs::read(dir.join("SKILL.md")).unwrap();
    let want = readme_digest(&[("SKILL.md", &md, false)]);
    assert_eq!(sb.ok(&["digest", s(&dir)]).stdout.trim(), want);
    let h = sb.history("gamma", &[]);
    let versions: Vec<&str> = h.iter().map(|r| r["version"].as_str().unwrap()).collect();
    assert_eq!(versions, ["1.0.0", "1.1.0", "1.0.5"]);
    assert_eq!(h[2]["digest"], want.as_str());
    let text = sb.ok(&["history", "gamma"]).stdout;
    let top = text.lines().next().unwrap();
    assert!(
        top.starts_with("*    3") && top.contains("  1.0.5  ") && top.contains(&want[..19]),
        "{text}"
    );
    let show = sb.ok(&["show", "gamma"]).stdout;
    assert!(show.contains("version: 1.0.5\n"), "{show}");
    assert!(show.contains(&format!("digest:  {want}\n")), "{show}");
    let v = sb.json(&["show", "gamma", "--json"]);
    assert_eq!(v["revision"]["version"], "1.0.5");
    assert_eq!(v["bundle_digest"], want.as_str());
    let zip = sb.path("gamma.zip");
    let r = sb.ok(&["export", "gamma", "--out", s(&zip)]);
    assert!(
        r.stdout
            .contains(&format!("(1 file, version 1.0.5, {want})")),
        "{r:?}"
    );

    // Under require-increase: equal, lower and none are refused, nothing written.
    let cfg = sb.path("strict.toml");
    std::fs::write(&cfg, "[store]\nversions = \"require-increase\"\n").unwrap();
    for (version, what) in [
        ("1.0.5", "version 1.0.5 is not higher than 1.0.5"),
        ("1.0.4", "version 1.0.4 is not higher than 1.0.5"),
        ("", "this revision declares no version"),
    ] {
        versioned(&work, "gamma", version, "v4");
        let e = sb.fails(1, &["--config", s(&cfg), "put", s(&dir)]);
        assert!(
            e.contains(what)
                && e.contains("require-increase")
                && e.contains("`version: \"1.0.6\"`"),
            "{version}: {e}"
        );
    }
    assert_eq!(sb.history("gamma", &[]).len(), 3);
    versioned(&work, "gamma", "1.0.6", "v4");
    sb.ok(&["--config", s(&cfg), "put", s(&dir)]);

    // A version that is not semver is refused by validation, with what to write.
    versioned(&work, "gamma", "", "v5");
    std::fs::write(
        dir.join("SKILL.md"),
        skill_md("gamma", "version: 1.1\n", "v5"),
    )
    .unwrap();
    let e = sb.fails(1, &["put", s(&dir)]);
    assert!(
        e.contains("'1.1' is not a semantic version") && e.contains("`version: \"1.1.0\"`"),
        "{e}"
    );

    // A revision written before versions were recorded (its column NULL): compared through its
    // SKILL.md. Simulated by clearing the column behind the trigger that forbids it.
    let dir = versioned(&work, "delta", "2.0.0", "d1");
    sb.ok(&["put", s(&dir)]);
    let clear = "DROP TRIGGER revisions_version_immutable";
    let null = "UPDATE revisions SET version = NULL WHERE skill_id = (SELECT id FROM skills WHERE name = 'delta')";
    match sb.sqlite_file() {
        Some(file) => rt().block_on(async {
            let mut c = sqlx::SqliteConnection::connect(&format!("sqlite:{}", s(&file)))
                .await
                .unwrap();
            sqlx::raw_sql(AssertSqlSafe(format!("{clear}; {null};")))
                .execute(&mut c)
                .await
                .unwrap();
        }),
        None => pg_exec(&sb.db, &format!("{clear} ON revisions; {null};")).unwrap(),
    }
    assert_eq!(sb.history("delta", &[])[0]["version"], Value::Null);
    versioned(&work, "delta", "2.0.0", "d2");
    let e = sb.fails(1, &["--config", s(&cfg), "put", s(&dir)]);
    assert!(e.contains("version 2.0.0 is not higher than 2.0.0"), "{e}");
}
