use std::time::Instant;
fn main() {
    let s: serde_json::Value = serde_json::from_str(r#"{"type":"object","additionalProperties":false,"properties":{"text":{"type":"string","description":"x"},"repeat":{"type":"integer","minimum":1,"maximum":1000,"default":1}},"required":["text"]}"#).unwrap();
    for i in 0..4 {
        let t = Instant::now();
        let v = toolhost_policy::gate::InputValidator::compile(&s).unwrap();
        let a = t.elapsed();
        let t = Instant::now();
        let _w = jsonschema::options().build(&s).unwrap();
        let b = t.elapsed();
        let t = Instant::now();
        let ok = jsonschema::meta::is_valid(&s);
        let c = t.elapsed();
        println!(
            "{i}: compile {:?} ; no-meta build {:?}; meta is_valid {:?} {ok}",
            a, b, c
        );
        drop(v);
    }
}
