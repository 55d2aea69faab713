//! CPU time read from `/proc`: of one process, and of this process, PostgreSQL's and Redis's
//! together, so a benchmark can say what each of its calls cost on every side of the loopback.

/// User + system CPU time of `pid` so far, in microseconds; with `children`, also that of its
/// children that have exited (a PostgreSQL server's ended backends).
pub fn cpu_us(pid: u32, children: bool) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = stat.rsplit(')').next().unwrap_or_default();
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // utime, stime, cutime, cstime are fields 14 to 17 of the line, 12 to 15 after the name.
    let field = |i: usize| f.get(i).copied().unwrap_or(0);
    let ticks = field(11) + field(12) + if children { field(13) + field(14) } else { 0 };
    ticks * 1_000_000 / 100 // USER_HZ is 100 on Linux.
}

/// Which PostgreSQL and Redis processes a reading counts. The servers are shared with whatever
/// else runs on the machine (other test databases above all), so a benchmark that knows its
/// own database counts only that database's backends (`count_only`).
#[derive(Clone, Debug, Default)]
pub enum Servers {
    /// Every PostgreSQL and Redis process on the machine.
    #[default]
    All,
    /// The backends of this PostgreSQL database, the server's own processes (WAL writer,
    /// checkpointer and the like, which do its commits' work too) without the ended backends
    /// of other databases, and Redis.
    Database(String),
    /// Neither server (a run that uses neither: their CPU is someone else's).
    None,
}

static COUNTED: std::sync::Mutex<Servers> = std::sync::Mutex::new(Servers::All);

/// What later readings (`Usage::now`) count of the servers.
pub fn count_only(servers: Servers) {
    *COUNTED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = servers;
}

/// Whether PostgreSQL process `pid` is counted, and with its ended children.
fn postgres_counted(pid: u32, database: &str) -> Option<bool> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    // The postmaster (`…/postgres -D …`): its children's time is every ended backend's.
    let Some(title) = cmdline.strip_prefix("postgres: ") else {
        return Some(false);
    };
    // A backend's title: `15/main: <user> <database> <host>(<port>) <state>`.
    let words: Vec<&str> = title.split_whitespace().collect();
    let backend = words
        .get(3)
        .is_some_and(|w| w.ends_with(')') || *w == "[local]");
    match backend {
        true if words.get(2) == Some(&database) => Some(true),
        true => None,
        false => Some(true),
    }
}

/// CPU time so far, in microseconds, of this process and of the PostgreSQL and Redis server
/// processes on the machine that `count_only` names (all of them unless told).
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    pub ours: u64,
    pub postgres: u64,
    pub redis: u64,
}

impl Usage {
    pub fn now() -> Self {
        let servers = COUNTED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let mut usage = Usage {
            ours: cpu_us(std::process::id(), false),
            ..Default::default()
        };
        if matches!(servers, Servers::None) {
            return usage;
        }
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return usage;
        };
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            // A backend that ends during the run moves its time from its own line to its
            // parent's children: counting both keeps the sum whole.
            match comm.trim() {
                "postgres" => match &servers {
                    Servers::Database(db) => {
                        if let Some(children) = postgres_counted(pid, db) {
                            usage.postgres += cpu_us(pid, children);
                        }
                    }
                    _ => usage.postgres += cpu_us(pid, true),
                },
                "redis-server" => usage.redis += cpu_us(pid, true),
                _ => {}
            }
        }
        usage
    }

    /// This process's, PostgreSQL's and Redis's together.
    pub fn total(self) -> u64 {
        self.ours + self.postgres + self.redis
    }

    /// What was spent since `before`.
    pub fn since(self, before: Usage) -> Usage {
        Usage {
            ours: self.ours.saturating_sub(before.ours),
            postgres: self.postgres.saturating_sub(before.postgres),
            redis: self.redis.saturating_sub(before.redis),
        }
    }
}
