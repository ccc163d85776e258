//! Device selectors: the part of CEL that DRA selectors use, evaluated over one device
//! (`device.driver`, `device.attributes["domain"].name`, `device.capacity["domain"].name`,
//! `quantity(..)`, `semver(..)` with `compareTo`/`isGreaterThan`/`isLessThan`, `==`, `!=`,
//! `<`, `<=`, `>`, `>=`, `&&`, `||`, `!`, `in`, `startsWith`/`endsWith`/`contains`).
//! No CEL crate builds offline here, so this is a small interpreter; anything outside the
//! subset is a compile error, reported as upstream reports CEL compile errors.

use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::Device;

use crate::api::quantity::Quantity;

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Lit(Val),
    Device,
    Member(Box<Expr>, String),
    Index(Box<Expr>, Box<Expr>),
    Call(Option<Box<Expr>>, String, Vec<Expr>),
    Not(Box<Expr>),
    Bin(Box<Expr>, &'static str, Box<Expr>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Bool(bool),
    Int(i64),
    Str(String),
    Quantity(i128),
    Version(Vec<u64>, String),
    Map(BTreeMap<String, Val>),
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    Int(i64),
    Op(&'static str),
}

const OPS: &[&str] = &[
    "&&", "||", "==", "!=", "<=", ">=", "<", ">", "!", "(", ")", "[", "]", ".", ",",
];

fn lex(src: &str) -> Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    let b = src.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c.is_whitespace() {
            i += 1;
        } else if c == '"' || c == '\'' {
            let end = src[i + 1..]
                .find(c)
                .ok_or_else(|| format!("Syntax error: unterminated string at {i}"))?;
            out.push(Tok::Str(src[i + 1..i + 1 + end].to_string()));
            i += end + 2;
        } else if c.is_ascii_digit() {
            let end = src[i..]
                .find(|ch: char| !ch.is_ascii_digit())
                .map_or(src.len(), |e| i + e);
            out.push(Tok::Int(src[i..end].parse().map_err(|e| format!("{e}"))?));
            i = end;
        } else if c.is_ascii_alphabetic() || c == '_' {
            let end = src[i..]
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                .map_or(src.len(), |e| i + e);
            out.push(Tok::Ident(src[i..end].to_string()));
            i = end;
        } else if let Some(op) = OPS.iter().find(|o| src[i..].starts_with(**o)) {
            out.push(Tok::Op(op));
            i += op.len();
        } else {
            return Err(format!("Syntax error: token recognition error at: '{c}'"));
        }
    }
    Ok(out)
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    /// Nesting of parentheses, arguments, indexes and `!`: bounded so that a hostile
    /// selector gives an error instead of overflowing the stack (cel-go bounds it too).
    depth: usize,
}

