//! The api's half of `api check`: the database, Redis, who settles payments (the facilitator's
//! `/supported` and our credentials, or our own settler's gas) and the chain `BASE_RPC_URL` reads.
//! The model and Twilio are probed by the worker's half, in whichever process runs the jobs.

use crate::x402::{
    cdp::CdpSigner,
    chain::{ChainReader, rpc_fix},
    facilitator::{FacilitatorTransport, HttpFacilitator},
};
use alloy_primitives::{Address, U256};
use alloy_signer_local::PrivateKeySigner;
use grove_common::clock::Clock as _;
use grove_common::{
    config::{AppEnv, Config, Network, SettlementMode},
    doctor::{self, Check, bounded},
};

/// Every probe the api's own work depends on, in the order an operator would fix them.
pub async fn checks(config: &Config) -> Vec<Check> {
    let mut checks = vec![
        grove_migrations::check::database(config).await,
        doctor::redis(config.redis_url.as_ref()).await,
        pay_to(config),
    ];
    checks.extend(settlement(config).await);
    checks.push(chain(config).await);
    checks
}

fn pay_to(config: &Config) -> Check {
    const NAME: &str = "pay-to";
    match (config.pay_to, config.app_env) {
        (Some(address), _) => Check::pass(
            NAME,
            format!("payments go to {}", address.to_checksum(None)),
        ),
        (None, AppEnv::Production) => Check::fail(
            NAME,
            "X402_PAY_TO is not set: nothing can be sold",
            "set X402_PAY_TO to the address that receives USDC",
        ),
        (None, AppEnv::Development) => Check::skip(
            NAME,
            "X402_PAY_TO unset: paid endpoints answer 503 payments_disabled",
        ),
    }
}

/// Who moves the money: the facilitator (its network and our credentials), our own settler (its
/// gas), or nobody (development).
async fn settlement(config: &Config) -> Vec<Check> {
    if config.settlement.mode == SettlementMode::SelfHosted {
        return vec![settler(config).await];
    }
    let Some(url) = &config.facilitator_url else {
        return vec![Check::skip(
            "facilitator",
            "DEVELOPMENT: no X402_FACILITATOR_URL, payments are verified locally and no money moves",
        )];
    };
    let built = match &config.cdp {
        Some(cdp) => HttpFacilitator::with_cdp(
            url,
            CdpSigner::new(cdp.clone()),
            FacilitatorTransport::of(config),
        ),
        None => HttpFacilitator::new(
            url,
            config.facilitator_auth.clone(),
            FacilitatorTransport::of(config),
        ),
    };
    let facilitator = match built {
        Ok(f) => f,
        Err(e) => {
            return vec![Check::fail(
                "facilitator",
                e.to_string(),
                "correct X402_FACILITATOR_URL",
            )];
        }
    };
    vec![
        supported(&facilitator, config.network).await,
        credentials(&facilitator).await,
    ]
}

async fn supported(facilitator: &HttpFacilitator, network: Network) -> Check {
    const NAME: &str = "facilitator";
    let fix = "check X402_FACILITATOR_URL (the facilitator's base URL, without /settle)";
    bounded(NAME, fix, async {
        let kinds = match facilitator.supported().await {
            Ok(kinds) => kinds,
            Err(e) => return Check::fail(NAME, format!("GET /supported failed: {e}"), fix),
        };
        let ours = kinds.iter().any(|k| {
            k.scheme == "exact" && (k.network == network.caip2() || k.network == network.v1_name())
        });
        let caip2 = network.caip2();
        if ours {
            Check::pass(NAME, format!("lists exact on {caip2}"))
        } else {
            let listed: Vec<String> = kinds
                .iter()
                .map(|k| format!("{} on {}", k.scheme, k.network))
                .collect();
            Check::fail(
                NAME,
                format!(
                    "does not settle exact on {caip2} (lists: {})",
                    listed.join(", ")
                ),
                match network {
                    Network::Base => {
                        "use a facilitator for Base mainnet (e.g. CDP's) — x402.org's serves testnets only"
                    }
                    Network::BaseSepolia => {
                        "use a facilitator for Base Sepolia (e.g. https://x402.org/facilitator), or set X402_NETWORK=base"
                    }
                },
            )
        }
    })
    .await
}

