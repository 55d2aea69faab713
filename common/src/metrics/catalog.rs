//! Every series Grove exports, named once with its type and help. Renaming one breaks
//! dashboards and the alert rules (`deploy/alerts.yaml`): say so in `docs/operations.md`.

/// A series' Prometheus type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// One series: its name, type, labels and help.
#[derive(Clone, Copy, Debug)]
pub struct Series {
    pub name: &'static str,
    pub kind: Kind,
    pub labels: &'static [&'static str],
    pub help: &'static str,
}

macro_rules! series {
    ($($(#[$doc:meta])* $const:ident = $name:literal, $kind:ident, [$($label:literal),*], $help:literal;)*) => {
        $($(#[$doc])* pub const $const: &str = $name;)*
        /// Every series, in the order `docs/operations.md` lists them.
        pub const ALL: &[Series] = &[$(Series {
            name: $name,
            kind: Kind::$kind,
            labels: &[$($label),*],
            help: $help,
        }),*];
    };
}

series! {
    HTTP_REQUESTS = "grove_http_requests_total", Counter, ["method", "route", "status"],
        "HTTP requests answered, by method, route template and status.";
    HTTP_REQUEST_DURATION = "grove_http_request_duration_seconds", Histogram, ["method", "route"],
        "Time to answer an HTTP request (to its response head), by method and route template.";
    CALLS = "grove_calls_total", Counter, ["mode", "outcome"],
        "Paid calls by mode (review_request for actions) and outcome.";
    SETTLEMENTS = "grove_settlements_total", Counter, ["result"],
        "Settlement results: settled, unsettled (development), refused, not_processed, unknown, reconciled_settled, reconciled_unsettled.";
    PAYMENT_REFUSALS = "grove_payment_refusals_total", Counter, ["reason"],
        "Payments refused before settlement, by reason.";
    PAYMENTS_UNKNOWN = "grove_payments_unknown", Gauge, [],
        "Payments whose settlement outcome is not known yet (being reconciled).";
    PAYMENTS_SET_ASIDE = "grove_payments_set_aside", Gauge, [],
        "Payments whose outcome stayed unknown and that reconciliation gave up on: an operator must resolve them.";
    RATE_LIMITED = "grove_rate_limited_total", Counter, ["limit"],
        "Requests refused by a rate limit (ip, payer or bad_payments).";
    OVER_CAPACITY = "grove_over_capacity_total", Counter, [],
        "Unpaid requests answered 503 over_capacity instead of a price: the coaching calls ahead would not finish within the deadline, or paid calls' writes are queued for the database.";
    GATE_REFUSALS = "grove_gate_refusals_total", Counter, ["provider"],
        "Requests answered 503 instead of a price because their provider's health gate was open.";
    GATE_OPEN = "grove_provider_gate_open", Gauge, ["provider"],
        "1 while a provider's health gate is open (or half-open): its paid work is not priced.";
    JOB_LATENCY = "grove_job_latency_seconds", Histogram, [],
        "Time from enqueue to the job's outcome, as the api awaiting it sees it.";
    MODEL_CALLS = "grove_model_calls_total", Counter, ["provider", "outcome"],
        "Model calls (each with its retries) by provider and outcome (ok, or the error's kind).";
    MODEL_CALL_DURATION = "grove_model_call_duration_seconds", Histogram, ["provider"],
        "Time of one model call, retries included.";
    MODEL_TOKENS = "grove_model_tokens_total", Counter, ["provider", "direction"],
        "Tokens the model provider billed, input and output, failed attempts included.";
    MODEL_ERRORS = "grove_model_errors_total", Counter, ["provider", "error"],
        "Model calls that produced no usable answer, by provider and error kind.";
    SMS_SENDS = "grove_sms_sends_total", Counter, ["provider", "outcome"],
        "SMS send attempts by provider and outcome: sent, failed, or unknown (the answer was lost).";
    SMS_SEND_ERRORS = "grove_sms_send_errors_total", Counter, ["provider", "code"],
        "SMS sends the provider refused or failed, by its error code (none when it gave none).";
    SMS_STATUS = "grove_sms_status_callbacks_total", Counter, ["status", "error_code"],
        "Delivery reports received from Twilio, by message status and error code.";
    QUEUE_READY = "grove_queue_ready_jobs", Gauge, ["queue"],
        "Jobs that could run now and wait for a worker, by queue.";
    QUEUE_SCHEDULED = "grove_queue_scheduled_jobs", Gauge, ["queue"],
        "Delayed jobs not due yet, by queue.";
    QUEUE_HELD = "grove_queue_held_jobs", Gauge, ["queue"],
        "Jobs workers took and have not finished (in flight), by queue.";
    QUEUE_BACKLOG = "grove_queue_backlog", Gauge, ["queue"],
        "Ready plus held jobs, by queue: what the worker autoscaler divides by one worker's concurrency.";
    QUEUE_CONSUMERS = "grove_queue_consumers", Gauge, ["queue"],
        "Worker consumers with a recent heartbeat, by queue.";
    ADMISSION_CAPACITY = "grove_admission_capacity", Gauge, [],
        "Coaching jobs the workers run at once, as admission sees them.";
    ADMISSION_AHEAD = "grove_admission_ahead", Gauge, [],
        "Coaching calls ahead of a new one: held by the workers, queued, being settled, or quoted a price moments ago.";
    ADMISSION_COMPLETIONS = "grove_admission_completions_per_second", Gauge, [],
        "Coaching runs finished per second over the last minute.";
    ADMISSION_SERVICE = "grove_admission_service_seconds", Gauge, [],
        "Mean time of one coaching run, to its outcome stored, over the last minute (absent before one finished).";
    ADMISSION_WRITE_WAIT = "grove_admission_write_wait_seconds", Gauge, [],
        "How long the oldest paid call's write (claim or settled outcome) has waited for a database batch; past a tenth of CALL_DEADLINE_S new calls get 503 over_capacity.";
    PUSH_RETRIES = "grove_push_retries", Gauge, [],
        "Settled calls whose failed push is being retried.";
    SWEEPS = "grove_review_sweeps_total", Counter, [],
        "Completed passes of the review sweeper.";
    SWEEP_ACTIONS = "grove_review_sweep_actions_total", Counter, [],
        "Due review jobs the sweeper pushed or requests it moved.";
    SWEEP_LAST_SUCCESS = "grove_review_sweep_last_success_timestamp_seconds", Gauge, [],
        "When the last completed sweep pass started (Unix seconds).";
    WORKER_CONSUMER_UP = "grove_worker_consumer_up", Gauge, ["consumer"],
        "1 while a worker's queue consumer is taking jobs (worker /metrics).";
    WORKER_CONSUMER_RESTARTS = "grove_worker_consumer_restarts_total", Counter, ["consumer"],
        "Consumers rebuilt after a queue error (worker /metrics).";
    WORKER_JOBS_RUNNING = "grove_worker_jobs_running", Gauge, [],
        "Jobs running in this worker process (worker /metrics).";
    PROCESS_RSS = "process_resident_memory_bytes", Gauge, [],
        "Resident memory of this process.";
    PROCESS_VIRTUAL = "process_virtual_memory_bytes", Gauge, [],
        "Virtual memory of this process.";
    PROCESS_CPU = "process_cpu_seconds_total", Gauge, [],
        "CPU time this process used, user and system (a gauge that only grows: rate() applies).";
    PROCESS_OPEN_FDS = "process_open_fds", Gauge, [],
        "Open file descriptors.";
    PROCESS_MAX_FDS = "process_max_fds", Gauge, [],
        "The open file descriptor limit.";
    PROCESS_START_TIME = "process_start_time_seconds", Gauge, [],
        "When this process started (Unix seconds).";
}
