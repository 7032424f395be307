//! The deterministic miner: recurring procedures across sessions.
//!
//! Each call becomes a step `(tool, argument shape)`: the tool's wire name and the sorted keys
//! of its arguments, values masked (an order id, a path and a count are the same step whatever
//! their values). Contiguous runs of 2 to 8 steps are counted once per session; a run found in
//! at least `min_support` distinct sessions is a candidate. Only closed candidates are kept (no
//! longer run containing it has the same support). Longer candidates are taken first; one
//! inside a kept procedure is dropped as part of it unless it also occurs on its own in enough
//! other sessions, so one procedure gives one pattern. Chance is tested too: steps drawn from an
//! agent's usual tools repeat by themselves (with 12 tools and 12 calls a session, any given
//! pair is in one session of 13), so a pattern is kept only when independent draws would make
//! it that frequent with probability under [`ALPHA`] (Poisson, corrected for the runs tested),
//! and when neither end is a chance call beside a real procedure. Patterns of the same tools in
//! the same order whose argument shapes differ (an optional argument) are one procedure: merged,
//! keys those every occurrence has. The result is ranked by support, then length, then the
//! steps (the same on every run).

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

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
    /// Closed patterns dropped because kept ones contain them (the index of the first).
    pub contained: Vec<(Pattern, usize)>,
    /// Closed patterns dropped because chance alone would make them that frequent (with the
    /// number of sessions chance gives).
    pub chance: Vec<(Pattern, f64)>,
}

/// The chance a kept pattern may have of being noise, after correcting for how many runs were
/// tested.
pub const ALPHA: f64 = 0.01;

/// P(Y ≥ k) for Y binomial with `n` trials of probability `p`.
pub fn binomial_tail(n: usize, k: usize, p: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if k > n || p <= 0.0 {
        return 0.0;
    }
    if p >= 1.0 {
        return 1.0;
    }
    let ln_choose = |n: usize, i: usize| -> f64 {
        let (a, b) = (i.min(n - i), n);
        (0..a)
            .map(|j| ((b - j) as f64).ln() - ((j + 1) as f64).ln())
            .sum()
    };
    let (lp, lq) = (p.ln(), (1.0 - p).ln());
    (k..=n)
        .map(|i| (ln_choose(n, i) + i as f64 * lp + (n - i) as f64 * lq).exp())
        .sum::<f64>()
        .min(1.0)
}

/// P(X ≥ k) for X Poisson with mean `lambda`.
pub fn poisson_tail(lambda: f64, k: usize) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if lambda <= 0.0 {
        return 0.0;
    }
    if (k as f64) <= lambda {
        let mut term = (-lambda).exp();
        let mut cdf = 0.0;
        for i in 0..k {
            if i > 0 {
                term *= lambda / i as f64;
            }
            cdf += term;
        }
        return (1.0 - cdf).clamp(0.0, 1.0);
    }
    let ln_fact: f64 = (2..=k).map(|i| (i as f64).ln()).sum();
    let mut log_t = -lambda + k as f64 * lambda.ln() - ln_fact;
    let mut sum = 0.0;
    let mut i = k;
    loop {
        let t = log_t.exp();
        sum += t;
        if t <= sum * 1e-12 || i > k + 100_000 {
            break;
        }
        i += 1;
        log_t += lambda.ln() - (i as f64).ln();
    }
    sum.min(1.0)
}

/// Find the recurring procedures of `sessions`.
pub fn mine(sessions: &[SessionLog], opts: MineOptions) -> Mined {
    let min_len = opts.min_len.max(2);
    let max_len = opts.max_len.clamp(min_len, 8);
    let min_support = opts.min_support.max(1);
    let (steps, seqs) = intern(sessions);
    let by_run = frequent_runs(&seqs, min_len, max_len, min_support);
    // Chance first.
    let odds = Odds::new(&seqs, steps.len(), max_len, sessions.len());
    let mut chance: Vec<(&[u32], &Vec<Occurrence>)> = Vec::new();
    let mut sig: HashMap<&[u32], &Vec<Occurrence>> = HashMap::new();
    for (run, occ) in &by_run {
        if odds.significant(run, occ.len(), &by_run, min_len) {
            sig.insert(run, occ);
        } else {
            chance.push((run, occ));
        }
    }
    let mut closed = closed_runs(&sig, min_len);
    // Longest first: a procedure beats the fragments of it; then by support.
    closed.sort_by(|a, b| {
        b.0.len()
            .cmp(&a.0.len())
            .then(b.1.len().cmp(&a.1.len()))
            .then_with(|| by_steps(&steps, a.0, b.0))
    });
    // The chance runs reported are the longest-first few closed ones (not every sub-run).
    chance.sort_by(|a, b| {
        b.1.len()
            .cmp(&a.1.len())
            .then(b.0.len().cmp(&a.0.len()))
            .then_with(|| by_steps(&steps, a.0, b.0))
    });
    let mut out = Mined {
        patterns: Vec::new(),
        contained: Vec::new(),
        chance: chance
            .iter()
            .take(50)
            .map(|(r, o)| (to_pattern(&steps, r, o), odds.by_chance(r, o.len())))
            .collect(),
    };
    keep_procedures(&mut out, closed, &steps, min_support);
    merge_shapes(&mut out);
    rank(&mut out);
    out
}

