//! The three LLM API shapes a batch can come in, and how a caller names one ("auto" to detect it).
//! Pure names and parsing; what each shape looks like is in `anthropic`, `openai` and `responses`.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// An LLM API whose tool calls toolhost reads and whose tool results it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Format {
    /// Anthropic Messages: `tool_use` content blocks in, one user message of `tool_result` blocks out.
    #[serde(rename = "anthropic")]
    Anthropic,
    /// OpenAI Chat Completions: an assistant message's `tool_calls` in, one `tool` message per call out.
    #[serde(rename = "openai")]
    OpenAi,
    /// OpenAI Responses: `function_call` output items in, `function_call_output` items out.
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
}

impl Format {
    /// Every format, in the order they are listed to users.
    pub const ALL: [Format; 3] = [Format::Anthropic, Format::OpenAi, Format::OpenAiResponses];

    /// The name used on the command line and in URLs: `anthropic`, `openai`, `openai-responses`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::OpenAi => "openai",
            Self::OpenAiResponses => "openai-responses",
        }
    }

    /// How the format is named in messages for people.
    pub(crate) fn title(self) -> &'static str {
        match self {
            Self::Anthropic => "Anthropic Messages",
            Self::OpenAi => "OpenAI Chat Completions",
            Self::OpenAiResponses => "OpenAI Responses",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A format name that is none of the known ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown format {given:?}: expected {expected}")]
pub struct UnknownFormat {
    /// What was given.
    pub given: String,
    /// The accepted names, for the message.
    expected: &'static str,
}

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| UnknownFormat {
                given: s.to_string(),
                expected: "anthropic, openai or openai-responses",
            })
    }
}

/// The format a caller asks for: named, or `auto` to detect it from the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FormatChoice {
    /// Detect the format from the message's shape.
    #[default]
    Auto,
    /// Read the message as this format, and nothing else.
    Named(Format),
}

impl FormatChoice {
    /// The named format, if any.
    pub fn named(self) -> Option<Format> {
        match self {
            Self::Auto => None,
            Self::Named(f) => Some(f),
        }
    }
}

impl FromStr for FormatChoice {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "auto" {
            return Ok(Self::Auto);
        }
        s.parse()
            .map(Self::Named)
            .map_err(|e: UnknownFormat| UnknownFormat {
                expected: "auto, anthropic, openai or openai-responses",
                ..e
            })
    }
}

impl fmt::Display for FormatChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Auto => f.write_str("auto"),
            Self::Named(format) => format.fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for f in Format::ALL {
            assert_eq!(f.as_str().parse::<Format>(), Ok(f));
            assert_eq!(
                f.to_string().parse::<FormatChoice>(),
                Ok(FormatChoice::Named(f))
            );
            assert_eq!(serde_json::to_value(f).unwrap(), f.as_str());
        }
        assert_eq!("auto".parse::<FormatChoice>(), Ok(FormatChoice::Auto));
    }

    #[test]
    fn unknown_names_list_the_accepted_ones() {
        let e = "claude".parse::<Format>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown format \"claude\": expected anthropic, openai or openai-responses"
        );
        let e = "OpenAI".parse::<FormatChoice>().unwrap_err();
        assert!(e.to_string().contains("expected auto, anthropic"), "{e}");
        assert!("auto".parse::<Format>().is_err());
    }
}
