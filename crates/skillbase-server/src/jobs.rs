//! Background jobs of the server: the studio's evaluations and REST's scale sweeps, each run
//! off the request that started it so a long one shows its progress.
//!
//! A job is known by an unguessable id (128 random bits) and only to the token that started it,
//! for the agent it is about: anyone else is told it does not exist. A registry bounds the jobs
//! running per agent and in all (a start beyond that is refused, nothing started); a finished
//! job is kept [`KEEP_FINISHED`] (at most [`MAX_KEPT`] of them, the oldest forgotten first).
//! Jobs live in this process's memory only: a restart forgets them, and a server shutting down
//! stops the running ones.

use skillbase_insight::eval::Progress;
use skillbase_store::AgentName;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a finished job's result stays readable.
pub(crate) const KEEP_FINISHED: Duration = Duration::from_secs(10 * 60);
/// Finished jobs kept at most (the oldest forgotten first).
pub(crate) const MAX_KEPT: usize = 64;

/// Who started a job: the signed-in token's id (`None` in `--dev`, where everyone is the
/// admin).
pub(crate) type Owner = Option<i64>;

/// Where a job is; `R` is what a finished one answers.
pub(crate) enum State<R> {
    /// Getting ready (an evaluation computes its messages' vectors) before the first unit.
    Preparing,
    /// Running its units (cases, sizes).
    Running,
    /// Finished: its result.
    Done(Arc<R>),
    /// The evaluation could not run.
    Failed(String),
    /// Stopped before its end (the server is shutting down).
    Stopped,
}

impl<R> Clone for State<R> {
    fn clone(&self) -> Self {
        match self {
            State::Preparing => State::Preparing,
            State::Running => State::Running,
            State::Done(r) => State::Done(r.clone()),
            State::Failed(why) => State::Failed(why.clone()),
            State::Stopped => State::Stopped,
        }
    }
}

impl<R> State<R> {
    /// The word the status route answers.
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            State::Preparing => "preparing",
            State::Running => "running",
            State::Done(_) => "done",
            State::Failed(_) => "failed",
            State::Stopped => "stopped",
        }
    }

    fn finished(&self) -> bool {
        !matches!(self, State::Preparing | State::Running)
    }
}

/// One job; `L` is what it shares with the task running it besides its progress.
pub(crate) struct Job<R, L = ()> {
    /// Its id: 32 lowercase hex digits.
    pub(crate) id: String,
    /// The agent it is about.
    pub(crate) agent: AgentName,
    owner: Owner,
    /// The number of units (cases, sizes) it runs.
    pub(crate) total: usize,
    /// The units done so far, counted by the task itself; a stop request.
    pub(crate) progress: Arc<Progress>,
    /// When it was started.
    pub(crate) started: Instant,
    /// Where it is, and when it finished.
    state: Mutex<(State<R>, Option<Instant>)>,
    /// What the job's kind shares with its task.
    pub(crate) live: L,
}

impl<R, L> Job<R, L> {
    /// Where it is now, the cases done, and how long it ran (when finished).
    pub(crate) fn snapshot(&self) -> (State<R>, usize, Option<Duration>) {
        let (state, finished) = self.state.lock().expect("the job lock").clone();
        let done = self.progress.done().min(self.total);
        (state, done, finished.map(|f| f - self.started))
    }

    /// The job is ready and runs its units.
    pub(crate) fn set_running(&self) {
        let mut s = self.state.lock().expect("the job lock");
        if matches!(s.0, State::Preparing) {
            s.0 = State::Running;
        }
    }

    /// The job ended (`state` is a finished one).
    pub(crate) fn finish(&self, state: State<R>, now: Instant) {
        debug_assert!(state.finished());
        *self.state.lock().expect("the job lock") = (state, Some(now));
    }

    fn finished_at(&self) -> Option<Instant> {
        self.state.lock().expect("the job lock").1
    }
}

/// Why a job was not started.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// As many jobs of this agent as the registry allows are running.
    Agent,
    /// As many jobs as the registry allows are running.
    Total,
}

/// The jobs of one kind, by id, with how many may run at once.
pub(crate) struct Jobs<R, L = ()> {
    by_id: Mutex<HashMap<String, Arc<Job<R, L>>>>,
    /// Jobs running at once for one agent.
    pub(crate) per_agent: usize,
    /// Jobs running at once in all.
    pub(crate) running: usize,
}