/// How deeply a selector may nest (cel-go's default parser recursion limit).
const MAX_DEPTH: usize = 250;
/// The longest selector accepted (the API server's limit for a device selector).
const MAX_LEN: usize = 10 * 1024;

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }
    fn eat(&mut self, op: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Op(o)) if *o == op) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, op: &str) -> Result<(), String> {
        if self.eat(op) {
            Ok(())
        } else {
            Err(format!("Syntax error: expected '{op}'"))
        }
    }
    fn nest(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(format!(
                "expression nests deeper than {MAX_DEPTH} levels (max recursion depth exceeded)"
            ));
        }
        Ok(())
    }
    fn binary(&mut self, level: usize) -> Result<Expr, String> {
        if level == 0 {
            self.nest()?;
            let e = self.binary_at(0);
            self.depth -= 1;
            return e;
        }
        self.binary_at(level)
    }
    fn binary_at(&mut self, level: usize) -> Result<Expr, String> {
        const LEVELS: &[&[&str]] = &[&["||"], &["&&"], &["==", "!=", "<", "<=", ">", ">=", "in"]];
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut lhs = self.binary(level + 1)?;
        loop {
            let op = match self.peek() {
                Some(Tok::Op(o)) if LEVELS[level].contains(o) => *o,
                Some(Tok::Ident(i)) if i == "in" && LEVELS[level].contains(&"in") => "in",
                _ => return Ok(lhs),
            };
            self.pos += 1;
            let rhs = self.binary(level + 1)?;
            lhs = Expr::Bin(Box::new(lhs), op, Box::new(rhs));
        }
    }
    fn unary(&mut self) -> Result<Expr, String> {
        if self.eat("!") {
            self.nest()?;
            let e = self.unary();
            self.depth -= 1;
            return Ok(Expr::Not(Box::new(e?)));
        }
        let mut e = self.primary()?;
        loop {
            if self.eat(".") {
                let Some(Tok::Ident(name)) = self.peek().cloned() else {
                    return Err("Syntax error: expected a field name after '.'".into());
                };
                self.pos += 1;
                if self.eat("(") {
                    let args = self.args()?;
                    e = Expr::Call(Some(Box::new(e)), name, args);
                } else {
                    e = Expr::Member(Box::new(e), name);
                }
            } else if self.eat("[") {
                let idx = self.binary(0)?;
                self.expect("]")?;
                e = Expr::Index(Box::new(e), Box::new(idx));
            } else {
                return Ok(e);
            }
        }
    }
    fn args(&mut self) -> Result<Vec<Expr>, String> {
        let mut args = Vec::new();
        if self.eat(")") {
            return Ok(args);
        }
        loop {
            args.push(self.binary(0)?);
            if self.eat(")") {
                return Ok(args);
            }
            self.expect(",")?;
        }
    }
    fn primary(&mut self) -> Result<Expr, String> {
        let t = self.peek().cloned();
        self.pos += 1;
        match t {
            Some(Tok::Str(s)) => Ok(Expr::Lit(Val::Str(s))),
            Some(Tok::Int(i)) => Ok(Expr::Lit(Val::Int(i))),
            Some(Tok::Op("(")) => {
                let e = self.binary(0)?;
                self.expect(")")?;
                Ok(e)
            }
            Some(Tok::Ident(id)) => match id.as_str() {
                "true" => Ok(Expr::Lit(Val::Bool(true))),
                "false" => Ok(Expr::Lit(Val::Bool(false))),
                "device" => Ok(Expr::Device),
                _ if self.eat("(") => Ok(Expr::Call(None, id, self.args()?)),
                _ => Err(format!("undeclared reference to '{id}'")),
            },
            Some(t) => Err(format!("Syntax error: unexpected {t:?}")),
            None => Err("Syntax error: unexpected end of input".into()),
        }
    }
}

/// Compiles a selector expression.
pub fn compile(src: &str) -> Result<Expr, String> {
    if src.len() > MAX_LEN {
        return Err(format!(
            "expression is {} bytes, longer than the limit of {MAX_LEN}",
            src.len()
        ));
    }
    let mut p = Parser {
        toks: lex(src)?,
        pos: 0,
        depth: 0,
    };
    let e = p.binary(0)?;
    if p.pos != p.toks.len() {
        return Err(format!(
            "Syntax error: unexpected {:?}",
            p.toks[p.pos..].first()
        ));
    }
    Ok(e)
}

/// The attribute and capacity maps of a device by domain, as upstream's CEL environment
/// builds them: unqualified names belong to the driver's domain.
fn device_value(driver: &str, d: &Device) -> Val {
    let mut attrs: BTreeMap<String, Val> = BTreeMap::new();
    for (name, a) in d.attributes.iter().flatten() {
        let (domain, id) = name.split_once('/').unwrap_or((driver, name));
        let v = if let Some(b) = a.bool {
            Val::Bool(b)
        } else if let Some(i) = a.int {
            Val::Int(i)
        } else if let Some(s) = &a.string {
            Val::Str(s.clone())
        } else if let Some(v) = &a.version {
            semver(v).unwrap_or(Val::Str(v.clone()))
        } else {
            continue;
        };
        map_in(&mut attrs, domain).insert(id.to_string(), v);
    }
    let mut caps: BTreeMap<String, Val> = BTreeMap::new();
    for (name, c) in d.capacity.iter().flatten() {
        let (domain, id) = name.split_once('/').unwrap_or((driver, name));
        if let Ok(q) = Quantity::parse(&c.value.0) {
            map_in(&mut caps, domain).insert(id.to_string(), Val::Quantity(q.nanos()));
        }
    }
    Val::Map(BTreeMap::from([
        ("driver".to_string(), Val::Str(driver.to_string())),
        ("attributes".to_string(), Val::Map(attrs)),
        ("capacity".to_string(), Val::Map(caps)),
        (
            "allowMultipleAllocations".to_string(),
            Val::Bool(d.allow_multiple_allocations.unwrap_or(false)),
        ),
    ]))
}

