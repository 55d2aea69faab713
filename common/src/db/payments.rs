//! Payment states. A payment is `reserved` when its call is recorded, then ends in exactly one of
//! three outcomes of the settlement (issue 7): `settled` (or `unsettled` in development, where no
//! money moves), `refused`, or `unknown` until reconciliation proves one of the other two.

pub mod status {
    pub const RESERVED: &str = "reserved";
    pub const SETTLED: &str = "settled";
    /// Development only: verified locally, nothing moved.
    pub const UNSETTLED: &str = "unsettled";
    pub const REFUSED: &str = "refused";
    /// Nothing was processed, through no fault of the payer's (the facilitator refused our
    /// credentials): the reservation is handed back, and the same authorization may pay again.
    pub const RELEASED: &str = "released";
    /// The transfer may or may not have happened; the reconciliation sweep finds out.
    pub const UNKNOWN: &str = "unknown";

    /// States in which the call was paid for, so its work may run (and re-run for free).
    pub const PAID: [&str; 2] = [SETTLED, UNSETTLED];
}
