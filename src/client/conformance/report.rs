//! How a run of `check` went: each case's verdict, and the report as text or JSON.

/// Why a run ended before its last case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// No answer: the server cannot be reached, or failed to answer.
    Unreachable(String),
    /// An answer that leaves nothing more to check safely.
    Refused(String),
    /// Ctrl-C or SIGTERM.
    Signal,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Unreachable(why) | Stop::Refused(why) => f.write_str(why),
            Stop::Signal => f.write_str("stopped by a signal"),
        }
    }
}

/// How a case ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Pass,
    /// Not what Zincati needs to work, but what a careful server does;
    /// a failure under `--strict`.
    Warn,
    /// What breaks Zincati.
    Fail,
    /// Could not be tried here (said why).
    Skip,
}

impl Verdict {
    fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Warn => "warn",
            Verdict::Fail => "fail",
            Verdict::Skip => "skip",
        }
    }
}

/// One case: what it checks, what it saw, and the rule behind it.
#[derive(Clone, Debug)]
pub(crate) struct Case {
    pub(crate) name: &'static str,
    pub(crate) verdict: Verdict,
    pub(crate) saw: String,
    pub(crate) rule: &'static str,
}

/// Everything a run found, and the slots it could not give back.
#[derive(Clone, Debug, Default)]
pub(crate) struct Report {
    pub(crate) cases: Vec<Case>,
    /// Why the run stopped before its end, if it did.
    pub(crate) stopped: Option<String>,
    /// Ids still holding a slot after the clean-up.
    pub(crate) left: Vec<String>,
}

impl Report {
    pub(crate) fn count(&self, verdict: Verdict) -> usize {
        self.cases.iter().filter(|c| c.verdict == verdict).count()
    }

    /// Whether the run failed: a failure, a stop, a slot left behind, or
    /// (with `strict`) a warning.
    pub(crate) fn failed(&self, strict: bool) -> bool {
        self.count(Verdict::Fail) > 0
            || self.stopped.is_some()
            || !self.left.is_empty()
            || (strict && self.count(Verdict::Warn) > 0)
    }

    /// One line per case, then the summary.
    pub(crate) fn text(&self, group: &str, strict: bool) -> String {
        let mut out = String::new();
        for case in &self.cases {
            out.push_str(&format!(
                "{}  {}: {}  [{}]\n",
                case.verdict.as_str(),
                case.name,
                case.saw,
                case.rule
            ));
        }
        if let Some(why) = &self.stopped {
            out.push_str(&format!("stopped: {why}\n"));
        }
        for id in &self.left {
            out.push_str(&format!(
                "not given back, release it by hand: fleetlock release --group {group} --id {id}\n"
            ));
        }
        out.push_str(&format!(
            "{} passed, {} warned{}, {} failed, {} skipped: {}\n",
            self.count(Verdict::Pass),
            self.count(Verdict::Warn),
            if strict {
                " (failures under --strict)"
            } else {
                ""
            },
            self.count(Verdict::Fail),
            self.count(Verdict::Skip),
            if self.stopped.is_some() {
                "the check stopped before its end"
            } else if self.failed(strict) {
                "the server does not conform"
            } else {
                "the server conforms"
            }
        ));
        out
    }

    pub(crate) fn json(
        &self,
        url: &str,
        group: &str,
        slots: u32,
        strict: bool,
    ) -> serde_json::Value {
        serde_json::json!({
            "url": url,
            "group": group,
            "slots": slots,
            "strict": strict,
            "cases": self.cases.iter().map(|c| serde_json::json!({
                "name": c.name,
                "result": c.verdict.as_str(),
                "saw": c.saw,
                "rule": c.rule,
            })).collect::<Vec<_>>(),
            "passed": self.count(Verdict::Pass),
            "warned": self.count(Verdict::Warn),
            "failed": self.count(Verdict::Fail),
            "skipped": self.count(Verdict::Skip),
            "stopped": self.stopped,
            "left": self.left,
            "conforms": !self.failed(strict),
        })
    }
}
