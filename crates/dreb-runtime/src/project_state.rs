//! The repository's state at session start, for the system prompt: branch, uncommitted changes, the latest
//! commits and tags. Read with local `git` commands only, run side by side and bounded in time; the reference
//! also asks GitHub (`gh`) for open pull requests, which we leave out: nothing is contacted at start-up.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long the `git` commands may take together; past it they are killed and the state is left out.
const GIT_TIMEOUT: Duration = Duration::from_secs(5);

/// How many commits and tags are shown.
const RECENT: usize = 3;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProjectState {
    /// The branch checked out, `detached` without one.
    pub branch: String,
    /// Lines of `git status --porcelain`: changed, staged and untracked paths.
    pub uncommitted: usize,
    /// `(abbreviated hash, subject)`, newest first.
    pub commits: Vec<(String, String)>,
    /// `(tag, how long ago it was made)`, newest first.
    pub tags: Vec<(String, String)>,
}

impl ProjectState {
    /// The state of the repository `cwd` is in; `None` outside one, without `git`, or when `git status` fails or
    /// times out.
    pub(crate) fn read(cwd: &Path) -> Option<ProjectState> {
        dreb_settings::paths::git_root(cwd)?;
        let [status, log, tags] = run_git_commands(
            cwd,
            [
                &["status", "--porcelain=v1", "--branch"],
                &["log", "-n", "3", "--oneline", "--no-decorate", "--no-color"],
                &[
                    "for-each-ref",
                    "--sort=-creatordate",
                    "--count=3",
                    "--format=%(refname:short) %(creatordate:relative)",
                    "refs/tags",
                ],
            ],
            GIT_TIMEOUT,
        );
        let status = status?;
        let mut lines = status.lines();
        let branch = parse_branch(lines.next()?)?;
        let uncommitted = lines.filter(|l| !l.is_empty()).count();
        let split = |line: &str| match line.split_once(' ') {
            Some((a, b)) => (a.to_string(), b.to_string()),
            None => (line.to_string(), String::new()),
        };
        let recent = |out: Option<String>| -> Vec<(String, String)> {
            out.unwrap_or_default()
                .lines()
                .filter(|l| !l.is_empty())
                .take(RECENT)
                .map(split)
                .collect()
        };
        Some(ProjectState {
            branch,
            uncommitted,
            commits: recent(log),
            tags: recent(tags),
        })
    }

    /// The system prompt's section (it starts with a blank line).
    pub(crate) fn prompt_section(&self) -> String {
        let mut out = String::from("\n\n## Project state (true at session start only)\n\n");
        out.push_str(&format!("- Branch: `{}`\n", self.branch));
        out.push_str(&match self.uncommitted {
            0 => "- Status: clean\n".to_string(),
            1 => "- Status: 1 uncommitted change\n".to_string(),
            n => format!("- Status: {n} uncommitted changes\n"),
        });
        if !self.commits.is_empty() {
            out.push_str("- Recent commits:\n");
            for (hash, subject) in &self.commits {
                out.push_str(&format!("  - `{hash} — {subject}`\n"));
            }
        }
        if !self.tags.is_empty() {
            out.push_str("- Recent releases:\n");
            for (tag, when) in &self.tags {
                out.push_str(&format!("  - `{tag}` ({when})\n"));
            }
        }
        out
    }
}

/// The branch from `git status --branch`'s header: `## main...origin/main [ahead 1]`, `## No commits yet on main`,
/// `## HEAD (no branch)`.
fn parse_branch(header: &str) -> Option<String> {
    let text = header.strip_prefix("## ")?;
    if text.starts_with("HEAD ") {
        return Some("detached".to_string());
    }
    let text = text.strip_prefix("No commits yet on ").unwrap_or(text);
    let name = text.split("...").next().unwrap_or("").trim();
    Some(if name.is_empty() { "detached" } else { name }.to_string())
}

