//! `skillbase doctor` end to end: the real binary on the bundled examples (clean once the vault
//! holds the key the example config grants), exit 1 on an error finding, `--json`, an ad hoc
//! `--prompt`, and hostile or bad input refused with a clear error and nothing recorded.

use crate::common::{EXAMPLES, Run, s, skillbase};
use serde_json::Value;
use sqlx::Connection;
use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;

const CONFIG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/skillbase.toml");

struct Sb {
    dir: tempfile::TempDir,
}

impl Sb {
    fn new() -> Sb {
        Sb {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// The command on the examples (seeded, their agents applied), `stdin` as its input.
    fn run_with(&self, args: &[&str], stdin: &str) -> Run {
        self.spawn(
            &[&["--seed", EXAMPLES, "--config", CONFIG], args].concat(),
            stdin,
        )
    }

    /// The command alone: no seed, no configuration re-applied over an agent changed since.
    fn bare(&self, args: &[&str]) -> Run {
        self.spawn(args, "")
    }

    fn spawn(&self, args: &[&str], stdin: &str) -> Run {
        let mut child = skillbase(self.path("skillbase.db"), self.dir.path())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
        }
    }

    fn run(&self, args: &[&str]) -> Run {
        self.run_with(args, "")
    }

    /// `doctor` events recorded in the store.
    fn doctor_events(&self) -> i64 {
        let db = self.path("skillbase.db");
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async {
                let mut c = sqlx::SqliteConnection::connect(&format!("sqlite:{}", s(&db)))
                    .await
                    .unwrap();
                let n: i64 =
                    sqlx::query_scalar("SELECT COUNT(*) FROM events WHERE kind = 'doctor'")
                        .fetch_one(&mut c)
                        .await
                        .unwrap();
                let _ = c.close().await;
                n
            })
    }
}

#[track_caller]
fn json(r: &Run) -> Value {
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("invalid JSON ({e}): {r:?}"))
}