fn map_in<'a>(m: &'a mut BTreeMap<String, Val>, k: &str) -> &'a mut BTreeMap<String, Val> {
    match m
        .entry(k.to_string())
        .or_insert_with(|| Val::Map(BTreeMap::new()))
    {
        Val::Map(inner) => inner,
        _ => unreachable!("domains hold maps"),
    }
}

fn semver(s: &str) -> Option<Val> {
    let core = s.split(['-', '+']).next()?;
    let parts: Option<Vec<u64>> = core.split('.').map(|p| p.parse().ok()).collect();
    let parts = parts.filter(|p| p.len() == 3)?;
    Some(Val::Version(parts, s.to_string()))
}

fn order(a: &Val, b: &Val) -> Result<std::cmp::Ordering, String> {
    match (a, b) {
        (Val::Int(x), Val::Int(y)) => Ok(x.cmp(y)),
        (Val::Str(x), Val::Str(y)) => Ok(x.cmp(y)),
        (Val::Quantity(x), Val::Quantity(y)) => Ok(x.cmp(y)),
        (Val::Version(x, _), Val::Version(y, _)) => Ok(x.cmp(y)),
        (Val::Bool(x), Val::Bool(y)) => Ok(x.cmp(y)),
        _ => Err("no such overload".into()),
    }
}

fn eval(e: &Expr, device: &Val) -> Result<Val, String> {
    match e {
        Expr::Lit(v) => Ok(v.clone()),
        Expr::Device => Ok(device.clone()),
        Expr::Member(base, name) => lookup(eval(base, device)?, name.clone()),
        Expr::Index(base, key) => match eval(key, device)? {
            Val::Str(k) => lookup(eval(base, device)?, k),
            _ => Err("no such overload".into()),
        },
        Expr::Not(x) => match eval(x, device)? {
            Val::Bool(b) => Ok(Val::Bool(!b)),
            _ => Err("no such overload".into()),
        },
        Expr::Bin(l, op, r) if *op == "&&" || *op == "||" => {
            let want = *op == "||";
            // CEL's logical operators are commutative over errors: a decisive side wins.
            let lv = eval(l, device);
            if matches!(lv, Ok(Val::Bool(b)) if b == want) {
                return Ok(Val::Bool(want));
            }
            let rv = eval(r, device);
            if matches!(rv, Ok(Val::Bool(b)) if b == want) {
                return Ok(Val::Bool(want));
            }
            match (lv?, rv?) {
                (Val::Bool(_), Val::Bool(_)) => Ok(Val::Bool(!want)),
                _ => Err("no such overload".into()),
            }
        }
        Expr::Bin(l, op, r) => {
            let (lv, rv) = (eval(l, device)?, eval(r, device)?);
            let b = match *op {
                "==" => lv == rv,
                "!=" => lv != rv,
                "in" => match (&lv, &rv) {
                    (Val::Str(k), Val::Map(m)) => m.contains_key(k),
                    _ => return Err("no such overload".into()),
                },
                _ => {
                    let o = order(&lv, &rv)?;
                    match *op {
                        "<" => o.is_lt(),
                        "<=" => o.is_le(),
                        ">" => o.is_gt(),
                        _ => o.is_ge(),
                    }
                }
            };
            Ok(Val::Bool(b))
        }
        Expr::Call(recv, name, args) => {
            let args: Vec<Val> = args
                .iter()
                .map(|a| eval(a, device))
                .collect::<Result<_, _>>()?;
            let recv = recv.as_ref().map(|r| eval(r, device)).transpose()?;
            call(recv, name, &args)
        }
    }
}

fn lookup(base: Val, key: String) -> Result<Val, String> {
    match base {
        Val::Map(mut m) => m.remove(&key).ok_or_else(|| format!("no such key: {key}")),
        _ => Err(format!("no such key: {key}")),
    }
}

