//! Revisions: put, history, diff, show and revert, and `--expect-rev` conflicts.

use super::*;
use serde_json::json;

/// put -> history -> diff -> show --rev -> revert, every write printing its revision.
pub(super) fn authoring(sb: &Sb) {
    let work = sb.path("work");
    let alpha = write_skill(&work, "alpha", "v1");
    let r = sb.ok(&["put", s(&alpha)]);
    assert_eq!(r.stdout.trim(), "alpha (shared): created revision 1");
    write_skill(&work, "alpha", "v2");
    let r = sb.ok(&["put", s(&alpha), "-m", "second"]);
    assert_eq!(
        r.stdout.trim(),
        "alpha (shared): wrote revision 2 (now active)"
    );
    // The same bundle again, through its SKILL.md: no new revision.
    let r = sb.ok(&["put", s(&alpha.join("SKILL.md"))]);
    assert_eq!(
        r.stdout.trim(),
        "alpha (shared): unchanged (revision 2 is already active, status active)"
    );

    let h = sb.history("alpha", &[]);
    assert_eq!(h.len(), 2);
    assert_eq!(h[1]["rev"], 2);
    assert_eq!(h[1]["message"], "second");
    assert_eq!(h[1]["active"], true);
    assert_eq!(h[0]["author"], "human:tester");
    let text = sb.ok(&["history", "alpha"]).stdout;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("*    2") && lines[0].contains("second"),
        "{text}"
    );
    assert!(lines[1].starts_with("     1"), "{text}");

    let d = sb.ok(&["diff", "alpha", "1", "2"]).stdout;
    assert!(
        d.contains("--- a/SKILL.md") && d.contains("+++ b/SKILL.md"),
        "{d}"
    );
    assert!(d.contains("\n-v1\n") && d.contains("\n+v2\n"), "{d}");
    let same = sb.ok(&["diff", "alpha", "2", "2"]);
    assert!(
        same.stdout.is_empty() && same.stderr.contains("identical"),
        "{same:?}"
    );

    // show --rev: a past revision, marked as not active.
    let old = sb.json(&["show", "alpha", "--rev", "1", "--json"]);
    assert_eq!(old["revision"]["rev"], 1);
    assert_eq!(old["revision"]["active"], false);
    assert_eq!(old["skill_md"], skill_text("alpha", "v1"));
    let t = sb.ok(&["show", "alpha", "--rev", "1"]).stdout;
    assert!(
        t.starts_with("alpha (shared) revision 1 by human:tester"),
        "{t}"
    );
    assert!(!t.lines().next().unwrap().contains("[active]"), "{t}");
    let t = sb.ok(&["show", "alpha"]).stdout;
    assert!(
        t.contains("revision 2 [active]") && t.contains("message: second"),
        "{t}"
    );

    let r = sb.ok(&["revert", "alpha", "1", "--author", "human:bo"]);
    assert_eq!(
        r.stdout.trim(),
        "alpha (shared): reverted to revision 1 (now active)"
    );
    let h = sb.history("alpha", &[]);
    assert_eq!(h.len(), 2, "a revert never rewrites history");
    assert_eq!(
        (h[0]["active"].clone(), h[1]["active"].clone()),
        (true.into(), false.into())
    );
    assert_eq!(sb.skill_md("alpha", &[]), skill_text("alpha", "v1"));
    // Showing revision 2 after the revert says which revision the skill serves, never "active"
    // beside revision 2 as if it were that revision's state.
    let t = sb.ok(&["show", "alpha", "--rev", "2"]).stdout;
    let head: Vec<&str> = t.lines().take(2).collect();
    assert!(!head[0].contains("active"), "{t}");
    assert_eq!(
        head[1], "skill: active, serves revision 1 (not this one)",
        "{t}"
    );
    let t = sb.ok(&["show", "alpha", "--rev", "1"]).stdout;
    assert!(
        t.lines()
            .next()
            .unwrap()
            .ends_with("revision 1 [active] by human:tester"),
        "{t}"
    );
    assert_eq!(
        t.lines().nth(1),
        Some("skill: active, serves this revision"),
        "{t}"
    );
    let l = sb.list(&[]);
    assert_eq!(l["alpha@shared"]["rev"], 1);
    assert_eq!(l["alpha@shared"]["latest_rev"], 2);

    // A modification after a revert appends revision 3.
    write_skill(&work, "alpha", "v3");
    let r = sb.ok(&["put", s(&alpha)]);
    assert_eq!(
        r.stdout.trim(),
        "alpha (shared): wrote revision 3 (now active)"
    );
    let d = sb.ok(&["diff", "alpha", "1", "3"]).stdout;
    assert!(d.contains("-v1") && d.contains("+v3"), "{d}");

    // The same skill in an agent's scope is another record.
    let r = sb.ok(&["put", s(&alpha), "--scope", "agent:support"]);
    assert_eq!(r.stdout.trim(), "alpha (agent:support): created revision 1");
    assert_eq!(sb.history("alpha", &[]).len(), 3);
    assert_eq!(sb.history("alpha", &["--scope", "agent:support"]).len(), 1);
}

