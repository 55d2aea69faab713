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

/// CPU time so far, in microseconds, of this process and of every PostgreSQL and Redis server
/// process on the machine (the benchmarks' servers are the machine's).
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    pub ours: u64,
    pub postgres: u64,
    pub redis: u64,
}

impl Usage {
    pub fn now() -> Self {
        let mut usage = Usage {
            ours: cpu_us(std::process::id(), false),
            ..Default::default()
        };
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
                "postgres" => usage.postgres += cpu_us(pid, true),
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