fn call(recv: Option<Val>, name: &str, args: &[Val]) -> Result<Val, String> {
    match (recv, name, args) {
        (None, "quantity", [Val::Str(s)]) => Quantity::parse(s)
            .map(|q| Val::Quantity(q.nanos()))
            .map_err(|e| format!("{e}")),
        (None, "semver", [Val::Str(s)]) => semver(s).ok_or_else(|| format!("invalid semver: {s}")),
        (Some(a), "compareTo", [b]) => Ok(Val::Int(order(&a, b)? as i64)),
        (Some(a), "isGreaterThan", [b]) => Ok(Val::Bool(order(&a, b)?.is_gt())),
        (Some(a), "isLessThan", [b]) => Ok(Val::Bool(order(&a, b)?.is_lt())),
        (Some(Val::Str(a)), "startsWith", [Val::Str(b)]) => {
            Ok(Val::Bool(a.starts_with(b.as_str())))
        }
        (Some(Val::Str(a)), "endsWith", [Val::Str(b)]) => Ok(Val::Bool(a.ends_with(b.as_str()))),
        (Some(Val::Str(a)), "contains", [Val::Str(b)]) => Ok(Val::Bool(a.contains(b.as_str()))),
        _ => Err(format!("found no matching overload for '{name}'")),
    }
}

/// Whether the device matches the selector: the result must be a bool.
pub fn matches(e: &Expr, driver: &str, d: &Device) -> Result<bool, String> {
    match eval(e, &device_value(driver, d))? {
        Val::Bool(b) => Ok(b),
        _ => Err("expression must evaluate to bool".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dev() -> Device {
        serde_json::from_value(json!({"name": "gpu-0",
            "attributes": {"model": {"string": "a100"}, "memoryGi": {"int": 40},
                "driverVersion": {"version": "1.2.3"}, "other.io/numa": {"int": 1}},
            "capacity": {"memory": {"value": "40Gi"}}}))
        .unwrap()
    }

    fn run(src: &str) -> Result<bool, String> {
        matches(&compile(src)?, "gpu.example.com", &dev())
    }

    #[test]
    fn device_environment() {
        assert_eq!(run(r#"device.driver == "gpu.example.com""#), Ok(true));
        assert_eq!(
            run(r#"device.attributes["gpu.example.com"].model == 'a100'"#),
            Ok(true)
        );
        assert_eq!(
            run(r#"device.attributes["other.io"].numa == 1 && true"#),
            Ok(true)
        );
        assert_eq!(
            run(r#"device.capacity["gpu.example.com"].memory.compareTo(quantity("32Gi")) >= 0"#),
            Ok(true)
        );
        assert_eq!(
            run(
                r#"device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.10.0"))"#
            ),
            Ok(false)
        );
        assert_eq!(
            run(r#""model" in device.attributes["gpu.example.com"]"#),
            Ok(true)
        );
        assert_eq!(
            run(r#"!(device.attributes["gpu.example.com"].memoryGi < 80)"#),
            Ok(false)
        );
    }

    #[test]
    fn hostile_nesting_is_an_error_not_a_crash() {
        let deep = format!("{}true{}", "(".repeat(5_000), ")".repeat(5_000));
        assert!(compile(&deep).unwrap_err().contains("max recursion depth"));
        let nots = format!("{}true", "!".repeat(5_000));
        assert!(compile(&nots).unwrap_err().contains("max recursion depth"));
        let long = format!("true{}", " || true".repeat(2_000));
        assert!(
            compile(&long)
                .unwrap_err()
                .contains("longer than the limit")
        );
        // Ordinary nesting still compiles.
        assert!(run("((device.driver == \"gpu.example.com\"))").is_ok());
    }

    #[test]
    fn errors() {
        assert_eq!(
            run(r#"device.attributes["gpu.example.com"].nope == 1"#),
            Err("no such key: nope".into())
        );
        assert!(compile("device.driver ==").is_err());
        assert_eq!(
            compile("foo.bar"),
            Err("undeclared reference to 'foo'".into())
        );
        // A decisive side wins over an error on the other.
        assert_eq!(run(r#"device.attributes["x"].y == 1 || true"#), Ok(true));
    }
}
