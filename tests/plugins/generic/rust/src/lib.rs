//! The generic-plugin fixture in Rust: `../wit/shapes.wit`, implemented plainly. toolhost serves
//! each exported function as a tool; see tests/e2e/generic.rs.

wit_bindgen::generate!({ path: "../wit", world: "shapes-and-counters" });

use std::cell::Cell;

use exports::toolhost_test::shapes::geometry::{
    Guest as Geometry, Point, Problem, Shape, Style, Summary, Unit,
};

struct Fixture;

impl Geometry for Fixture {
    fn area(shape: Shape) -> Result<f64, String> {
        let area = match shape {
            Shape::Circle(r) if r < 0.0 => return Err(format!("negative radius {r}")),
            Shape::Circle(r) => std::f64::consts::PI * r * r,
            Shape::Rectangle((w, h)) if w < 0.0 || h < 0.0 => {
                return Err("negative side".into());
            }
            Shape::Rectangle((w, h)) => w * h,
            Shape::Polygon(points) => {
                // The shoelace formula.
                let n = points.len();
                let twice: f64 = (0..n)
                    .map(|i| {
                        let (a, b) = (&points[i], &points[(i + 1) % n]);
                        a.x * b.y - b.x * a.y
                    })
                    .sum();
                twice.abs() / 2.0
            }
            Shape::Dot => 0.0,
        };
        Ok(area)
    }

    fn sum(values: Vec<i64>) -> i64 {
        values.iter().fold(0i64, |a, b| a.wrapping_add(*b))
    }

    fn show(p: Point, unit: Option<Unit>, style: Style) -> String {
        let unit = match unit {
            None => "",
            Some(Unit::Mm) => " mm",
            Some(Unit::Cm) => " cm",
            Some(Unit::M) => " m",
        };
        let mut styles = Vec::new();
        for (flag, name) in [
            (Style::BOLD, "bold"),
            (Style::ITALIC, "italic"),
            (Style::UNDERLINE, "underline"),
        ] {
            if style.contains(flag) {
                styles.push(name);
            }
        }
        format!("({}, {}){unit} [{}]", p.x, p.y, styles.join(","))
    }

    fn reverse(data: Vec<u8>) -> Vec<u8> {
        data.into_iter().rev().collect()
    }

    fn bounds(small: u8, big: u64, signed: i8, letter: char) -> (u8, u64, i8, char) {
        (small, big, signed, letter)
    }

    fn summarize(values: Vec<i64>, label: Option<String>) -> Result<Summary, Problem> {
        if values.is_empty() {
            return Err(Problem::Empty);
        }
        if values.len() > 1000 {
            return Err(Problem::TooMany);
        }
        Ok(Summary {
            count: values.len() as u32,
            total: values.iter().sum(),
            label,
            units: vec![Unit::Mm, Unit::M],
        })
    }

    fn crash(message: String) {
        panic!("{message}");
    }
}

impl Guest for Fixture {
    fn greet(name: String) -> String {
        format!("Hello, {name}!")
    }
}

impl exports::toolhost_test::shapes::counters::Guest for Fixture {
    type Counter = Counter;

    fn make(start: u32) -> exports::toolhost_test::shapes::counters::Counter {
        exports::toolhost_test::shapes::counters::Counter::new(Counter(Cell::new(start)))
    }

    fn add(a: u32, b: u32) -> u32 {
        a.wrapping_add(b)
    }
}

/// The resource behind `counters.counter`.
struct Counter(Cell<u32>);

impl exports::toolhost_test::shapes::counters::GuestCounter for Counter {
    fn new(start: u32) -> Self {
        Counter(Cell::new(start))
    }

    fn next(&self) -> u32 {
        self.0.replace(self.0.get().wrapping_add(1))
    }
}

impl exports::toolhost_test::shapes::mirror::Guest for Fixture {
    fn mirror(
        v: exports::toolhost_test::shapes::mirror::Everything,
    ) -> exports::toolhost_test::shapes::mirror::Everything {
        v
    }
}

export!(Fixture);
