//! How an SMS body travels and what it costs: GSM-7 when every character is in the GSM 03.38
//! alphabet, UCS-2 otherwise, and the number of billed segments (sms.md 3.7). One curly quote or
//! emoji switches the whole message to UCS-2 and cuts a segment from 160 to 70 characters.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Encoding {
    #[serde(rename = "GSM-7")]
    Gsm7,
    #[serde(rename = "UCS-2")]
    Ucs2,
}

/// GSM 03.38 basic character set (one septet each); position 0x1B is the escape, not a character.
const GSM_BASIC: &str = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?\
                         ¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà";
/// GSM 03.38 extension table: escape + character, two septets each.
const GSM_EXTENSION: &str = "\u{0C}^{}\\[~]|€";

/// Septets a character costs in GSM-7, or `None` when it is not in the alphabet.
fn gsm_septets(c: char) -> Option<u32> {
    if GSM_BASIC.contains(c) {
        Some(1)
    } else if GSM_EXTENSION.contains(c) {
        Some(2)
    } else {
        None
    }
}

/// The encoding a provider will use for `body` and how many segments it is billed as.
impl Encoding {
    /// The wire name, as in the response: `GSM-7` or `UCS-2`.
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::Gsm7 => "GSM-7",
            Encoding::Ucs2 => "UCS-2",
        }
    }
}

pub fn measure(body: &str) -> (Encoding, u32) {
    let gsm: Option<Vec<u32>> = body.chars().map(gsm_septets).collect();
    match gsm {
        // 160 septets fit one message; a concatenated part loses 7 to the header, leaving 153.
        Some(costs) => (Encoding::Gsm7, segments(&costs, 160, 153)),
        // UCS-2 counts UTF-16 code units: 70 alone, 67 per concatenated part.
        None => {
            let units: Vec<u32> = body.chars().map(|c| c.len_utf16() as u32).collect();
            (Encoding::Ucs2, segments(&units, 70, 67))
        }
    }
}

/// Packs characters greedily into parts; an escape pair or surrogate pair is never split across
/// two parts, which is why a part can hold one unit less than `per_part`.
fn segments(costs: &[u32], single: u32, per_part: u32) -> u32 {
    if costs.iter().sum::<u32>() <= single {
        return 1;
    }
    let (mut parts, mut used) = (1, 0);
    for &c in costs {
        if used + c > per_part {
            parts += 1;
            used = 0;
        }
        used += c;
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_gsm7_with_160_then_153_per_segment() {
        assert_eq!(measure("Hello"), (Encoding::Gsm7, 1));
        assert_eq!(measure(&"a".repeat(160)), (Encoding::Gsm7, 1));
        assert_eq!(measure(&"a".repeat(161)), (Encoding::Gsm7, 2));
        assert_eq!(measure(&"a".repeat(306)), (Encoding::Gsm7, 2));
        assert_eq!(measure(&"a".repeat(307)), (Encoding::Gsm7, 3));
    }

    #[test]
    fn extension_characters_cost_two_septets() {
        assert_eq!(measure(&"€".repeat(80)), (Encoding::Gsm7, 1));
        assert_eq!(measure(&"€".repeat(81)), (Encoding::Gsm7, 2));
        assert_eq!(
            measure(&format!("{}{{", "a".repeat(159))),
            (Encoding::Gsm7, 2)
        );
        // 152 plain + one escape pair cannot share the first 153-septet part.
        let (_, parts) = measure(&format!("{}[{}", "a".repeat(152), "a".repeat(10)));
        assert_eq!(parts, 2);
        let (_, parts) = measure(&format!("{}[{}", "a".repeat(152), "a".repeat(152)));
        assert_eq!(parts, 3);
    }

    #[test]
    fn gsm_accents_and_greek_stay_gsm7() {
        assert_eq!(
            measure("Café Ñoño Ø Δ £5 @ ¿Qué? ¡Sì! ü à ò Ç").0,
            Encoding::Gsm7
        );
    }

    #[test]
    fn anything_outside_the_alphabet_switches_to_ucs2() {
        // Spanish acute accents other than é are outside the alphabet too.
        for s in [
            "sí",
            "Ñandú",
            "Maria\u{2019}s Salon",
            "Zoë",
            "Thanks 😊",
            "naïve",
            "ç",
            "`",
        ] {
            assert_eq!(measure(s).0, Encoding::Ucs2, "{s}");
        }
        assert_eq!(measure(&"ë".repeat(70)), (Encoding::Ucs2, 1));
        assert_eq!(measure(&"ë".repeat(71)), (Encoding::Ucs2, 2));
        assert_eq!(measure(&"ë".repeat(134)), (Encoding::Ucs2, 2));
        assert_eq!(measure(&"ë".repeat(135)), (Encoding::Ucs2, 3));
    }

    #[test]
    fn emoji_count_as_two_utf16_units() {
        assert_eq!(measure(&"😊".repeat(35)), (Encoding::Ucs2, 1));
        assert_eq!(measure(&"😊".repeat(36)), (Encoding::Ucs2, 2));
        // 134 units would fit two parts of 67, but the pair after 66 units moves whole to the
        // second part, pushing the last unit into a third.
        let (_, parts) = measure(&format!("{}😊{}", "ë".repeat(66), "ë".repeat(66)));
        assert_eq!(parts, 3);
    }

    #[test]
    fn encodings_serialise_as_the_contract_spells_them() {
        assert_eq!(serde_json::to_string(&Encoding::Gsm7).unwrap(), "\"GSM-7\"");
        assert_eq!(serde_json::to_string(&Encoding::Ucs2).unwrap(), "\"UCS-2\"");
    }
}
