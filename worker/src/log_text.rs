//! What both provider clients (LLM and SMS) share about turning provider errors into log text:
//! the full cause chain of a transport error on one line, and a length cap.

/// Keeps provider messages short enough for a log line (at most 300 bytes plus an ellipsis,
/// cut on a character boundary).
pub fn clip(mut message: String) -> String {
    const MAX: usize = 300;
    if message.len() > MAX {
        let mut cut = MAX;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message.truncate(cut);
        message.push('…');
    }
    message
}

/// The error and its causes on one line.
pub fn error_chain(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_keeps_char_boundaries() {
        let clipped = clip("é".repeat(400));
        assert!(clipped.ends_with('…') && clipped.len() <= 303);
    }
}
