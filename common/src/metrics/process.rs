//! This process's own figures, read from Linux's `/proc` at scrape time (elsewhere: none, and
//! the series stay absent).

use std::sync::OnceLock;

/// The kernel reports CPU times in USER_HZ ticks, which Linux fixes at 100 for user space on
/// every architecture we run on (Prometheus' own procfs library assumes the same).
const USER_HZ: f64 = 100.0;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProcessStats {
    pub resident_bytes: u64,
    pub virtual_bytes: u64,
    pub cpu_seconds: f64,
    pub open_fds: u64,
    pub max_fds: Option<u64>,
}

impl ProcessStats {
    /// None where there is no `/proc` (not Linux) or it cannot be read.
    pub fn read() -> Option<Self> {
        let stat = Stat::read()?;
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let resident_kib = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())?;
        let open_fds = std::fs::read_dir("/proc/self/fd").ok()?.count() as u64;
        Some(Self {
            resident_bytes: resident_kib * 1024,
            virtual_bytes: stat.vsize,
            cpu_seconds: (stat.utime + stat.stime) as f64 / USER_HZ,
            open_fds,
            max_fds: max_fds(),
        })
    }
}

/// When this process started, in Unix seconds (0 where `/proc` cannot say). Read once.
pub(super) fn start_time() -> f64 {
    static START: OnceLock<f64> = OnceLock::new();
    *START.get_or_init(|| {
        let boot = std::fs::read_to_string("/proc/stat").ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("btime "))
                .and_then(|v| v.trim().parse::<u64>().ok())
        });
        match (boot, Stat::read()) {
            (Some(boot), Some(stat)) => boot as f64 + stat.starttime as f64 / USER_HZ,
            _ => 0.0,
        }
    })
}

/// The fields of `/proc/self/stat` we use (proc(5)).
struct Stat {
    utime: u64,
    stime: u64,
    starttime: u64,
    vsize: u64,
}

impl Stat {
    fn read() -> Option<Self> {
        parse_stat(&std::fs::read_to_string("/proc/self/stat").ok()?)
    }
}

/// The command name (field 2) is in parentheses and may hold spaces: fields are counted from
/// its closing parenthesis, the last one on the line.
fn parse_stat(line: &str) -> Option<Stat> {
    let rest = &line[line.rfind(')')? + 1..];
    // `rest` starts at field 3 (state): field n is at index n - 3.
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some(Stat {
        utime: field(14)?,
        stime: field(15)?,
        starttime: field(22)?,
        vsize: field(23)?,
    })
}

/// The soft limit on open files, from `/proc/self/limits` (None when unlimited or unreadable).
fn max_fds() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_name_with_spaces_and_parentheses_does_not_shift_the_fields() {
        let line = "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 12345 987654 300";
        let stat = parse_stat(line).expect("parses");
        assert_eq!((stat.utime, stat.stime), (250, 50));
        assert_eq!(stat.starttime, 12345);
        assert_eq!(stat.vsize, 987654);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_has_memory_descriptors_and_a_start_time() {
        let p = ProcessStats::read().expect("linux has /proc");
        assert!(p.resident_bytes > 0);
        assert!(p.open_fds >= 3, "stdin, stdout, stderr at least");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_secs_f64();
        let started = start_time();
        assert!(started > 0.0 && started <= now + 1.0, "{started} vs {now}");
    }
}
