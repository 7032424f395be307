//! A reader that goes away (`skillbase list | head -1`): the command ends quietly, with status 0,
//! as ripgrep does. Rust leaves SIGPIPE ignored, so the closed pipe is a `BrokenPipe` error on
//! the next write; `main` finds it in the error chain. Status 0 rather than 141 (128 + SIGPIPE):
//! the command did what it was asked until its reader stopped listening, and a shell pipeline
//! with `pipefail` should not fail because `head` had enough.

use crate::common::{s, skillbase};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

/// Skill folders under `root`, each with a 60-character description: every `list` line and
/// every `validate` line is long, so the output is far larger than a pipe's buffer (64 KiB).
fn many_skills(root: &Path, n: usize) {
    for i in 0..n {
        let name = format!("skill-{i:05}");
        let dir = root.join(&name);
        std::fs::create_dir_all(&dir).unwrap();
        let description = format!("Handles case number {i:05} of a very long list of cases.");
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: {description}\n---\nDo it.\n"),
        )
        .unwrap();
    }
}

/// Run `c` with stdout read up to its first line and then closed: its status code (a signal
/// would be `None`), the first line and its stderr.
fn first_line_then_close(c: &mut Command) -> (Option<i32>, String, String) {
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader (and the pipe's read end) is gone here, with most of the output unwritten.
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), first, err)
}

#[test]
fn a_closed_pipe_ends_output_quietly_with_status_0() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("skills");
    many_skills(&skills, 2000);
    let db = dir.path().join("sb.db");

    // A store command (async, over the store): `list` of 2,000 skills, about 200 KB.
    let imported = skillbase(&db, dir.path())
        .args(["import", s(&skills)])
        .output()
        .unwrap();
    assert!(imported.status.success(), "{imported:?}");
    let (code, first, err) = first_line_then_close(skillbase(&db, dir.path()).arg("list"));
    assert!(first.starts_with("NAME"), "{first:?}");
    assert_eq!(code, Some(0), "{err}");
    assert!(err.is_empty(), "nothing on stderr: {err}");

    // A format command (no store): `validate` of the same folders, about 130 KB.
    let (code, first, err) =
        first_line_then_close(skillbase(&db, dir.path()).args(["validate", s(&skills)]));
    assert!(first.starts_with("Valid skill: "), "{first:?}");
    assert_eq!(code, Some(0), "{err}");
    assert!(err.is_empty(), "nothing on stderr: {err}");
}