#[test]
fn the_examples_are_clean_once_the_granted_key_is_set_and_an_error_exits_1() {
    let sb = Sb::new();
    // A fresh store: the key support is granted is not in the vault yet.
    let r = sb.run(&["doctor"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout
            .contains("error   D008  agent support · skill refund-procedure · SKILL.md:49"),
        "{r:?}"
    );
    assert!(
        r.stdout
            .contains("fix: set it: `skillbase vault set PAYMENTS_API_KEY`"),
        "{r:?}"
    );
    assert!(
        r.stdout.contains(
            "1 error, 0 warnings, 0 infos · checked 2 agents, 7 skills, 1 prompt, 0 turns"
        ),
        "{r:?}"
    );
    assert!(r.stdout.contains("not checked: the turn checks"), "{r:?}");
    assert!(r.stderr.is_empty() || !r.stderr.contains("Error"), "{r:?}");
    let r = sb.run_with(
        &["vault", "set", "PAYMENTS_API_KEY"],
        "sk_live_abcdef123456\n",
    );
    assert_eq!(r.code, 0, "{r:?}");
    let r = sb.run(&["doctor"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stdout
            .contains("no findings · checked 2 agents, 7 skills, 1 prompt, 0 turns"),
        "{r:?}"
    );
    let r = sb.run(&["doctor", "--json"]);
    assert_eq!(r.code, 0, "{r:?}");
    let j = json(&r);
    assert_eq!(j["findings"], serde_json::json!([]));
    assert_eq!(
        j["counts"],
        serde_json::json!({"errors": 0, "warnings": 0, "infos": 0})
    );
    assert_eq!(j["checked"]["prompts"], 1);
    let r = sb.run(&["doctor", "--agent", "dev", "--json"]);
    assert_eq!(
        (r.code, json(&r)["agent"].as_str()),
        (0, Some("dev")),
        "{r:?}"
    );
    assert_eq!(sb.doctor_events(), 4);
}

#[test]
fn a_prompt_checked_ad_hoc_names_skills_outside_the_allowlist() {
    let sb = Sb::new();
    std::fs::write(
        sb.path("prompt.md"),
        "For refunds, load refund-procedure.\nFor schema changes, use sql-migration-reviewer.\nRefunds and `support` are words.\n",
    )
    .unwrap();
    let r = sb.run(&["doctor", "--agent", "support", "--prompt", "prompt.md"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.starts_with("error   D001  agent support · prompt.md:2\n  the prompt names skill 'sql-migration-reviewer', which agent support may not load"), "{r:?}");
    assert!(
        r.stdout.contains(
            "1 error, 0 warnings, 0 infos · checked 1 agent, 0 skills, 1 prompt, 0 turns"
        ),
        "{r:?}"
    );
    let r = sb.run(&[
        "doctor",
        "--agent",
        "support",
        "--prompt",
        "prompt.md",
        "--json",
    ]);
    assert_eq!(r.code, 1, "{r:?}");
    let j = json(&r);
    let f = &j["findings"][0];
    assert_eq!(
        (
            f["code"].as_str(),
            f["file"].as_str(),
            f["line"].as_u64(),
            f["related"].as_str()
        ),
        (
            Some("D001"),
            Some("prompt.md"),
            Some(2),
            Some("sql-migration-reviewer")
        )
    );
    assert_eq!(j["findings"].as_array().unwrap().len(), 1);
    // The same prompt is fine for dev, which may load it (and has no refund skill to name).
    let r = sb.run(&["doctor", "--agent", "dev", "--prompt", "prompt.md"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout
            .contains("'refund-procedure', which agent dev may not load"),
        "{r:?}"
    );
    assert!(!r.stdout.contains("sql-migration-reviewer"), "{r:?}");
    // An agent's configured prompts, set from the command line (made absolute).
    std::fs::write(sb.path("ok.md"), "Load refund-procedure for refunds.\n").unwrap();
    let r = sb.bare(&["agent", "set", "support", "--prompts", "ok.md"]);
    assert_eq!(r.code, 0, "{r:?}");
    let r = sb.bare(&["agent", "show", "support", "--json"]);
    let shown = json(&r)["prompts"].clone();
    assert_eq!(shown, serde_json::json!([{"path": s(&sb.path("ok.md"))}]));
    let r = sb.bare(&["doctor", "--agent", "support"]);
    assert!(
        r.stdout.contains("checked 1 agent, 7 skills, 1 prompt"),
        "{r:?}"
    );
    assert!(!r.stdout.contains("D001"), "{r:?}");
    let r = sb.bare(&["agent", "set", "support", "--prompts", "none"]);
    assert_eq!(r.code, 0, "{r:?}");
    let r = sb.bare(&["agent", "show", "support", "--json"]);
    assert!(json(&r).get("prompts").is_none(), "{r:?}");
}

#[test]
fn bad_input_is_refused_clearly_and_records_nothing() {
    let sb = Sb::new();
    let r = sb.run(&["doctor"]);
    assert_eq!(r.code, 1, "{r:?}");
    let before = sb.doctor_events();
    assert_eq!(before, 1);
    std::fs::create_dir(sb.path("folder")).unwrap();
    std::fs::write(sb.path("binary.md"), [0xff, 0xfe, 0x00, 0x41]).unwrap();
    std::fs::write(sb.path("empty.md"), "  \n\n").unwrap();
    std::fs::write(sb.path("huge.md"), "refund-procedure ".repeat(20_000)).unwrap();
    for (args, code, want) in [
        (&["doctor", "--agent", "nosuch"][..], 1, "no agent 'nosuch'"),
        (
            &["doctor", "--agent", "nosuch"],
            1,
            "skillbase agent create nosuch",
        ),
        (&["doctor", "--agent", "Bad Name"], 1, "invalid agent name"),
        (&["doctor", "--prompt", "p.md"], 2, "--agent"),
        (
            &["doctor", "--agent", "support", "--prompt", "missing.md"],
            2,
            "does not exist",
        ),
        (
            &["doctor", "--agent", "support", "--prompt", "folder"],
            1,
            "is not a file",
        ),
        (
            &["doctor", "--agent", "support", "--prompt", "binary.md"],
            1,
            "is not UTF-8 text",
        ),
        (
            &["doctor", "--agent", "support", "--prompt", "empty.md"],
            1,
            "is empty",
        ),
        (
            &["doctor", "--agent", "support", "--prompt", "huge.md"],
            1,
            "is over 262144 bytes",
        ),
        (
            &["doctor", "--agent", "nosuch", "--prompt", "empty.md"],
            1,
            "is empty",
        ),
    ] {
        let r = sb.run(args);
        assert_eq!(r.code, code, "{args:?}: {r:?}");
        assert!(r.stdout.is_empty(), "{args:?}: {r:?}");
        assert!(r.stderr.contains(want), "{args:?}: {r:?}");
        assert!(!r.stderr.contains("panicked"), "{args:?}: {r:?}");
    }
    assert_eq!(sb.doctor_events(), before, "refused runs record nothing");
    // A hostile file name reaches the terminal escaped.
    let hostile = "p\u{1b}[31m\u{202e}.md";
    std::fs::write(sb.path(hostile), "Use `sql-migration-reviewer`.\n").unwrap();
    let r = sb.run(&["doctor", "--agent", "support", "--prompt", hostile]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        !r.stdout.contains('\u{1b}') && !r.stdout.contains('\u{202e}'),
        "{r:?}"
    );
    assert!(r.stdout.contains("p\\u{1b}[31m\\u{202e}.md:1"), "{r:?}");
    // A configured prompt that cannot be read is reported unchecked, not as a finding.
    let r = sb.bare(&["agent", "set", "support", "--prompts", "gone.md,folder"]);
    assert_eq!(r.code, 0, "{r:?}");
    let r = sb.bare(&["doctor", "--agent", "support"]);
    assert!(r.stdout.contains("gone.md: cannot be read"), "{r:?}");
    assert!(r.stdout.contains("folder: is not a file"), "{r:?}");
    assert!(
        r.stdout.contains("checked 1 agent, 7 skills, 0 prompts"),
        "{r:?}"
    );
}
