//! The deterministic miner: recurring procedures across sessions.
//!
//! Each call becomes a step `(tool, argument shape)`: the tool's wire name and the sorted keys
//! of its arguments, values masked (an order id, a path and a count are the same step whatever
//! their values). Contiguous runs of 2 to 8 steps are counted once per session; a run found in
//! at least `min_support` distinct sessions is a candidate. Only closed candidates are kept (no
//! longer run containing it has the same support), ranked by support, then length, then the
//! steps themselves (so the result is the same on every run); a candidate inside one already
//! kept is dropped as part of it, so one procedure gives one pattern.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One call as recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedCall {
    /// The call's id (a `tool_called` event's `call_id`, or the transcript's id).
    pub call_id: String,
    /// The wire name called.
    pub tool: String,
    /// The arguments (redacted when recorded).
    pub arguments: Value,
}

/// What one session did, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionLog {
    /// The session's id.
    pub session: String,
    /// Its successful calls, oldest first (activation built-ins left out).
    pub calls: Vec<LoggedCall>,
    /// Its users' messages, oldest first (recorded when the agent records conversations, or
    /// imported with a transcript).
    pub messages: Vec<String>,
}

/// A step: a tool and the shape of its arguments.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Step {
    /// The wire name.
    pub tool: String,
    /// The argument keys, sorted.
    pub keys: Vec<String>,
}

impl Step {
    /// The step of a call.
    pub fn of(call: &LoggedCall) -> Step {
        let keys = match &call.arguments {
            Value::Object(m) => m.keys().cloned().collect(),
            _ => Vec::new(),
        };
        Step {
            tool: call.tool.clone(),
            keys,
        }
    }
}

/// Where a pattern occurs: the session and the index of its first call there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Occurrence {
    /// The session's position in the input.
    pub session: usize,
    /// The index of the pattern's first call in that session's calls.
    pub start: usize,
}

/// A recurring procedure.
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    /// Its steps, in order.
    pub steps: Vec<Step>,
    /// The first occurrence in each supporting session (sessions in input order).
    pub occurrences: Vec<Occurrence>,
}

impl Pattern {
    /// In how many distinct sessions it occurs.
    pub fn support(&self) -> usize {
        self.occurrences.len()
    }
}

/// What the miner looks for.
#[derive(Debug, Clone, Copy)]
pub struct MineOptions {
    /// Distinct sessions a procedure must occur in (default 3).
    pub min_support: usize,
    /// Shortest procedure, in steps (at least 2).
    pub min_len: usize,
    /// Longest procedure, in steps (at most 8).
    pub max_len: usize,
}

impl Default for MineOptions {
    fn default() -> MineOptions {
        MineOptions {
            min_support: 3,
            min_len: 2,
            max_len: 8,
        }
    }
}

/// Patterns left out by the miner itself, with why (the caller adds its own reasons).
#[derive(Debug, Clone, PartialEq)]
pub struct Mined {
    /// The closed patterns kept, best first.
    pub patterns: Vec<Pattern>,
    /// Closed patterns dropped because a kept one contains them.
    pub contained: Vec<(Pattern, usize)>,
}

