//! A Redis connection that sends the workers' wake-up in the same round trip as the push it
//! carries. apalis-redis pushes with one script (`batch_push.lua`) and the workers sleep until
//! our publish on the queue's wake channel (its script puts every job in the scheduled set, so
//! its own `available` event never fires). Sent one after the other, the push and the publish
//! were two round trips per job; pipelined on one connection they are one, and Redis runs them
//! in order, so a worker woken by the publish finds the job already pushed.

use redis::{
    Cmd, Pipeline, RedisFuture, Value,
    aio::{ConnectionLike, ConnectionManager},
};

/// Every command sent through it is followed, in the same write, by `PUBLISH <wake> 1`; its
/// answer is the command's own. The storage that pushes jobs to run now is the only user: what
/// it sends is the push script (and, when Redis has lost its scripts, `SCRIPT LOAD` before the
/// same push again), so a wake-up goes out with every attempt to push, and the last one after
/// the job is queued. (After a lost script the failed attempt's wake-up comes first: a worker
/// then fetches nothing and is woken again by the retry's.)
#[derive(Clone)]
pub struct Waking {
    conn: ConnectionManager,
    wake: Cmd,
}

impl Waking {
    pub fn new(conn: ConnectionManager, channel: &str) -> Self {
        let mut wake = redis::cmd("PUBLISH");
        wake.arg(channel).arg("1");
        Self { conn, wake }
    }
}

impl ConnectionLike for Waking {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let mut pipe = Pipeline::with_capacity(2);
            pipe.add_command(cmd.clone()).add_command(self.wake.clone());
            let answers = self.conn.req_packed_commands(&pipe, 0, 2).await?;
            // A server error (`NOSCRIPT`, say) is the command's answer as a value: the caller
            // turns it into its error, as it would have without the publish behind it. An
            // error of the connection is the `?` above: the push's outcome is then unknown,
            // as for any push whose answer was lost.
            answers.into_iter().next().ok_or_else(|| {
                redis::RedisError::from((
                    redis::ErrorKind::Io,
                    "the pipelined push was not answered",
                ))
            })
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        self.conn.req_packed_commands(pipeline, offset, count)
    }

    fn get_db(&self) -> i64 {
        self.conn.get_db()
    }
}
