// SPDX-License-Identifier: UNLICENSED
pragma solidity 0.8.30;

/// A minimal smart-wallet payer for the settlement tests: a contract account with one owner key
/// that signs for it through ERC-1271, as the smart wallets of agent kits do. It answers
/// `isValidSignature(hash, signature)` with the magic value when the owner signed `hash` with
/// ECDSA, in either of two encodings:
/// - 65 bytes, r ‖ s ‖ v: the owner's signature as it is (it recovers the owner, never the
///   wallet, so a verifier that only recovers keys refuses it);
/// - `abi.encode(address signer, bytes signature)`: the owner's signature naming its signer, as
///   multi-owner wallets wrap theirs (longer than 65 bytes).
/// Test-only: it holds no assets of its own beyond test USDC and executes nothing.
contract OwnedWallet {
    bytes4 private constant MAGIC_VALUE = 0x1626ba7e;
    uint256 private constant HALF_ORDER = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    address public immutable owner;

    constructor(address owner_) {
        owner = owner_;
    }

    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        bytes memory ecdsa;
        if (signature.length == 65) {
            ecdsa = signature;
        } else {
            address signer;
            (signer, ecdsa) = abi.decode(signature, (address, bytes));
            if (signer != owner) {
                return 0xffffffff;
            }
        }
        return _recover(hash, ecdsa) == owner ? MAGIC_VALUE : bytes4(0xffffffff);
    }

    /// ECDSA over `hash`, low `s` and `v` 27 or 28; the zero address for anything else.
    function _recover(bytes32 hash, bytes memory signature) private pure returns (address) {
        if (signature.length != 65) {
            return address(0);
        }
        bytes32 r;
        bytes32 s;
        uint8 v;
        assembly {
            r := mload(add(signature, 0x20))
            s := mload(add(signature, 0x40))
            v := byte(0, mload(add(signature, 0x60)))
        }
        if (uint256(s) > HALF_ORDER || (v != 27 && v != 28)) {
            return address(0);
        }
        return ecrecover(hash, v, r, s);
    }
}

/// Deploys `OwnedWallet`s at addresses known before deployment (CREATE2 over the owner and a
/// salt): what ERC-6492 signatures name as their factory. Deploying an existing wallet again
/// returns it, as the factories of real smart wallets do, so a second factory call is harmless.
/// No constructor and no immutables: its runtime code can be placed with `anvil_setCode`.
contract WalletFactory {
    event WalletCreated(address indexed wallet, address indexed owner);

    function createWallet(address owner, bytes32 salt) external returns (address wallet) {
        wallet = walletAddress(owner, salt);
        if (wallet.code.length == 0) {
            OwnedWallet created = new OwnedWallet{salt: salt}(owner);
            require(address(created) == wallet, "WalletFactory: unexpected address");
            emit WalletCreated(wallet, owner);
        }
    }

    function walletAddress(address owner, bytes32 salt) public view returns (address) {
        bytes32 initCode = keccak256(abi.encodePacked(type(OwnedWallet).creationCode, abi.encode(owner)));
        return address(uint160(uint256(keccak256(abi.encodePacked(bytes1(0xff), address(this), salt, initCode)))));
    }
}