/// Runs `git` with each argument list in `cwd`, all at once; each one's stdout if it exited successfully within
/// `timeout` (the commands still running then are killed).
fn run_git_commands<const N: usize>(
    cwd: &Path,
    commands: [&[&str]; N],
    timeout: Duration,
) -> [Option<String>; N] {
    let deadline = Instant::now() + timeout;
    let (done, finished) = mpsc::channel::<(usize, Vec<u8>)>();
    let mut children: Vec<Option<std::process::Child>> = commands
        .iter()
        .enumerate()
        .map(|(i, args)| {
            let mut child = Command::new("git")
                .args(*args)
                .current_dir(cwd)
                // Status must not take the index lock a user's own git command may need at the same moment.
                .env("GIT_OPTIONAL_LOCKS", "0")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .ok()?;
            let mut stdout = child.stdout.take()?;
            let done = done.clone();
            // A reader per command, so a long output never blocks its writer while another is waited for.
            std::thread::spawn(move || {
                let mut out = Vec::new();
                if stdout.read_to_end(&mut out).is_ok() {
                    let _ = done.send((i, out));
                }
            });
            Some(child)
        })
        .collect();
    drop(done);
    let mut outputs: [Option<Vec<u8>>; N] = std::array::from_fn(|_| None);
    let expected = children.iter().filter(|c| c.is_some()).count();
    for _ in 0..expected {
        let left = deadline.saturating_duration_since(Instant::now());
        match finished.recv_timeout(left) {
            Ok((i, out)) => outputs[i] = Some(out),
            Err(_) => break,
        }
    }
    std::array::from_fn(|i| {
        let mut child = children[i].take()?;
        let Some(out) = outputs[i].take() else {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        };
        // Its stdout is closed: it has exited or is about to.
        let status = child.wait().ok()?;
        status
            .success()
            .then(|| String::from_utf8_lossy(&out).into_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }

    #[test]
    fn reads_branch_changes_commits_and_tags() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path();
        git(repo, &["init", "-q", "-b", "feature/x"]);
        assert_eq!(
            ProjectState::read(repo).map(|s| (s.branch, s.commits.len())),
            Some(("feature/x".to_string(), 0)),
            "a repository without commits still has its branch"
        );
        for i in 1..=4 {
            std::fs::write(repo.join("f"), format!("{i}")).unwrap();
            git(repo, &["add", "f"]);
            git(repo, &["commit", "-q", "-m", &format!("commit {i}")]);
        }
        git(repo, &["tag", "v1.0"]);
        std::fs::write(repo.join("f"), "changed").unwrap();
        std::fs::write(repo.join("new"), "untracked").unwrap();
        let sub = repo.join("sub");
        std::fs::create_dir(&sub).unwrap();

        let state = ProjectState::read(&sub).expect("inside the repository");
        assert_eq!(state.branch, "feature/x");
        assert_eq!(state.uncommitted, 2);
        let subjects: Vec<&str> = state.commits.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(subjects, ["commit 4", "commit 3", "commit 2"]);
        assert!(state.commits.iter().all(|(h, _)| h.len() >= 7));
        assert_eq!(state.tags.len(), 1);
        assert_eq!(state.tags[0].0, "v1.0");
        assert!(state.tags[0].1.contains("ago"), "{:?}", state.tags);

        let section = state.prompt_section();
        assert!(section.starts_with(
            "\n\n## Project state (true at session start only)\n\n- Branch: `feature/x`\n"
        ));
        assert!(section.contains("- Status: 2 uncommitted changes\n- Recent commits:\n  - `"));
        assert!(section.contains(" — commit 4`\n"));
        assert!(section.contains("- Recent releases:\n  - `v1.0` ("));

        git(repo, &["checkout", "-q", "--detach"]);
        assert_eq!(ProjectState::read(repo).unwrap().branch, "detached");
    }

    #[test]
    fn outside_a_repository_there_is_none() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(ProjectState::read(tmp.path()), None);
    }

    #[test]
    fn branch_headers() {
        assert_eq!(
            parse_branch("## main...origin/main [ahead 1]").as_deref(),
            Some("main")
        );
        assert_eq!(
            parse_branch("## No commits yet on dev").as_deref(),
            Some("dev")
        );
        assert_eq!(
            parse_branch("## HEAD (no branch)").as_deref(),
            Some("detached")
        );
        assert_eq!(parse_branch("garbage"), None);
    }

    #[test]
    fn a_command_past_the_deadline_is_killed_and_left_out() {
        let tmp = tempfile::tempdir().unwrap();
        // `git -c alias.slow='!sleep 5' slow` stands for a git that hangs.
        let started = Instant::now();
        let [slow, fast] = run_git_commands(
            tmp.path(),
            [&["-c", "alias.slow=!sleep 5", "slow"], &["--version"]],
            Duration::from_millis(300),
        );
        assert_eq!(slow, None);
        assert!(fast.unwrap().starts_with("git version"));
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "the hung command was not waited for"
        );
    }
}