/// Each session's calls as steps interned to small integers (runs are compared as slices of
/// u32), with the steps by number.
fn intern(sessions: &[SessionLog]) -> (Vec<Step>, Vec<Vec<u32>>) {
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
    (steps, seqs)
}

/// The runs of `min_len` to `max_len` steps found in at least `min_support` sessions, each
/// with its first occurrence per session.
fn frequent_runs(
    seqs: &[Vec<u32>],
    min_len: usize,
    max_len: usize,
    min_support: usize,
) -> HashMap<&[u32], Vec<Occurrence>> {
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
    by_run
}

/// What chance alone would make of the sessions' steps.
struct Odds {
    /// Each step's calls.
    freq: Vec<usize>,
    /// All calls.
    total: usize,
    /// Distinct steps (at least 1).
    distinct: f64,
    /// The positions a run of each length has, over all sessions.
    positions: Vec<f64>,
    /// Sessions mined.
    sessions: usize,
}

impl Odds {
    /// Each step's share of all calls, and the positions a run of each length (up to
    /// `max_len`) has.
    fn new(seqs: &[Vec<u32>], distinct: usize, max_len: usize, sessions: usize) -> Odds {
        let total: usize = seqs.iter().map(Vec::len).sum();
        let mut freq = vec![0usize; distinct];
        for seq in seqs {
            for &x in seq {
                freq[x as usize] += 1;
            }
        }
        let positions: Vec<f64> = (0..=max_len)
            .map(|l| {
                seqs.iter()
                    .map(|s| s.len().saturating_sub(l.max(1) - 1) as f64)
                    .sum()
            })
            .collect();
        Odds {
            freq,
            total,
            distinct: distinct.max(1) as f64,
            positions,
            sessions,
        }
    }

    /// Step `x`'s share of all calls.
    fn share(&self, x: u32) -> f64 {
        self.freq[x as usize] as f64 / self.total.max(1) as f64
    }

    /// How many sessions independent draws would give a run of `s` occurrences: each step with
    /// its share of the calls outside those occurrences (a procedure's own calls would otherwise
    /// make it look expected in a small store), add-one smoothed.
    fn by_chance(&self, r: &[u32], s: usize) -> f64 {
        let rest = (self.total.saturating_sub(s * r.len()) as f64 + self.distinct).max(1.0);
        let p: f64 = r
            .iter()
            .map(|&x| {
                let own = s * r.iter().filter(|&&y| y == x).count();
                (self.freq[x as usize].saturating_sub(own) as f64 + 1.0) / rest
            })
            .product();
        (self.positions[r.len()] * p).min(self.sessions as f64)
    }

    /// Significant as a whole (Poisson, corrected for every run of its length that could have
    /// been), and neither end a chance call beside the rest: an end step is kept when at least
    /// half of its calls are in the run, or when, given the rest of the run in n sessions, it is
    /// there in s of them more often than its share of all calls would make it (binomial,
    /// corrected for every step that could have been there).
    fn significant(
        &self,
        run: &[u32],
        s: usize,
        by_run: &HashMap<&[u32], Vec<Occurrence>>,
        min_len: usize,
    ) -> bool {
        let tests = self
            .distinct
            .powi(run.len() as i32)
            .min(self.total.max(1) as f64);
        if poisson_tail(self.by_chance(run, s), s) * tests >= ALPHA {
            return false;
        }
        if run.len() > min_len {
            // An end is the procedure's own when most of that step's calls are in it, or when
            // it follows the rest far more often than its share would make it.
            let end = |sub: &[u32], x: u32| {
                let n = by_run.get(sub).map_or(s, Vec::len);
                s * 2 >= self.freq[x as usize]
                    || binomial_tail(n, s, self.share(x)) * self.distinct < ALPHA
            };
            if !end(&run[1..], run[0]) || !end(&run[..run.len() - 1], run[run.len() - 1]) {
                return false;
            }
        }
        true
    }
}