/// --expect-rev: the loser exits 1, is told who won, and nothing changes.
pub(super) fn expect_rev_conflict(sb: &Sb) {
    let work = sb.path("work");
    let beta = write_skill(&work, "beta", "v1");
    sb.ok(&["put", s(&beta), "--expect-rev", "0"]);
    write_skill(&work, "beta", "v2");
    let r = sb.ok(&["put", s(&beta), "--expect-rev", "1", "--author", "human:bo"]);
    assert!(r.stdout.contains("wrote revision 2"), "{r:?}");
    write_skill(&work, "beta", "v3");
    let before = sb.list(&[]);
    let err = sb.fails(1, &["put", s(&beta), "--expect-rev", "1"]);
    assert!(err.contains("conflict on skill 'beta'"), "{err}");
    assert!(
        err.contains("revision 2 by human:bo got there first"),
        "{err}"
    );
    assert!(err.contains("--expect-rev 2"), "{err}");
    assert_eq!(sb.history("beta", &[]).len(), 2);
    assert_eq!(sb.skill_md("beta", &[]), skill_text("beta", "v2"));
    assert_eq!(sb.list(&[]), before, "a refused write changes nothing");
    // 0 means "must be new".
    let err = sb.fails(1, &["put", s(&beta), "--expect-rev", "0"]);
    assert!(
        err.contains("conflict") && err.contains("expected revision 0"),
        "{err}"
    );

    // Two writers at once, both expecting revision 2: exactly one wins.
    let (a, b) = (sb.path("ra"), sb.path("rb"));
    let pa = write_skill(&a, "beta", "writer a");
    let pb = write_skill(&b, "beta", "writer b");
    let ca = sb
        .cmd(&["put", s(&pa), "--expect-rev", "2", "--author", "human:a"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let cb = sb
        .cmd(&["put", s(&pb), "--expect-rev", "2", "--author", "human:b"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (oa, ob) = (
        ca.wait_with_output().unwrap(),
        cb.wait_with_output().unwrap(),
    );
    let codes = [oa.status.code().unwrap(), ob.status.code().unwrap()];
    assert!(
        codes == [0, 1] || codes == [1, 0],
        "exactly one concurrent writer wins: {oa:?} {ob:?}"
    );
    let (winner, loser) = if codes[0] == 0 {
        ("human:a", &ob)
    } else {
        ("human:b", &oa)
    };
    let msg = String::from_utf8_lossy(&loser.stderr);
    assert!(msg.contains(&format!("revision 3 by {winner}")), "{msg}");
    let h = sb.history("beta", &[]);
    assert_eq!(h.len(), 3);
    assert_eq!(h[2]["author"], winner);
}

/// Write `parent/name/SKILL.md` with this description (replacing it); returns the folder.
fn write_described(parent: &Path, name: &str, description: &str) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\nDo it.\n"),
    )
    .unwrap();
    dir
}

/// `runs --by-revision` sums each revision's runs, and with a cases file (`--cases`, or
/// `[eval] cases` in --config) shows each revision's recall over the cases that expect the
/// skill: a revision whose description lost the words users use ranks lower.
pub(super) fn recall_by_revision(sb: &Sb) {
    let work = sb.path("work");
    for (name, description) in [
        (
            "pdf-letterhead",
            "Add the company letterhead to a printable PDF document.",
        ),
        (
            "invoice-email",
            "Email an invoice to the customer who owes it.",
        ),
        (
            "invoice-archive",
            "Archive paid invoices in the accounting folder.",
        ),
        (
            "pdf-merge",
            "Merge several PDF documents into one printable file.",
        ),
    ] {
        sb.ok(&["put", s(&write_described(&work, name, description))]);
    }
    let target = write_described(
        &work,
        "invoice-pdf",
        "Export an invoice as a printable PDF document with the company letterhead.",
    );
    sb.ok(&["put", s(&target)]);
    write_described(&work, "invoice-pdf", "Handles files.");
    sb.ok(&["put", s(&target)]);
    sb.ok(&["agent", "create", "ev", "--skills", "all"]);
    // One run of each revision: revision 2 now, then revision 1 after a revert.
    let run = |session: &str, outcome: &str| {
        sb.ok(&[
            "call",
            "--agent",
            "ev",
            "--session",
            session,
            "load_skill",
            r#"{"name": "invoice-pdf"}"#,
        ]);
        sb.ok(&[
            "call",
            "--agent",
            "ev",
            "--session",
            session,
            "skill_finish",
            &format!(r#"{{"outcome": "{outcome}", "note": "n"}}"#),
        ]);
    };
    run("r2", "failure");
    sb.ok(&["revert", "invoice-pdf", "1"]);
    run("r1", "success");
    let cases = sb.path("cases.jsonl");
    std::fs::write(
        &cases,
        [
            r#"{"message": "export this invoice as a printable PDF with our company letterhead", "expected": "invoice-pdf"}"#,
            r#"{"message": "I need the invoice as a printable document with the letterhead", "expected": "invoice-pdf"}"#,
            r#"{"message": "make a PDF of invoice 42 with letterhead", "expected": "invoice-pdf"}"#,
            r#"{"message": "email the invoice to the customer", "expected": "invoice-email"}"#,
        ]
        .join("\n"),
    )
    .unwrap();
    let v = sb.json(&[
        "runs",
        "invoice-pdf",
        "--by-revision",
        "--cases",
        s(&cases),
        "--agent",
        "ev",
        "--json",
    ]);
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{v}");
    let row = |rev: i64| rows.iter().find(|r| r["rev"] == rev).unwrap();
    assert_eq!(
        (row(1)["success"].clone(), row(2)["failure"].clone()),
        (json!(1), json!(1))
    );
    assert_eq!(row(1)["recall"]["cases"], json!(3));
    assert_eq!(row(1)["recall"]["recall_at_1"], json!(1.0), "{v}");
    let worse = row(2)["recall"]["recall_at_1"].as_f64().unwrap();
    assert!(worse < 1.0, "the vague description ranks lower: {v}");
    // The same from `[eval]` in the config file, as a table.
    let config = sb.path("skillbase.toml");
    std::fs::write(&config, "[eval]\ncases = \"cases.jsonl\"\nagent = \"ev\"\n").unwrap();
    let t = sb
        .ok(&[
            "--config",
            s(&config),
            "runs",
            "invoice-pdf",
            "--by-revision",
        ])
        .stdout;
    assert!(
        t.lines().next().unwrap().contains("RECALL@5 (3 CASES)"),
        "{t}"
    );
    // Without a cases file there is no recall column; a shared skill needs an agent.
    let t = sb.ok(&["runs", "invoice-pdf", "--by-revision"]).stdout;
    assert!(!t.contains("RECALL"), "{t}");
    let err = sb.fails(
        1,
        &["runs", "invoice-pdf", "--by-revision", "--cases", s(&cases)],
    );
    assert!(err.contains("give --agent NAME"), "{err}");
    // A bad cases file says which line.
    std::fs::write(&cases, "{\"message\": 3}\n").unwrap();
    let err = sb.fails(
        1,
        &[
            "runs",
            "invoice-pdf",
            "--by-revision",
            "--cases",
            s(&cases),
            "--agent",
            "ev",
        ],
    );
    assert!(err.contains("line 1"), "{err}");
}