async fn credentials(facilitator: &HttpFacilitator) -> Check {
    const NAME: &str = "facilitator credentials";
    let kind = facilitator.credentials_kind();
    let fix = format!("check {kind}");
    bounded(NAME, &fix, async {
        match facilitator.credentials_accepted().await {
            Ok(None) => Check::skip(
                NAME,
                "none configured; the facilitator must accept unauthenticated settles",
            ),
            Ok(Some(true)) => Check::pass(NAME, format!("{kind} accepted")),
            Ok(Some(false)) => Check::fail(NAME, format!("{kind} refused (401/403)"), fix.clone()),
            Err(e) => Check::fail(NAME, format!("POST /verify failed: {e}"), fix.clone()),
        }
    })
    .await
}

/// Our own settler: the key parses and its address holds ETH for gas.
async fn settler(config: &Config) -> Check {
    const NAME: &str = "settler";
    let s = &config.settlement;
    let (Some(rpc), Some(key)) = (&s.base_rpc_url, &s.settler_private_key) else {
        // Configuration refuses self-settlement without both; kept total for safety.
        return Check::fail(
            NAME,
            "X402_SETTLEMENT=self needs BASE_RPC_URL and SETTLER_PRIVATE_KEY",
            "set both",
        );
    };
    let Ok(signer) = key.expose().parse::<PrivateKeySigner>() else {
        return Check::fail(
            NAME,
            "SETTLER_PRIVATE_KEY is not a secp256k1 key",
            "set a 32-byte hex key",
        );
    };
    let address: Address = signer.address();
    let fix = format!(
        "send ETH on {} to {address} for gas",
        config.network.display_name()
    );
    bounded(NAME, &fix, async {
        let reader = match ChainReader::new(rpc, config.network) {
            Ok(r) => r,
            Err(e) => return Check::fail(NAME, e.to_string(), "correct BASE_RPC_URL"),
        };
        match reader.balance(address).await {
            Ok(wei) if wei > U256::ZERO => {
                Check::pass(NAME, format!("{address} holds {wei} wei for gas"))
            }
            Ok(_) => Check::fail(
                NAME,
                format!("{address} holds no ETH: every settlement would fail"),
                fix.clone(),
            ),
            Err(e) => Check::fail(
                NAME,
                format!("cannot read its balance: {e}"),
                "check BASE_RPC_URL",
            ),
        }
    })
    .await
}

/// The chain `BASE_RPC_URL` serves: the configured network (Base, 8453; or Base Sepolia, 84532),
/// its USDC deployed, a fresh head.
async fn chain(config: &Config) -> Check {
    const NAME: &str = "rpc";
    let Some(rpc) = &config.settlement.base_rpc_url else {
        return Check::skip(
            NAME,
            "BASE_RPC_URL unset: an unknown settlement outcome can only be re-posted, not read on chain",
        );
    };
    let network = config.network;
    let fix = rpc_fix(network).replacen("it", "BASE_RPC_URL", 1);
    let fix = fix.as_str();
    let (name, chain_id) = (network.display_name(), network.chain_id());
    bounded(NAME, fix, async {
        let reader = match ChainReader::new(rpc, network) {
            Ok(r) => r,
            Err(e) => return Check::fail(NAME, e.to_string(), fix),
        };
        let facts = match reader.facts().await {
            Ok(f) => f,
            Err(e) => return Check::fail(NAME, format!("the endpoint did not answer: {e}"), fix),
        };
        if let Some(problem) = facts.not_on(network) {
            return Check::fail(NAME, problem, fix);
        }
        let now = grove_common::clock::SystemClock.wall_unix();
        let age = now.saturating_sub(facts.head_timestamp);
        // The bound past which reconciliation decides nothing from this endpoint.
        if age > config.settlement.max_head_age.as_secs() {
            return Check::fail(
                NAME,
                format!(
                    "its head (block {}) is {age} s old: the endpoint lags",
                    facts.head_number
                ),
                "use an RPC endpoint that follows the chain head",
            );
        }
        Check::pass(
            NAME,
            format!(
                "{name} ({chain_id}), USDC deployed, head block {} ({age} s old)",
                facts.head_number
            ),
        )
    })
    .await
}