/// The closed runs among the significant `sig`.
fn closed_runs<'r>(
    sig: &HashMap<&'r [u32], &'r Vec<Occurrence>>,
    min_len: usize,
) -> Vec<(&'r [u32], &'r Vec<Occurrence>)> {
    // Closed among the significant: no run one step longer (on either side) with the same
    // support (support only falls as a run grows, so one step is enough). Each run marks its
    // prefix and suffix: linear in the runs.
    let mut not_closed: HashSet<&[u32]> = HashSet::new();
    for (run, occ) in sig {
        if run.len() > min_len {
            for sub in [&run[1..], &run[..run.len() - 1]] {
                if sig.get(sub).is_some_and(|o| o.len() == occ.len()) {
                    not_closed.insert(sub);
                }
            }
        }
    }
    sig.iter()
        .filter(|(run, _)| !not_closed.contains(*run))
        .map(|(r, o)| (*r, *o))
        .collect()
}

/// Runs compared by their steps (the tie-break that makes the order the same on every run),
/// without collecting them.
fn by_steps(steps: &[Step], a: &[u32], b: &[u32]) -> std::cmp::Ordering {
    let step = |&i: &u32| &steps[i as usize];
    a.iter().map(step).cmp(b.iter().map(step))
}

/// The pattern of run `r` (steps by number in `steps`), occurring at `occ`.
fn to_pattern(steps: &[Step], r: &[u32], occ: &[Occurrence]) -> Pattern {
    Pattern {
        steps: r.iter().map(|&i| steps[i as usize].clone()).collect(),
        occurrences: occ.to_vec(),
    }
}

/// Keep the `closed` runs (longest first) as `out.patterns`, but for those inside kept
/// procedures without enough sessions of their own, which go to `out.contained`.
fn keep_procedures(
    out: &mut Mined,
    closed: Vec<(&[u32], &Vec<Occurrence>)>,
    steps: &[Step],
    min_support: usize,
) {
    let mut kept: Vec<(&[u32], &Vec<Occurrence>)> = Vec::new();
    for (run, occ) in closed {
        // Inside kept procedures: kept only if it also occurs on its own, in enough sessions
        // none of them covers.
        let containers: Vec<usize> = kept
            .iter()
            .enumerate()
            .filter(|(_, (k, _))| contains(k, run))
            .map(|(i, _)| i)
            .collect();
        if let Some(&first) = containers.first() {
            let covered: HashSet<usize> = containers
                .iter()
                .flat_map(|&i| kept[i].1.iter().map(|o| o.session))
                .collect();
            let own = occ.iter().filter(|o| !covered.contains(&o.session)).count();
            if own < min_support {
                out.contained.push((to_pattern(steps, run, occ), first));
                continue;
            }
        }
        kept.push((run, occ));
        out.patterns.push(to_pattern(steps, run, occ));
    }
}

/// Merge `out.patterns` of the same tools in the same order (their `contained` indexes follow).
fn merge_shapes(out: &mut Mined) {
    // One procedure whatever the argument shapes: same tools in the same order, merged (keys
    // every occurrence has; occurrences of every shape, the first per session).
    let mut merged: Vec<Pattern> = Vec::new();
    let mut moved: HashMap<usize, usize> = HashMap::new();
    for (i, p) in std::mem::take(&mut out.patterns).into_iter().enumerate() {
        let tools: Vec<&str> = p.steps.iter().map(|s| s.tool.as_str()).collect();
        match merged.iter().position(|m| {
            m.steps.len() == tools.len() && m.steps.iter().zip(&tools).all(|(a, b)| a.tool == *b)
        }) {
            Some(j) => {
                let m = &mut merged[j];
                for (a, b) in m.steps.iter_mut().zip(&p.steps) {
                    a.keys.retain(|k| b.keys.contains(k));
                }
                for o in p.occurrences {
                    if !m.occurrences.iter().any(|x| x.session == o.session) {
                        m.occurrences.push(o);
                    }
                }
                m.occurrences.sort_by_key(|o| o.session);
                moved.insert(i, j);
            }
            None => {
                moved.insert(i, merged.len());
                merged.push(p);
            }
        }
    }
    out.patterns = merged;
    for (_, k) in &mut out.contained {
        *k = moved[k];
    }
}

