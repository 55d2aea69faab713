//! Prices as atomic USDC units (6 decimals), so that no float ever touches money.

use std::fmt;

/// An amount of USDC in atomic units: `180_000` is $0.18.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UsdcAmount(u64);

impl UsdcAmount {
    /// USDC has six decimals on every chain we accept.
    pub const DECIMALS: u32 = 6;
    const UNIT: u64 = 10u64.pow(Self::DECIMALS);

    pub const fn from_atomic(atomic: u64) -> Self {
        Self(atomic)
    }

    pub const fn atomic(self) -> u64 {
        self.0
    }

    /// The decimal-string form x402 puts on the wire (`"180000"`).
    pub fn atomic_string(self) -> String {
        self.0.to_string()
    }

    /// Dollars without the sign, as OpenAPI pricing wants it (`"0.18"`).
    pub fn decimal_usd(self) -> String {
        let cents = self.0 / (Self::UNIT / 100);
        let rest = self.0 % (Self::UNIT / 100);
        if rest == 0 {
            format!("{}.{:02}", cents / 100, cents % 100)
        } else {
            let whole = self.0 / Self::UNIT;
            let frac = format!("{:06}", self.0 % Self::UNIT);
            format!("{whole}.{}", frac.trim_end_matches('0'))
        }
    }
}

/// The catalog's price label: `$0.18`.
impl fmt::Display for UsdcAmount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "${}", self.decimal_usd())
    }
}

#[cfg(test)]
mod tests {
    use super::UsdcAmount;

    #[test]
    fn prices_render_as_the_spec_writes_them() {
        assert_eq!(UsdcAmount::from_atomic(180_000).to_string(), "$0.18");
        assert_eq!(UsdcAmount::from_atomic(450_000).atomic_string(), "450000");
        assert_eq!(UsdcAmount::from_atomic(120_000).decimal_usd(), "0.12");
        assert_eq!(UsdcAmount::from_atomic(2_000_000).to_string(), "$2.00");
        assert_eq!(UsdcAmount::from_atomic(1_234_500).decimal_usd(), "1.2345");
    }
}
