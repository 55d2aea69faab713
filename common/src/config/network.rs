//! The chain payments are taken on (`X402_NETWORK`): Base mainnet by default, or Base Sepolia to
//! try real payments with test money through a public facilitator before going live.
//!
//! Everything that names a network, a chain id, USDC's address or its EIP-712 domain (the 402s,
//! the catalog and guides, signature checks, the settler, the chain reader, the doctor) asks the
//! configured `Network`; no other module spells those values.

use super::{AppEnv, ConfigError, invalid};
use alloy_primitives::{Address, address};

/// A chain we take USDC payments on (x402 "exact" scheme, EIP-3009).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Network {
    /// Base mainnet: real money.
    #[default]
    Base,
    /// Base Sepolia: Circle's test USDC, free from faucets; for trying, not for selling.
    BaseSepolia,
}

impl Network {
    /// Every network, for documentation and tests.
    pub const ALL: [Network; 2] = [Network::Base, Network::BaseSepolia];

    /// The CAIP-2 id x402 v2 uses.
    pub const fn caip2(self) -> &'static str {
        match self {
            Self::Base => "eip155:8453",
            Self::BaseSepolia => "eip155:84532",
        }
    }

    /// The plain name x402 v1 uses; also the value of `X402_NETWORK`.
    pub const fn v1_name(self) -> &'static str {
        match self {
            Self::Base => "base",
            Self::BaseSepolia => "base-sepolia",
        }
    }

    /// The chain's name, as prose says it ("USDC on Base Sepolia").
    pub const fn display_name(self) -> &'static str {
        match self {
            Self::Base => "Base",
            Self::BaseSepolia => "Base Sepolia",
        }
    }

    /// The EIP-155 chain id: the EIP-712 domain's, and what `eth_chainId` must answer.
    pub const fn chain_id(self) -> u64 {
        match self {
            Self::Base => 8453,
            Self::BaseSepolia => 84532,
        }
    }

    /// Circle's USDC on this chain (the EIP-712 domain's verifying contract).
    pub const fn usdc(self) -> Address {
        match self {
            Self::Base => address!("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"),
            Self::BaseSepolia => address!("0x036CbD53842c5426634e7929541eC2318f3dCF7e"),
        }
    }

    /// `usdc()` in its EIP-55 checksummed spelling, as the 402s publish it.
    pub const fn usdc_address(self) -> &'static str {
        match self {
            Self::Base => "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
            Self::BaseSepolia => "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
        }
    }

    /// The `name` of USDC's EIP-712 domain: "USD Coin" on mainnet but "USDC" on Sepolia; a
    /// signature made under the other name recovers someone else.
    pub const fn usdc_domain_name(self) -> &'static str {
        match self {
            Self::Base => "USD Coin",
            Self::BaseSepolia => "USDC",
        }
    }

    /// The `version` of USDC's EIP-712 domain (FiatToken v2 on both).
    pub const fn usdc_domain_version(self) -> &'static str {
        "2"
    }

    pub const fn is_testnet(self) -> bool {
        matches!(self, Self::BaseSepolia)
    }

    /// Reads a network by its `X402_NETWORK` (v1) name or its CAIP-2 id.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|n| value == n.v1_name() || value == n.caip2())
    }
}

/// `X402_NETWORK` (default `base`), and `X402_ALLOW_TESTNET` for a production test deployment.
pub(super) fn read(
    var: &impl Fn(&str) -> Option<String>,
    app_env: AppEnv,
) -> Result<Network, ConfigError> {
    let network = match var("X402_NETWORK") {
        None => Network::default(),
        Some(value) => Network::parse(&value).ok_or_else(|| {
            invalid(
                "X402_NETWORK",
                format!("expected base or base-sepolia, got {value:?}"),
            )
        })?,
    };
    let allow_testnet = match var("X402_ALLOW_TESTNET").as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(invalid(
                "X402_ALLOW_TESTNET",
                format!("expected true or false, got {other:?}"),
            ));
        }
    };
    // A production deployment on test money sells real work for nothing: only on purpose.
    if app_env == AppEnv::Production && network.is_testnet() && !allow_testnet {
        return Err(ConfigError::UnsafeInProduction(
            "X402_NETWORK=base-sepolia (test money): set X402_NETWORK=base to take real payments, \
             or X402_ALLOW_TESTNET=true to take test payments on purpose",
        ));
    }
    Ok(network)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_networks_usdc_address_is_its_checksummed_spelling() {
        for n in Network::ALL {
            assert_eq!(n.usdc().to_checksum(None), n.usdc_address(), "{n:?}");
        }
    }

    #[test]
    fn networks_parse_by_either_name_and_nothing_else() {
        for n in Network::ALL {
            assert_eq!(Network::parse(n.v1_name()), Some(n));
            assert_eq!(Network::parse(n.caip2()), Some(n));
        }
        assert_eq!(Network::parse("Base"), None);
        assert_eq!(Network::parse("eip155:1"), None);
    }
}