/// Order `out.patterns` best first (their `contained` indexes follow).
fn rank(out: &mut Mined) {
    // Best first for the caller: by support, then length.
    let order: Vec<usize> = {
        let mut idx: Vec<usize> = (0..out.patterns.len()).collect();
        idx.sort_by(|&a, &b| {
            let (pa, pb) = (&out.patterns[a], &out.patterns[b]);
            pb.support()
                .cmp(&pa.support())
                .then(pb.steps.len().cmp(&pa.steps.len()))
                .then_with(|| pa.steps.cmp(&pb.steps))
        });
        idx
    };
    let remap: HashMap<usize, usize> = order
        .iter()
        .enumerate()
        .map(|(new, &old)| (old, new))
        .collect();
    let mut patterns: Vec<Option<Pattern>> = std::mem::take(&mut out.patterns)
        .into_iter()
        .map(Some)
        .collect();
    out.patterns = order
        .iter()
        .map(|&i| patterns[i].take().expect("each once"))
        .collect();
    for (_, k) in &mut out.contained {
        *k = remap[k];
    }
}

fn contains(hay: &[u32], needle: &[u32]) -> bool {
    needle.len() <= hay.len() && hay.windows(needle.len()).any(|w| w == needle)
}

/// The values seen for each argument key of each step, over a pattern's occurrences, masked:
/// ids, paths, URLs, times and long text are described, and plain values shown only when they
/// recur across sessions.
pub fn arguments_seen(
    sessions: &[SessionLog],
    p: &Pattern,
) -> Vec<BTreeMap<String, BTreeSet<String>>> {
    // (step, key) → shown form → in how many sessions.
    let mut seen = vec![BTreeMap::<String, BTreeMap<String, usize>>::new(); p.steps.len()];
    for o in &p.occurrences {
        let calls = &sessions[o.session].calls;
        for (i, c) in calls[o.start..o.start + p.steps.len()].iter().enumerate() {
            if let Value::Object(m) = &c.arguments {
                for (k, v) in m {
                    *seen[i]
                        .entry(k.clone())
                        .or_default()
                        .entry(mask(v))
                        .or_default() += 1;
                }
            }
        }
    }
    // A plain value is shown only when it recurs (in two sessions or more): then it is part of
    // the procedure (a template, a status). One that differs every time is the instance's data
    // (a customer's name, a city), described, never copied into a skill.
    seen.into_iter()
        .map(|keys| {
            keys.into_iter()
                .map(|(k, forms)| {
                    let shown = forms
                        .into_iter()
                        .map(|(f, n)| {
                            if f.starts_with('`') && n < 2 {
                                "text".to_owned()
                            } else {
                                f
                            }
                        })
                        .collect();
                    (k, shown)
                })
                .collect()
        })
        .collect()
}

/// A value as a draft may show it: short plain words (a status, a timezone, a template name) as
/// they are; ids, paths, URLs, times, numbers, long text and structures by what they are.
pub fn mask(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(_) => "a number".into(),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "an object".into(),
        Value::String(s) => {
            let b = s.as_bytes();
            let digits = b.iter().filter(|c| c.is_ascii_digit()).count();
            if s.contains("://") {
                "a URL".into()
            } else if s.starts_with(['/', '~'])
                || s.starts_with("./")
                || s.starts_with("../")
                || s.contains('\\')
            {
                "a path".into()
            } else if !s.is_empty() && digits == s.len() {
                "a number".into()
            } else if digits > 0
                && b.iter().all(|c| {
                    c.is_ascii_digit() || matches!(c, b':' | b'-' | b'.' | b'T' | b'Z' | b'+')
                })
            {
                if s.contains(':') {
                    "a time".into()
                } else {
                    "a date".into()
                }
            } else if digits > 0 || s.len() > 32 {
                if s.contains(' ') {
                    "text".into()
                } else {
                    "an id".into()
                }
            } else if s
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' ' | '/' | '.'))
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
        assert_eq!(mask(&json!("Asia/Tokyo")), "`Asia/Tokyo`");
        assert_eq!(mask(&json!("09:00")), "a time");
        assert_eq!(mask(&json!("2026-12-02")), "a date");
        assert_eq!(mask(&json!("12345")), "a number");
        assert_eq!(mask(&json!("./notes.md")), "a path");
    }
}
