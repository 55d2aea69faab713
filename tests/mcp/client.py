"""An off-the-shelf MCP client (PyPI `mcp`) and x402 signer (PyPI `x402`) driven by
tests/tests/mcp.rs and mcp_paid.rs: it runs the steps it is given against Grove's /mcp and prints
what it saw as one JSON object. The Rust tests make every assertion; this script only acts and
reports.

    client.py <mcp url> '<plan json>'

The plan: {"mode": "auto" | "legacy", "steps": [step, ...]}. Steps:
  {"op": "discover"}: server info, tools, resources, templates, and the skill resource's text.
  {"op": "read", "uri": ...}: one resource.
  {"op": "call", "tool": ..., "arguments": {...}, "payment": P}, where P is
    "none": no payment;
    "sign": a new authorization signed by the x402 library for the requirements of the latest
            result that carried them (x402Version and accepts);
    "reuse:<i>": the payment step i sent, again;
    "forge_from": a new signed authorization whose `from` then names another address;
    "forge_signature": a new signed authorization with one byte of its signature changed.
The payer is a fresh key (`payer` in the report). `scripts/mcp-client` installs the pinned
packages; nothing here touches the network beyond the URL given.
"""

import asyncio
import copy
import json
import sys

from eth_account import Account
from mcp import Client
from x402 import PaymentRequired, x402Client
from x402.mechanisms.evm.exact import register_exact_evm_client
from x402.mechanisms.evm.signers import EthAccountSigner


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


class Runner:
    def __init__(self, client):
        self.client = client
        self.payer = Account.create()
        self.signer = x402Client()
        register_exact_evm_client(self.signer, EthAccountSigner(self.payer))
        self.required = None
        self.sent = []  # the payment of each step (None for steps that sent none)

    async def sign(self):
        if self.required is None:
            raise RuntimeError("no payment requirements seen yet")
        payload = await self.signer.create_payment_payload(
            PaymentRequired.model_validate(self.required)
        )
        return payload.model_dump(by_alias=True, exclude_none=True)

    async def payment(self, how):
        if how == "none":
            return None
        if how.startswith("reuse:"):
            return copy.deepcopy(self.sent[int(how.split(":", 1)[1])])
        payment = await self.sign()
        authorization = payment["payload"]["authorization"]
        if how == "forge_from":
            authorization["from"] = Account.create().address
        elif how == "forge_signature":
            signature = bytearray.fromhex(payment["payload"]["signature"][2:])
            signature[5] ^= 0x01
            payment["payload"]["signature"] = "0x" + signature.hex()
        elif how != "sign":
            raise ValueError(f"unknown payment {how!r}")
        return payment

    async def call(self, step):
        payment = await self.payment(step.get("payment", "none"))
        self.sent[-1] = copy.deepcopy(payment)
        meta = None if payment is None else {"x402/payment": payment}
        result = await self.client.call_tool(step["tool"], step.get("arguments", {}), meta=meta)
        structured = result.structured_content
        if result.is_error and isinstance(structured, dict) and "accepts" in structured:
            self.required = structured
        text = [c.text for c in result.content if getattr(c, "type", None) == "text"]
        return {
            "is_error": bool(result.is_error),
            "structured": structured,
            "text": text,
            "meta": result.meta or {},
            "sent_payment": payment,
        }

    async def discover(self):
        c = self.client
        tools = await c.list_tools()
        resources = await c.list_resources()
        templates = await c.list_resource_templates()
        info = c.server_info
        return {
            "protocol_version": c.protocol_version,
            "server_name": info.name if info else None,
            "instructions": c.instructions,
            "tools": [dump(t) for t in tools.tools],
            "resources": [dump(r) for r in resources.resources],
            "templates": [dump(t) for t in templates.resource_templates],
        }

    async def read(self, step):
        result = await self.client.read_resource(step["uri"])
        return {"contents": [dump(c) for c in result.contents]}

    async def run(self, steps):
        out = []
        for step in steps:
            op = step["op"]
            self.sent.append(None)
            if op == "discover":
                out.append(await self.discover())
            elif op == "read":
                out.append(await self.read(step))
            elif op == "call":
                out.append(await self.call(step))
            else:
                raise ValueError(f"unknown op {op!r}")
        return out


async def main(url, plan):
    async with Client(url, mode=plan.get("mode", "auto")) as client:
        runner = Runner(client)
        results = await runner.run(plan["steps"])
        print(
            json.dumps(
                {
                    "protocol_version": client.protocol_version,
                    "payer": runner.payer.address,
                    "results": results,
                }
            )
        )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], json.loads(sys.argv[2])))
