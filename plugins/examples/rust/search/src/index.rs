//! A small BM25 index over tool definitions: each tool a document of weighted fields (its name
//! counts most, then its title, then its description and its input's property names and
//! descriptions). Deterministic: equal scores rank by name.

use std::collections::BTreeMap;

use serde_json::Value;

/// BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// BM25's length normalisation.
const B: f64 = 0.75;

/// What one tool is indexed from.
pub struct Document<'a> {
    pub name: &'a str,
    pub title: Option<&'a str>,
    pub description: &'a str,
    /// The input schema, parsed; property names and descriptions are indexed.
    pub schema: Option<&'a Value>,
}

/// The lowercase words of `text`: runs of letters and digits (`read_file` is `read`, `file`),
/// a trailing plural `s` dropped from longer words so that `files` finds `file`.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| {
            let w = w.to_lowercase();
            match w.strip_suffix('s') {
                Some(stem) if stem.len() >= 3 && !stem.ends_with('s') => stem.to_owned(),
                _ => w,
            }
        })
}

/// The index: each document's weighted term counts and length.
pub struct Index {
    docs: Vec<(BTreeMap<String, f64>, f64)>,
    /// How many documents hold each term.
    df: BTreeMap<String, usize>,
    average: f64,
}

impl Index {
    pub fn new(docs: &[Document<'_>]) -> Self {
        let mut df = BTreeMap::<String, usize>::new();
        let docs: Vec<_> = docs
            .iter()
            .map(|d| {
                let mut terms = BTreeMap::<String, f64>::new();
                let mut add = |text: &str, weight: f64| {
                    for w in words(text) {
                        *terms.entry(w).or_default() += weight;
                    }
                };
                add(d.name, 3.0);
                add(d.title.unwrap_or_default(), 2.0);
                add(d.description, 1.0);
                if let Some(props) = d
                    .schema
                    .and_then(|s| s.get("properties"))
                    .and_then(Value::as_object)
                {
                    for (key, prop) in props {
                        add(key, 1.0);
                        if let Some(text) = prop.get("description").and_then(Value::as_str) {
                            add(text, 0.5);
                        }
                    }
                }
                for term in terms.keys() {
                    *df.entry(term.clone()).or_default() += 1;
                }
                let length = terms.values().sum();
                (terms, length)
            })
            .collect();
        let average = docs.iter().map(|(_, l)| l).sum::<f64>() / docs.len().max(1) as f64;
        Self { docs, df, average }
    }

    /// Each document's BM25 score for `query`, by index; documents that match no word score 0.
    pub fn scores(&self, query: &str) -> Vec<f64> {
        let n = self.docs.len() as f64;
        let mut terms: Vec<String> = words(query).collect();
        terms.sort();
        terms.dedup();
        self.docs
            .iter()
            .map(|(counts, length)| {
                terms
                    .iter()
                    .filter_map(|t| Some((counts.get(t)?, self.df[t] as f64)))
                    .map(|(&tf, df)| {
                        let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                        let norm = K1 * (1.0 - B + B * length / self.average.max(1.0));
                        idf * tf * (K1 + 1.0) / (tf + norm)
                    })
                    .sum()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc<'a>(name: &'a str, description: &'a str) -> Document<'a> {
        Document {
            name,
            title: None,
            description,
            schema: None,
        }
    }

    #[test]
    fn words_split_names_and_drop_plurals() {
        let w: Vec<String> = words("read_file Lists FILES, class 42").collect();
        assert_eq!(w, ["read", "file", "list", "file", "class", "42"]);
    }

    #[test]
    fn the_name_outranks_a_mention_and_unmatched_tools_score_zero() {
        let schema = json!({ "properties": { "path": { "description": "the file to read" } } });
        let docs = [
            doc("read_file", "Read a text file."),
            Document {
                schema: Some(&schema),
                ..doc("grep", "Search files for a pattern.")
            },
            doc("echo", "Return the text."),
        ];
        let s = Index::new(&docs).scores("read file");
        assert!(s[0] > s[1] && s[1] > 0.0, "{s:?}");
        assert_eq!(s[2], 0.0);
        assert_eq!(Index::new(&docs).scores(""), [0.0, 0.0, 0.0]);
    }
}
