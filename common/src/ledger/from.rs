//! Where each move of a call may start from: the guard of its write, in its UPDATE's WHERE.
//! Each list is a subset of `CallStatus::may_become`'s sources (checked in `call`'s tests).

use super::status::CallStatus::{self, *};
/// A queued job starts its run (a `running` call only once its time lease lapsed).
pub const START: [CallStatus; 2] = [Pending, Running];
/// A run of a process known dead is taken over.
pub const TAKE_OVER: [CallStatus; 1] = [Running];
/// The embedded api starts the run with the settlement that pays for it.
pub const START_SETTLED: [CallStatus; 1] = [Settling];
/// A settlement proven: the work may run.
pub const SETTLED: [CallStatus; 1] = [Settling];
/// A settlement refused, or proven never to happen.
pub const UNPAID: [CallStatus; 1] = [Settling];
/// The result is stored (by the run holding the lease: only from `running`).
pub const COMPLETE: [CallStatus; 3] = [Pending, Running, Failed];
/// No move: a completion repeated by something that holds no lease (a re-run that raced the
/// first to the finish) is answered with the first result, which stands.
pub const COMPLETE_AGAIN: [CallStatus; 1] = [Completed];
/// Where an unleased completion may write.
pub const COMPLETE_UNLEASED: [CallStatus; 4] = [Pending, Running, Failed, Completed];
/// The work failed after settlement (by the run holding the lease: only from `running`).
pub const FAIL: [CallStatus; 2] = [Pending, Running];
/// A failed paid call is run again for free (only while its payment is settled).
pub const REOPEN: [CallStatus; 1] = [Failed];
