// SPDX-License-Identifier: UNLICENSED
pragma solidity 0.8.30;

/// The one function of Multicall3 that Grove uses, `aggregate3`, with Multicall3's ABI and
/// semantics: the calls run in order in one transaction, each may be allowed to fail, and any
/// other failure reverts them all with "Multicall3: call failed". Multicall3 is deployed at
/// 0xcA11bde05977b3631167028862bE2a173976CA11 on Base (and most EVM chains); a local chain has
/// nothing there, so the tests place this stand-in at that address with `anvil_setCode`, as
/// they place the test token at USDC's.
contract Multicall3 {
    struct Call3 {
        address target;
        bool allowFailure;
        bytes callData;
    }

    struct Result {
        bool success;
        bytes returnData;
    }

    function aggregate3(Call3[] calldata calls) external payable returns (Result[] memory returnData) {
        returnData = new Result[](calls.length);
        for (uint256 i = 0; i < calls.length; i++) {
            (bool success, bytes memory data) = calls[i].target.call(calls[i].callData);
            require(success || calls[i].allowFailure, "Multicall3: call failed");
            returnData[i] = Result(success, data);
        }
    }
}
