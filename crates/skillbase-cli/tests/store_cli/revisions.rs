//! Revisions: put, history, diff, show and revert, and `--expect-rev` conflicts.

use super::*;

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