/// Find the recurring procedures of `sessions`.
pub fn mine(sessions: &[SessionLog], opts: MineOptions) -> Mined {
    let min_len = opts.min_len.max(2);
    let max_len = opts.max_len.clamp(min_len, 8);
    let min_support = opts.min_support.max(1);
    // Steps interned to small integers: runs are compared as slices of u32.
    let mut ids: HashMap<Step, u32> = HashMap::new();
    let mut steps: Vec<Step> = Vec::new();
    let seqs: Vec<Vec<u32>> = sessions
        .iter()
        .map(|s| {
            s.calls
                .iter()
                .map(|c| {
                    let st = Step::of(c);
                    *ids.entry(st.clone()).or_insert_with(|| {
                        steps.push(st);
                        (steps.len() - 1) as u32
                    })
                })
                .collect()
        })
        .collect();
    // Runs by length, each with its first occurrence per session.
    let mut by_run: HashMap<&[u32], Vec<Occurrence>> = HashMap::new();
    for (si, seq) in seqs.iter().enumerate() {
        for len in min_len..=max_len.min(seq.len()) {
            for start in 0..=seq.len() - len {
                let run = &seq[start..start + len];
                let occ = by_run.entry(run).or_default();
                if occ.last().is_none_or(|o| o.session != si) {
                    occ.push(Occurrence { session: si, start });
                }
            }
        }
    }
    by_run.retain(|_, occ| occ.len() >= min_support);
    // Closed: no run one step longer (on either side) with the same support. Checking one step
    // longer is enough: support only falls as a run grows. Each run marks its prefix and
    // suffix, so this is linear in the runs kept.
    let mut not_closed: std::collections::HashSet<&[u32]> = std::collections::HashSet::new();
    for (run, occ) in &by_run {
        if run.len() > min_len {
            for sub in [&run[1..], &run[..run.len() - 1]] {
                if by_run.get(sub).is_some_and(|o| o.len() == occ.len()) {
                    not_closed.insert(sub);
                }
            }
        }
    }
    let mut closed: Vec<(&[u32], &Vec<Occurrence>)> = by_run
        .iter()
        .filter(|(run, _)| !not_closed.contains(*run))
        .map(|(r, o)| (*r, o))
        .collect();
    let name_of = |r: &[u32]| -> Vec<&Step> { r.iter().map(|&i| &steps[i as usize]).collect() };
    closed.sort_by(|a, b| {
        b.1.len()
            .cmp(&a.1.len())
            .then(b.0.len().cmp(&a.0.len()))
            .then_with(|| name_of(a.0).cmp(&name_of(b.0)))
    });
    let mut kept: Vec<&[u32]> = Vec::new();
    let mut out = Mined {
        patterns: Vec::new(),
        contained: Vec::new(),
    };
    let to_pattern = |r: &[u32], occ: &Vec<Occurrence>| Pattern {
        steps: r.iter().map(|&i| steps[i as usize].clone()).collect(),
        occurrences: occ.clone(),
    };
    for (run, occ) in closed {
        if let Some(k) = kept.iter().position(|k| contains(k, run)) {
            out.contained.push((to_pattern(run, occ), k));
            continue;
        }
        kept.push(run);
        out.patterns.push(to_pattern(run, occ));
    }
    out
}

fn contains(hay: &[u32], needle: &[u32]) -> bool {
    needle.len() <= hay.len() && hay.windows(needle.len()).any(|w| w == needle)
}

/// The values seen for each argument key of each step, over a pattern's occurrences, masked:
/// ids, paths, URLs and long text are described, not shown.
pub fn arguments_seen(
    sessions: &[SessionLog],
    p: &Pattern,
) -> Vec<BTreeMap<String, BTreeSet<String>>> {
    let mut out = vec![BTreeMap::<String, BTreeSet<String>>::new(); p.steps.len()];
    for o in &p.occurrences {
        let calls = &sessions[o.session].calls;
        for (i, c) in calls[o.start..o.start + p.steps.len()].iter().enumerate() {
            if let Value::Object(m) = &c.arguments {
                for (k, v) in m {
                    out[i].entry(k.clone()).or_default().insert(mask(v));
                }
            }
        }
    }
    out
}

