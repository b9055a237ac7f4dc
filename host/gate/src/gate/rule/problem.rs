//! What is wrong with a rule string. Its own file because the path patterns a rule is made of
//! report the same problems, and [`super`] builds on those patterns.

/// What is wrong with a rule string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RuleProblem {
    /// `tool(pattern` without the closing parenthesis.
    #[error("missing ')'")]
    MissingParen,
    /// A `)` with no `(` before it.
    #[error("')' without '('")]
    UnopenedParen,
    /// Nothing before `(`, or an empty rule.
    #[error("empty tool name")]
    EmptyTool,
    /// A character that no tool name contains.
    #[error(
        "{0:?} cannot appear in a tool name (letters, digits, '_', '-', and '*' as a wildcard)"
    )]
    ToolChar(char),
    /// The pattern is not a valid glob.
    #[error("bad glob {glob:?}: {message}")]
    Glob {
        /// The glob as given to the glob compiler.
        glob: String,
        /// The glob compiler's complaint.
        message: String,
    },
    /// `..` after a normal segment, or in an absolute pattern.
    #[error("'..' may appear only at the start of a relative or '~' path pattern")]
    InnerParent,
}