/// Whether `id` has the form of a job id (32 lowercase hex digits): anything else is looked
/// up nowhere.
pub(crate) fn well_formed(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn new_id() -> String {
    let mut raw = [0u8; 16];
    getrandom::fill(&mut raw).expect("the operating system's random source failed");
    raw.iter().map(|b| format!("{b:02x}")).collect()
}

impl<R, L> Jobs<R, L> {
    /// An empty registry running at most `per_agent` jobs of one agent and `running` in all.
    pub(crate) fn new(per_agent: usize, running: usize) -> Jobs<R, L> {
        Jobs {
            by_id: Mutex::new(HashMap::new()),
            per_agent,
            running,
        }
    }

    /// Why a job of `agent` would be refused now, if it would.
    pub(crate) fn refusal(&self, agent: &AgentName, now: Instant) -> Option<Refused> {
        let mut map = self.by_id.lock().expect("the jobs lock");
        forget_old(&mut map, now);
        self.refusal_in(&map, agent)
    }

    fn refusal_in(
        &self,
        map: &HashMap<String, Arc<Job<R, L>>>,
        agent: &AgentName,
    ) -> Option<Refused> {
        let running: Vec<&Arc<Job<R, L>>> =
            map.values().filter(|j| j.finished_at().is_none()).collect();
        if running.iter().filter(|j| j.agent == *agent).count() >= self.per_agent {
            return Some(Refused::Agent);
        }
        if running.len() >= self.running {
            return Some(Refused::Total);
        }
        None
    }

    /// Register a new job of `total` units for `agent`, started by `owner`, unless too many are
    /// running (then nothing is registered).
    pub(crate) fn start(
        &self,
        agent: &AgentName,
        owner: Owner,
        total: usize,
        live: L,
        now: Instant,
    ) -> Result<Arc<Job<R, L>>, Refused> {
        let mut map = self.by_id.lock().expect("the jobs lock");
        forget_old(&mut map, now);
        if let Some(why) = self.refusal_in(&map, agent) {
            return Err(why);
        }
        let mut id = new_id();
        while map.contains_key(&id) {
            id = new_id();
        }
        let job = Arc::new(Job {
            id: id.clone(),
            agent: agent.clone(),
            owner,
            total,
            progress: Arc::new(Progress::default()),
            started: now,
            state: Mutex::new((State::Preparing, None)),
            live,
        });
        map.insert(id, job.clone());
        Ok(job)
    }

    /// The job `id` of `agent` when `owner` started it; `None` for any other job, a forgotten
    /// or malformed one alike.
    pub(crate) fn get(
        &self,
        id: &str,
        agent: &AgentName,
        owner: Owner,
        now: Instant,
    ) -> Option<Arc<Job<R, L>>> {
        if !well_formed(id) {
            return None;
        }
        let mut map = self.by_id.lock().expect("the jobs lock");
        forget_old(&mut map, now);
        map.get(id)
            .filter(|j| j.agent == *agent && j.owner == owner)
            .cloned()
    }

    /// `owner`'s jobs of `agent`, the newest first.
    pub(crate) fn of(&self, agent: &AgentName, owner: Owner, now: Instant) -> Vec<Arc<Job<R, L>>> {
        let mut map = self.by_id.lock().expect("the jobs lock");
        forget_old(&mut map, now);
        let mut v: Vec<Arc<Job<R, L>>> = map
            .values()
            .filter(|j| j.agent == *agent && j.owner == owner)
            .cloned()
            .collect();
        v.sort_by_key(|j| std::cmp::Reverse(j.started));
        v
    }
}

/// Forget the jobs finished more than [`KEEP_FINISHED`] ago, then the oldest finished ones
/// beyond [`MAX_KEPT`]. Running jobs are never forgotten.
fn forget_old<R, L>(map: &mut HashMap<String, Arc<Job<R, L>>>, now: Instant) {
    map.retain(|_, j| {
        j.finished_at()
            .is_none_or(|f| now.saturating_duration_since(f) < KEEP_FINISHED)
    });
    let mut finished: Vec<(Instant, String)> = map
        .values()
        .filter_map(|j| j.finished_at().map(|f| (f, j.id.clone())))
        .collect();
    if finished.len() > MAX_KEPT {
        finished.sort();
        for (_, id) in &finished[..finished.len() - MAX_KEPT] {
            map.remove(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(n: &str) -> AgentName {
        AgentName::parse(n).unwrap()
    }

    const MAX_PER_AGENT: usize = 2;
    const MAX_RUNNING: usize = 4;

    type TestJobs = Jobs<(), ()>;

    fn registry() -> TestJobs {
        Jobs::new(MAX_PER_AGENT, MAX_RUNNING)
    }

    fn done(j: &Job<(), ()>, at: Instant) {
        j.finish(State::Stopped, at);
    }

    #[test]
    fn ids_are_random_and_read_strictly() {
        let jobs = registry();
        let t = Instant::now();
        let a = jobs.start(&agent("a"), Some(1), 3, (), t).unwrap();
        let b = jobs.start(&agent("b"), Some(1), 3, (), t).unwrap();
        assert!(well_formed(&a.id) && well_formed(&b.id));
        assert_ne!(a.id, b.id);
        for bad in [
            "",
            "0123",
            &"g".repeat(32),
            &"A".repeat(32),
            &"0".repeat(33),
            &a.id.to_uppercase(),
            &format!("{}x", &a.id[..31]),
        ] {
            assert!(jobs.get(bad, &agent("a"), Some(1), t).is_none(), "{bad}");
        }
        assert!(jobs.get(&a.id, &agent("a"), Some(1), t).is_some());
    }

    #[test]
    fn a_job_is_its_owners_and_its_agents_only() {
        let jobs = registry();
        let t = Instant::now();
        let j = jobs.start(&agent("a"), Some(1), 3, (), t).unwrap();
        assert!(jobs.get(&j.id, &agent("a"), Some(1), t).is_some());
        assert!(jobs.get(&j.id, &agent("b"), Some(1), t).is_none());
        assert!(jobs.get(&j.id, &agent("a"), Some(2), t).is_none());
        assert!(jobs.get(&j.id, &agent("a"), None, t).is_none());
        assert_eq!(jobs.of(&agent("a"), Some(1), t).len(), 1);
        assert!(jobs.of(&agent("a"), Some(2), t).is_empty());
    }

    #[test]
    fn running_jobs_are_bounded_per_agent_and_in_all() {
        let jobs = registry();
        let t = Instant::now();
        let mut a: Vec<Arc<Job<(), ()>>> = (0..MAX_PER_AGENT)
            .map(|_| jobs.start(&agent("a"), Some(1), 1, (), t).unwrap())
            .collect();
        // Another token changes nothing: the bound is the agent's.
        assert_eq!(
            jobs.start(&agent("a"), Some(2), 1, (), t).err(),
            Some(Refused::Agent)
        );
        let mut n = MAX_PER_AGENT;
        let mut i = 0;
        while n < MAX_RUNNING {
            jobs.start(&agent(&format!("x{i}")), Some(1), 1, (), t)
                .unwrap();
            i += 1;
            n += 1;
        }
        assert_eq!(
            jobs.start(&agent("z"), Some(1), 1, (), t).err(),
            Some(Refused::Total)
        );
        // A finished job no longer counts.
        done(&a.pop().unwrap(), t);
        assert!(jobs.start(&agent("a"), Some(1), 1, (), t).is_ok());
    }

    #[test]
    fn finished_jobs_are_forgotten_after_a_while_and_beyond_a_number() {
        let jobs = registry();
        let t = Instant::now();
        let running = jobs.start(&agent("a"), Some(1), 1, (), t).unwrap();
        let finished = jobs.start(&agent("a"), Some(1), 1, (), t).unwrap();
        done(&finished, t + Duration::from_secs(1));
        let later = t + Duration::from_secs(1) + KEEP_FINISHED - Duration::from_secs(1);
        assert!(
            jobs.get(&finished.id, &agent("a"), Some(1), later)
                .is_some()
        );
        let after = later + Duration::from_secs(2);
        assert!(
            jobs.get(&finished.id, &agent("a"), Some(1), after)
                .is_none()
        );
        // A running job stays, however long it runs.
        let much_later = t + 10 * KEEP_FINISHED;
        assert!(
            jobs.get(&running.id, &agent("a"), Some(1), much_later)
                .is_some()
        );
        // Beyond MAX_KEPT finished jobs, the oldest go first.
        done(&running, much_later);
        let mut ids = Vec::new();
        for k in 0..MAX_KEPT + 3 {
            let at = much_later + Duration::from_millis(k as u64 + 1);
            let j = jobs.start(&agent("b"), Some(1), 1, (), at).unwrap();
            done(&j, at);
            ids.push(j.id.clone());
        }
        let now = much_later + Duration::from_secs(1);
        assert_eq!(jobs.of(&agent("b"), Some(1), now).len(), MAX_KEPT);
        assert!(jobs.get(&ids[0], &agent("b"), Some(1), now).is_none());
        assert!(
            jobs.get(&ids[MAX_KEPT + 2], &agent("b"), Some(1), now)
                .is_some()
        );
    }
}