/// A value as a draft may show it: short plain words and numbers as they are; ids, paths,
/// URLs, long text and structures by what they are.
pub fn mask(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(_) => "a number".into(),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "an object".into(),
        Value::String(s) => {
            let has_digit = s.bytes().any(|b| b.is_ascii_digit());
            if s.contains('/') || s.contains('\\') {
                if s.contains("://") {
                    "a URL".into()
                } else {
                    "a path".into()
                }
            } else if has_digit || s.len() > 24 {
                if s.len() > 24 && s.contains(' ') {
                    "text".into()
                } else {
                    "an id".into()
                }
            } else if s
                .chars()
                .all(|c| c.is_alphanumeric() || c == '-' || c == '_' || c == ' ')
            {
                format!("`{s}`")
            } else {
                "text".into()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(tool: &str, args: Value) -> LoggedCall {
        LoggedCall {
            call_id: String::new(),
            tool: tool.into(),
            arguments: args,
        }
    }

    fn session(id: &str, calls: Vec<LoggedCall>) -> SessionLog {
        SessionLog {
            session: id.into(),
            calls,
            messages: Vec::new(),
        }
    }

    fn refund(n: u32) -> Vec<LoggedCall> {
        vec![
            call("lookup_order", json!({"order_id": format!("ord_{n}")})),
            call("check_policy", json!({"amount_cents": n * 100})),
            call(
                "issue_refund",
                json!({"order_id": format!("ord_{n}"), "amount_cents": n}),
            ),
            call(
                "notify_customer",
                json!({"order_id": format!("ord_{n}"), "template": "refund"}),
            ),
        ]
    }

    #[test]
    fn one_procedure_in_five_sessions_is_one_closed_pattern() {
        let mut sessions: Vec<SessionLog> = (0..5)
            .map(|i| {
                let mut calls = vec![call("search_docs", json!({"q": format!("x{i}")}))];
                calls.extend(refund(i));
                calls.push(call(&format!("other_{i}"), json!({})));
                session(&format!("s{i}"), calls)
            })
            .collect();
        sessions.push(session(
            "noise",
            vec![call("a", json!({})), call("b", json!({}))],
        ));
        let m = mine(&sessions, MineOptions::default());
        assert_eq!(m.patterns.len(), 1, "{:?}", m.patterns);
        let p = &m.patterns[0];
        assert_eq!(p.support(), 5);
        // search_docs precedes the procedure everywhere: the closed run includes it.
        let tools: Vec<&str> = p.steps.iter().map(|s| s.tool.as_str()).collect();
        assert_eq!(
            tools,
            [
                "search_docs",
                "lookup_order",
                "check_policy",
                "issue_refund",
                "notify_customer"
            ]
        );
        assert_eq!(
            p.occurrences[0],
            Occurrence {
                session: 0,
                start: 0
            }
        );
        assert!(m.contained.is_empty());
        let seen = arguments_seen(&sessions, p);
        assert_eq!(seen[1]["order_id"], BTreeSet::from(["an id".to_owned()]));
        assert_eq!(seen[4]["template"], BTreeSet::from(["`refund`".to_owned()]));
    }

    #[test]
    fn rare_or_unrelated_calls_give_nothing_and_shapes_separate_steps() {
        let sessions: Vec<SessionLog> = (0..6)
            .map(|i| {
                session(
                    &format!("s{i}"),
                    vec![
                        call(&format!("t{i}"), json!({})),
                        call(&format!("u{i}"), json!({})),
                    ],
                )
            })
            .collect();
        assert!(mine(&sessions, MineOptions::default()).patterns.is_empty());
        // Twice is below the default support of three.
        let two: Vec<SessionLog> = (0..2)
            .map(|i| session(&format!("s{i}"), refund(i)))
            .collect();
        assert!(mine(&two, MineOptions::default()).patterns.is_empty());
        // Same tools, other argument keys: other steps.
        let mut shaped: Vec<SessionLog> = (0..3)
            .map(|i| session(&format!("a{i}"), refund(i)))
            .collect();
        for s in &mut shaped {
            s.calls[1].arguments = json!({"amount": 1, "currency": "EUR"});
        }
        let m = mine(&shaped, MineOptions::default());
        assert_eq!(m.patterns.len(), 1);
        assert_eq!(m.patterns[0].steps[1].keys, ["amount", "currency"]);
        // A repeated run inside one session counts once.
        let rep = vec![session("r", [refund(1), refund(2), refund(3)].concat())];
        assert!(mine(&rep, MineOptions::default()).patterns.is_empty());
    }

    #[test]
    fn masks_say_what_values_are_without_showing_them() {
        assert_eq!(mask(&json!("ord_123")), "an id");
        assert_eq!(mask(&json!("/etc/passwd")), "a path");
        assert_eq!(mask(&json!("https://x.example/a")), "a URL");
        assert_eq!(mask(&json!("refund")), "`refund`");
        assert_eq!(mask(&json!(15)), "a number");
        assert_eq!(
            mask(&json!("a long sentence the user typed in full")),
            "text"
        );
        assert_eq!(mask(&json!("<b>")), "text");
    }
}
