//! How to pay with the official x402 clients (npm `@x402/fetch`, PyPI `x402`), as code the
//! guides and the skill file both show next to the raw curl flow. Each client reads the 402,
//! signs the USDC authorization with the caller's key and retries with `PAYMENT-SIGNATURE`.

use grove_common::config::Network;

/// Install line and program for `@x402/fetch` (TypeScript, Node 18+).
pub fn typescript(network: Network, url: &str, body: &str) -> (&'static str, String) {
    let funds = super::usdc_on(network);
    (
        "npm install @x402/fetch @x402/evm viem",
        format!(
            r#"import {{ x402Client, wrapFetchWithPayment }} from "@x402/fetch";
import {{ ExactEvmScheme }} from "@x402/evm/exact/client";
import {{ privateKeyToAccount }} from "viem/accounts";

// The key's account pays: it needs {funds}.
const signer = privateKeyToAccount(process.env.EVM_PRIVATE_KEY);
const client = new x402Client();
client.register("eip155:*", new ExactEvmScheme(signer));
const fetchWithPayment = wrapFetchWithPayment(fetch, client);

// Gets the 402, signs exactly the amount asked, retries with PAYMENT-SIGNATURE.
const res = await fetchWithPayment("{url}", {{
  method: "POST",
  headers: {{
    "content-type": "application/json",
    "Idempotency-Key": "my-unique-key-1",
  }},
  body: JSON.stringify({body}),
}});
console.log(res.status, await res.json());"#
        ),
    )
}

/// Install line and program for the `x402` package (Python 3.10+, httpx).
pub fn python(network: Network, url: &str, body: &str) -> (&'static str, String) {
    let funds = super::usdc_on(network);
    (
        r#"pip install "x402[httpx,evm]" eth-account"#,
        format!(
            r#"import asyncio, json, os
from eth_account import Account
from x402 import x402Client
from x402.http.clients import x402HttpxClient
from x402.mechanisms.evm import EthAccountSigner
from x402.mechanisms.evm.exact.register import register_exact_evm_client

BODY = json.loads(r'''{body}''')

async def main():
    # The key's account pays: it needs {funds}.
    account = Account.from_key(os.environ["EVM_PRIVATE_KEY"])
    client = x402Client()
    register_exact_evm_client(client, EthAccountSigner(account))
    async with x402HttpxClient(client) as http:
        # Gets the 402, signs exactly the amount asked, retries with PAYMENT-SIGNATURE.
        res = await http.post(
            "{url}",
            json=BODY,
            headers={{"Idempotency-Key": "my-unique-key-1"}},
        )
        print(res.status_code, res.json())

asyncio.run(main())"#
        ),
    )
}

/// Install line and program for calling a paid tool over MCP (Python 3.10+): PyPI `mcp` lists
/// and calls the tools; the `x402` package signs the requirements an unpaid call returns, and the
/// identical call is repeated with the payment in `_meta["x402/payment"]` (x402 MCP transport).
pub fn mcp_python(
    network: Network,
    mcp_url: &str,
    tool: &str,
    arguments: &str,
) -> (&'static str, String) {
    let funds = super::usdc_on(network);
    (
        r#"pip install mcp "x402[evm]" eth-account"#,
        format!(
            r#"import asyncio, json, os
from eth_account import Account
from mcp import Client
from x402 import PaymentRequired, x402Client
from x402.mechanisms.evm.exact import register_exact_evm_client
from x402.mechanisms.evm.signers import EthAccountSigner

ARGS = json.loads(r'''{arguments}''')

async def main():
    # The key's account pays: it needs {funds}.
    signer = x402Client()
    register_exact_evm_client(signer, EthAccountSigner(Account.from_key(os.environ["EVM_PRIVATE_KEY"])))
    async with Client("{mcp_url}") as grove:
        result = await grove.call_tool("{tool}", ARGS)
        price = result.structured_content or {{}}
        if result.is_error and "accepts" in price:
            # The price: sign it, then repeat the identical call with the payment.
            payment = await signer.create_payment_payload(PaymentRequired.model_validate(price))
            meta = {{"x402/payment": payment.model_dump(by_alias=True, exclude_none=True)}}
            result = await grove.call_tool("{tool}", ARGS, meta=meta)
        # Paid: the envelope, and the settlement in result.meta["x402/payment-response"].
        # An error without "accepts" is a refusal or a receipt to follow, never a price.
        print(result.is_error, json.dumps(result.structured_content), result.meta)

asyncio.run(main())"#
        ),
    )
}
