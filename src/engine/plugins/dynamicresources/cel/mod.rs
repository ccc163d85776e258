//! Device selectors: CEL expressions evaluated with the `cel` crate, in the environment
//! Kubernetes gives DRA selectors (k8s.io/dynamic-resource-allocation/cel, v1.35.4):
//!
//! * `device`: `driver`, `allowMultipleAllocations`, `attributes` and `capacity`, the last
//!   two maps by domain then by name. An unqualified attribute or capacity name belongs to
//!   the driver's domain; looking up a domain the device has nothing in gives an empty map
//!   (so `device.attributes["other.io"].x` fails with `no such key: x`, as upstream).
//!   Attributes are bools, ints, strings and semantic versions; capacities quantities.
//! * the standard library, the strings extension and `cel.bind`;
//! * the Kubernetes quantity library (`quantity`, `isQuantity`, `sign`, `isInteger`,
//!   `asInteger`, `asApproximateFloat`, `add`, `sub`, `isGreaterThan`, `isLessThan`,
//!   `compareTo`, `==`) and semver library (`semver` with optional normalization,
//!   `isSemver`, `major`, `minor`, `patch`, the comparisons, `==`).
//!
//! Not provided (an expression using them is refused with an error that says so): the
//! Kubernetes regex (`find`, `findAll`), URL, IP, CIDR, format-name, authz and list
//! (`isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf` on lists) libraries, the sets
//! and lists extensions.
//!
//! Errors read as upstream's: a compile error is `compilation failed: ERROR: <input>:L:C:
//! ...` with the source line and a caret; run time errors are cel-go's (`no such key: x`,
//! `no such overload`, ...). There is no type checker: a type mismatch upstream's checker
//! refuses at compile time (`"a" + [1]`) is found here only when it runs, as `no such
//! overload`, cel-go's words for the same mismatch on `dyn` values. Hostile input cannot crash kubestep: expressions are at most
//! 10 KiB, parsed on a thread of their own with a large stack, and refused past cel-go's
//! nesting limit of 250. Their worst-case cost is estimated as upstream estimates it
//! (`cost`), and one over upstream's limit is refused with the words of upstream's API
//! validation, `too complex, exceeds cost limit`. As the `cel` crate counts nothing
//! while it runs, the compiled expression is rewritten to charge a budget of that
//! limit for what it builds, copies and loops over (`limit`), so that whatever the
//! estimate lets through cannot allocate more than some tens of MB: past it the
//! evaluation fails with cel-go's `operation cancelled: actual cost limit exceeded`.
//!
//! `device.attributes` and `device.capacity` iterate their domains in macros (`all`,
//! `exists`, `map`, ...), as macros iterate a map's keys upstream.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, LazyLock, Mutex};

use ::cel::common::ast::{EntryExpr, Expr as Node, LiteralValue};
use ::cel::common::types::{CelBool, CelDouble, CelInt, CelMap, CelMapKey, CelString, Type};
use ::cel::common::value::{CowVal, StaticVal, Val};
use ::cel::parser::{Macro, MacroExprHelper, ParseError, ParseErrors};
use ::cel::{Context, Env, ExecutionError, IdedExpr};
use k8s_openapi::api::resource::v1::Device;

use crate::api::quantity::Quantity;

mod cost;
mod limit;

/// A compiled selector.
#[derive(Debug)]
pub struct Program {
    expr: IdedExpr,
}

/// What `compile` gives: shared, as compiled selectors are cached.
pub type Expr = Arc<Program>;

/// How deeply an expression may nest (cel-go's parser recursion limit).
pub const MAX_DEPTH: usize = 250;
/// The longest selector accepted (`resourceapi.CELSelectorExpressionMaxLength`).
pub const MAX_LEN: usize = 10 * 1024;
/// Upstream's runtime cost limit for a selector (`CELSelectorExpressionMaxCost`).
pub const MAX_COST: u64 = 1_000_000;
/// The parser's stack: a 10 KiB expression can nest thousands of levels before the
/// depth check refuses it.
const PARSE_STACK: usize = 64 << 20;
/// Expressions this short cannot nest deeply enough to trouble the caller's stack: they
/// are parsed where they are asked for, without a thread of their own.
const SHORT: usize = 128;

static QUANTITY_TYPE: Type = Type::new_unspecified_type("kubernetes.Quantity");
static SEMVER_TYPE: Type = Type::new_unspecified_type("kubernetes.Semver");
static DEVICE_TYPE: Type = Type::new_unspecified_type("kubernetes.DRADevice");

/// Libraries of the Kubernetes CEL environment kubestep does not provide, by function.
const NOT_PROVIDED: &[(&str, &str)] = &[
    ("find", "regex"),
    ("findAll", "regex"),
    ("url", "URL"),
    ("isURL", "URL"),
    ("ip", "IP"),
    ("isIP", "IP"),
    ("cidr", "CIDR"),
    ("isCIDR", "CIDR"),
    ("format.named", "format"),
    ("isSorted", "lists"),
    ("sum", "lists"),
    ("min", "lists"),
    ("max", "lists"),
    ("sets.contains", "sets"),
    ("sets.equivalent", "sets"),
    ("sets.intersects", "sets"),
    ("lists.range", "lists extension"),
];

// ---- values of the Kubernetes libraries ----

/// A `kubernetes.Quantity`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuantityVal(pub Quantity);

impl Val for QuantityVal {
    fn get_type(&self) -> &Type {
        &QUANTITY_TYPE
    }
    fn cel_type() -> &'static Type {
        &QUANTITY_TYPE
    }
    /// Upstream compares quantities by value: `quantity("1Gi") == quantity("1024Mi")`.
    fn equals(&self, other: &dyn Val) -> bool {
        other
            .downcast_ref::<QuantityVal>()
            .is_some_and(|o| o.0 == self.0)
    }
    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(*self)
    }
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}
impl StaticVal for QuantityVal {}

/// A `kubernetes.Semver`: semantic version 2.0.0 (blang/semver's reading).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SemverVal {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<PreId>,
    build: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum PreId {
    Num(u64),
    Alpha(String),
}

impl SemverVal {
    /// blang/semver `Parse`, with its error texts.
    pub fn parse(s: &str) -> Result<SemverVal, String> {
        let s = s.trim();
        let (rest, build) = match s.split_once('+') {
            Some((r, b)) => (r, Some(b)),
            None => (s, None),
        };
        let (core, pre) = match rest.split_once('-') {
            Some((c, p)) => (c, Some(p)),
            None => (rest, None),
        };
        let parts: Vec<&str> = core.split('.').collect();
        if parts.len() != 3 {
            return Err("No Major.Minor.Patch elements found".into());
        }
        let num = |p: &str, what: &str| -> Result<u64, String> {
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!("Invalid character(s) found in {what} number {p:?}"));
            }
            if p.len() > 1 && p.starts_with('0') {
                return Err(
                    format!("{what} number must not contain leading zeroes {p:?}").replacen(
                        what,
                        &capitalize(what),
                        1,
                    ),
                );
            }
            p.parse()
                .map_err(|e: std::num::ParseIntError| e.to_string())
        };
        let mut v = SemverVal {
            major: num(parts[0], "major")?,
            minor: num(parts[1], "minor")?,
            patch: num(parts[2], "patch")?,
            pre: Vec::new(),
            build: Vec::new(),
        };
        if let Some(pre) = pre {
            for id in pre.split('.') {
                v.pre.push(pre_id(id)?);
            }
        }
        if let Some(build) = build {
            for id in build.split('.') {
                if id.is_empty() {
                    return Err("Build meta data is empty".into());
                }
                if !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
                    return Err(format!(
                        "Invalid character(s) found in build meta data {id:?}"
                    ));
                }
                v.build.push(id.to_string());
            }
        }
        Ok(v)
    }

    /// Upstream's `normalizeAndParse`: `v` prefix dropped, missing minor and patch as 0.
    fn parse_normalized(s: &str) -> Result<SemverVal, String> {
        let s = s.strip_prefix('v').unwrap_or(s);
        let core_end = s.find(['-', '+']).unwrap_or(s.len());
        let dots = s[..core_end].matches('.').count();
        if dots < 2 {
            if core_end != s.len() {
                return Err("short version cannot contain PreRelease/Build meta data".into());
            }
            let mut t = s.to_string();
            for _ in dots..2 {
                t.push_str(".0");
            }
            // Leading zeroes in the short form are dropped upstream.
            let t: Vec<String> = t
                .split('.')
                .map(|p| {
                    let z = p.trim_start_matches('0');
                    if z.is_empty() && !p.is_empty() {
                        "0".to_string()
                    } else {
                        z.to_string()
                    }
                })
                .collect();
            return SemverVal::parse(&t.join("."));
        }
        SemverVal::parse(s)
    }

    /// Precedence per semver 2.0.0; build metadata does not count.
    fn compare(&self, o: &SemverVal) -> std::cmp::Ordering {
        use std::cmp::Ordering::*;
        let c = (self.major, self.minor, self.patch).cmp(&(o.major, o.minor, o.patch));
        if c != Equal {
            return c;
        }
        match (self.pre.is_empty(), o.pre.is_empty()) {
            (true, true) => return Equal,
            (true, false) => return Greater,
            (false, true) => return Less,
            _ => {}
        }
        for (a, b) in self.pre.iter().zip(&o.pre) {
            let c = match (a, b) {
                (PreId::Num(x), PreId::Num(y)) => x.cmp(y),
                (PreId::Num(_), PreId::Alpha(_)) => Less,
                (PreId::Alpha(_), PreId::Num(_)) => Greater,
                (PreId::Alpha(x), PreId::Alpha(y)) => x.cmp(y),
            };
            if c != Equal {
                return c;
            }
        }
        self.pre.len().cmp(&o.pre.len())
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

fn pre_id(id: &str) -> Result<PreId, String> {
    if id.is_empty() {
        return Err("Prerelease is empty".into());
    }
    if id.bytes().all(|b| b.is_ascii_digit()) {
        if id.len() > 1 && id.starts_with('0') {
            return Err(format!(
                "Numeric PreRelease version must not contain leading zeroes {id:?}"
            ));
        }
        return id
            .parse()
            .map(PreId::Num)
            .map_err(|e: std::num::ParseIntError| e.to_string());
    }
    if !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err(format!("Invalid character(s) found in prerelease {id:?}"));
    }
    Ok(PreId::Alpha(id.to_string()))
}

impl fmt::Display for SemverVal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        for (i, p) in self.pre.iter().enumerate() {
            let sep = if i == 0 { '-' } else { '.' };
            match p {
                PreId::Num(n) => write!(f, "{sep}{n}")?,
                PreId::Alpha(a) => write!(f, "{sep}{a}")?,
            }
        }
        if !self.build.is_empty() {
            write!(f, "+{}", self.build.join("."))?;
        }
        Ok(())
    }
}

impl Val for SemverVal {
    fn get_type(&self) -> &Type {
        &SEMVER_TYPE
    }
    fn cel_type() -> &'static Type {
        &SEMVER_TYPE
    }
    fn equals(&self, other: &dyn Val) -> bool {
        other
            .downcast_ref::<SemverVal>()
            .is_some_and(|o| self.compare(o).is_eq())
    }
    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}
impl StaticVal for SemverVal {}

// ---- the device ----

/// `device.attributes` or `device.capacity`: maps by domain; a domain the device has
/// nothing in reads as an empty map (upstream's map with a default), though `in` and
/// `size` see only the domains present.
#[derive(Debug, Clone, Default)]
struct Domains {
    by_domain: HashMap<String, CelMap<'static>>,
    /// The domains present, sorted: what macros over the map iterate.
    keys: Vec<CelString<'static>>,
    empty: CelMap<'static>,
}

impl Val for Domains {
    fn get_type(&self) -> &Type {
        <CelMap as Val>::cel_type()
    }
    fn cel_type() -> &'static Type {
        <CelMap as Val>::cel_type()
    }
    fn equals(&self, _other: &dyn Val) -> bool {
        false
    }
    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
    fn as_indexer<'b, 'w>(&'b self) -> Option<&'b (dyn ::cel::common::traits::Indexer + 'w)>
    where
        Self: 'w,
    {
        Some(self)
    }
    fn into_indexer<'w>(self: Box<Self>) -> Option<Box<dyn ::cel::common::traits::Indexer + 'w>>
    where
        Self: 'w,
    {
        Some(self)
    }
    fn as_container(&self) -> Option<&dyn ::cel::common::traits::Container> {
        Some(self)
    }
    fn as_sizer(&self) -> Option<&dyn ::cel::common::traits::Sizer> {
        Some(self)
    }
    fn as_iterable<'b, 'w>(&'b self) -> Option<&'b (dyn ::cel::common::traits::Iterable + 'w)>
    where
        Self: 'w,
    {
        Some(self)
    }
}
impl StaticVal for Domains {}

/// Macros over a map iterate its keys (cel-go's `all`, `exists`, ... over a map).
impl ::cel::common::traits::Iterable for Domains {
    fn iter<'b, 'w>(&'b self) -> Box<dyn ::cel::common::traits::Iterator<'b, 'w> + 'b>
    where
        Self: 'w,
    {
        Box::new(DomainKeys(self.keys.iter()))
    }
}

struct DomainKeys<'b>(std::slice::Iter<'b, CelString<'static>>);

impl<'b, 'w> ::cel::common::traits::Iterator<'b, 'w> for DomainKeys<'b> {
    fn next(&mut self) -> Option<&'b (dyn Val + 'w)> {
        self.0.next().map(|k| k as &(dyn Val + 'w))
    }
}

impl ::cel::common::traits::Indexer for Domains {
    fn get<'b, 'w>(&'b self, idx: &dyn Val) -> Result<CowVal<'b, 'w>, ExecutionError>
    where
        Self: 'w,
    {
        let Some(k) = idx.downcast_ref::<CelString>() else {
            return Err(ExecutionError::UnexpectedType {
                got: idx.get_type().name().to_owned(),
                want: "string".to_owned(),
            });
        };
        Ok(CowVal::Borrowed(
            self.by_domain.get(k.inner()).unwrap_or(&self.empty),
        ))
    }
    fn steal<'w>(self: Box<Self>, idx: &dyn Val) -> Result<Box<dyn Val + 'w>, ExecutionError>
    where
        Self: 'w,
    {
        self.get(idx).map(CowVal::into_owned)
    }
}

impl ::cel::common::traits::Container for Domains {
    fn contains(&self, v: &dyn Val) -> Result<bool, ExecutionError> {
        Ok(v.downcast_ref::<CelString>()
            .is_some_and(|k| self.by_domain.contains_key(k.inner())))
    }
}

impl ::cel::common::traits::Sizer for Domains {
    fn size(&self) -> CelInt {
        (self.by_domain.len() as i64).into()
    }
}

/// The `device` variable.
#[derive(Debug, Clone)]
struct DeviceVal {
    driver: CelString<'static>,
    multi: CelBool,
    attributes: Domains,
    capacity: Domains,
}

impl Val for DeviceVal {
    fn get_type(&self) -> &Type {
        &DEVICE_TYPE
    }
    fn cel_type() -> &'static Type {
        &DEVICE_TYPE
    }
    fn equals(&self, _other: &dyn Val) -> bool {
        false
    }
    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
    fn as_indexer<'b, 'w>(&'b self) -> Option<&'b (dyn ::cel::common::traits::Indexer + 'w)>
    where
        Self: 'w,
    {
        Some(self)
    }
    fn into_indexer<'w>(self: Box<Self>) -> Option<Box<dyn ::cel::common::traits::Indexer + 'w>>
    where
        Self: 'w,
    {
        Some(self)
    }
}
impl StaticVal for DeviceVal {}

impl ::cel::common::traits::Indexer for DeviceVal {
    fn get<'b, 'w>(&'b self, idx: &dyn Val) -> Result<CowVal<'b, 'w>, ExecutionError>
    where
        Self: 'w,
    {
        let name = idx.downcast_ref::<CelString>().map(|s| s.inner());
        match name {
            Some("driver") => Ok(CowVal::Borrowed(&self.driver)),
            Some("allowMultipleAllocations") => Ok(CowVal::Borrowed(&self.multi)),
            Some("attributes") => Ok(CowVal::Borrowed(&self.attributes)),
            Some("capacity") => Ok(CowVal::Borrowed(&self.capacity)),
            Some(other) => Err(ExecutionError::NoSuchKey(Arc::new(other.to_string()))),
            None => Err(ExecutionError::UnexpectedType {
                got: idx.get_type().name().to_owned(),
                want: "string".to_owned(),
            }),
        }
    }
    fn steal<'w>(self: Box<Self>, idx: &dyn Val) -> Result<Box<dyn Val + 'w>, ExecutionError>
    where
        Self: 'w,
    {
        self.get(idx).map(CowVal::into_owned)
    }
}

/// Upstream `parseQualifiedName`: the domain before the first `/`, else the driver's.
fn qualified<'a>(name: &'a str, driver: &'a str) -> (&'a str, &'a str) {
    name.split_once('/').unwrap_or((driver, name))
}

fn device_val(driver: &str, d: &Device, multi_visible: bool) -> Result<DeviceVal, String> {
    let mut attrs: HashMap<String, HashMap<CelMapKey<'static>, Box<dyn Val>>> = HashMap::new();
    for (name, a) in d.attributes.iter().flatten() {
        let v: Box<dyn Val> = if let Some(i) = a.int {
            Box::new(CelInt::from(i))
        } else if let Some(b) = a.bool {
            Box::new(CelBool::from(b))
        } else if let Some(s) = &a.string {
            Box::new(CelString::from(s.clone()))
        } else if let Some(v) = &a.version {
            Box::new(
                SemverVal::parse(v)
                    .map_err(|e| format!("attribute {name}: parse semantic version: {e}"))?,
            )
        } else {
            return Err(format!("attribute {name}: unsupported attribute value"));
        };
        let (domain, id) = qualified(name, driver);
        attrs
            .entry(domain.to_string())
            .or_default()
            .insert(CelMapKey::from(id.to_string()), v);
    }
    let mut caps: HashMap<String, HashMap<CelMapKey<'static>, Box<dyn Val>>> = HashMap::new();
    for (name, c) in d.capacity.iter().flatten() {
        let q = Quantity::parse(&c.value.0).map_err(|e| format!("capacity {name}: {e}"))?;
        let (domain, id) = qualified(name, driver);
        caps.entry(domain.to_string())
            .or_default()
            .insert(CelMapKey::from(id.to_string()), Box::new(QuantityVal(q)));
    }
    let domains = |m: HashMap<String, HashMap<CelMapKey<'static>, Box<dyn Val>>>| {
        let mut keys: Vec<CelString<'static>> =
            m.keys().map(|k| CelString::from(k.clone())).collect();
        keys.sort();
        Domains {
            by_domain: m.into_iter().map(|(k, v)| (k, CelMap::from(v))).collect(),
            keys,
            empty: CelMap::default(),
        }
    };
    Ok(DeviceVal {
        driver: CelString::from(driver.to_string()),
        multi: CelBool::from(multi_visible && d.allow_multiple_allocations.unwrap_or(false)),
        attributes: domains(attrs),
        capacity: domains(caps),
    })
}

// ---- the environment ----

fn function_error(function: &str, message: impl Into<String>) -> ExecutionError {
    ExecutionError::FunctionError {
        function: function.to_string(),
        message: message.into(),
    }
}

fn quantity_arg(args: &[CowVal<'_, '_>], i: usize) -> Result<Quantity, ExecutionError> {
    args.get(i)
        .and_then(|a| a.downcast_ref::<QuantityVal>())
        .map(|q| q.0)
        .ok_or_else(no_such_overload)
}

fn semver_arg<'a>(args: &'a [CowVal<'_, '_>], i: usize) -> Result<&'a SemverVal, ExecutionError> {
    args.get(i)
        .and_then(|a| a.downcast_ref::<SemverVal>())
        .ok_or_else(no_such_overload)
}

fn str_arg<'a>(args: &'a [CowVal<'_, '_>], i: usize) -> Result<&'a str, ExecutionError> {
    args.get(i)
        .and_then(|a| a.downcast_ref::<CelString>())
        .map(|s| s.inner())
        .ok_or_else(no_such_overload)
}

fn bool_arg(args: &[CowVal<'_, '_>], i: usize) -> Result<bool, ExecutionError> {
    args.get(i)
        .and_then(|a| a.downcast_ref::<CelBool>())
        .map(|b| *b.inner())
        .ok_or_else(no_such_overload)
}

fn no_such_overload() -> ExecutionError {
    function_error("", "no such overload")
}

fn owned<'b, 'v, T: Val + 'v>(v: T) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(CowVal::owned(v))
}

/// ceil-free conversion: the quantity as an int64 when it is a whole number in range.
fn as_int64(q: Quantity) -> Option<i64> {
    let n = q.nanos();
    (n % 1_000_000_000 == 0)
        .then(|| i64::try_from(n / 1_000_000_000).ok())
        .flatten()
}

fn quantity_lib(env: &mut Env) -> Result<(), ::cel::DeclarationError> {
    use ::cel::common::types::{INT_TYPE, STRING_TYPE};
    env.add_overload("quantity", "string_to_quantity", vec![STRING_TYPE], |a| {
        let s = str_arg(&a, 0)?;
        Quantity::parse(s)
            .map(|q| CowVal::owned(QuantityVal(q)))
            .map_err(|e| function_error("quantity", e.to_string()))
    })?;
    env.add_overload("isQuantity", "is_quantity_string", vec![STRING_TYPE], |a| {
        owned(CelBool::from(Quantity::parse(str_arg(&a, 0)?).is_ok()))
    })?;
    let q = || QUANTITY_TYPE.to_owned();
    env.add_member_overload("sign", "quantity_sign", q(), vec![], |a| {
        owned(CelInt::from(quantity_arg(&a, 0)?.nanos().signum() as i64))
    })?;
    env.add_member_overload(
        "isGreaterThan",
        "quantity_is_greater_than",
        q(),
        vec![q()],
        |a| owned(CelBool::from(quantity_arg(&a, 0)? > quantity_arg(&a, 1)?)),
    )?;
    env.add_member_overload("isLessThan", "quantity_is_less_than", q(), vec![q()], |a| {
        owned(CelBool::from(quantity_arg(&a, 0)? < quantity_arg(&a, 1)?))
    })?;
    env.add_member_overload("compareTo", "quantity_compare_to", q(), vec![q()], |a| {
        let c = quantity_arg(&a, 0)?.cmp(&quantity_arg(&a, 1)?);
        owned(CelInt::from(c as i64))
    })?;
    env.add_member_overload(
        "asApproximateFloat",
        "quantity_get_float",
        q(),
        vec![],
        |a| owned(CelDouble::from(quantity_arg(&a, 0)?.nanos() as f64 / 1e9)),
    )?;
    env.add_member_overload("asInteger", "quantity_get_int", q(), vec![], |a| {
        as_int64(quantity_arg(&a, 0)?)
            .map(|v| CowVal::owned(CelInt::from(v)))
            .ok_or_else(|| function_error("asInteger", "cannot convert value to integer"))
    })?;
    env.add_member_overload("isInteger", "quantity_is_integer", q(), vec![], |a| {
        owned(CelBool::from(as_int64(quantity_arg(&a, 0)?).is_some()))
    })?;
    env.add_member_overload("add", "quantity_add", q(), vec![q()], |a| {
        let sum = quantity_arg(&a, 0)?
            .nanos()
            .saturating_add(quantity_arg(&a, 1)?.nanos());
        owned(QuantityVal(Quantity::from_nanos(sum)))
    })?;
    env.add_member_overload("add", "quantity_add_int", q(), vec![INT_TYPE], |a| {
        let i = int_arg(&a, 1)?;
        let sum = quantity_arg(&a, 0)?
            .nanos()
            .saturating_add(i128::from(i) * 1_000_000_000);
        owned(QuantityVal(Quantity::from_nanos(sum)))
    })?;
    env.add_member_overload("sub", "quantity_sub", q(), vec![q()], |a| {
        let d = quantity_arg(&a, 0)?
            .nanos()
            .saturating_sub(quantity_arg(&a, 1)?.nanos());
        owned(QuantityVal(Quantity::from_nanos(d)))
    })?;
    env.add_member_overload("sub", "quantity_sub_int", q(), vec![INT_TYPE], |a| {
        let i = int_arg(&a, 1)?;
        let d = quantity_arg(&a, 0)?
            .nanos()
            .saturating_sub(i128::from(i) * 1_000_000_000);
        owned(QuantityVal(Quantity::from_nanos(d)))
    })?;
    Ok(())
}

fn int_arg(args: &[CowVal<'_, '_>], i: usize) -> Result<i64, ExecutionError> {
    args.get(i)
        .and_then(|a| a.downcast_ref::<CelInt>())
        .map(|v| *v.inner())
        .ok_or_else(no_such_overload)
}

fn semver_lib(env: &mut Env) -> Result<(), ::cel::DeclarationError> {
    use ::cel::common::types::{BOOL_TYPE, STRING_TYPE};
    env.add_overload("semver", "string_to_semver", vec![STRING_TYPE], |a| {
        SemverVal::parse(str_arg(&a, 0)?)
            .map(CowVal::owned)
            .map_err(|e| function_error("semver", e))
    })?;
    env.add_overload(
        "semver",
        "string_bool_to_semver",
        vec![STRING_TYPE, BOOL_TYPE],
        |a| {
            let s = str_arg(&a, 0)?;
            let r = if bool_arg(&a, 1)? {
                SemverVal::parse_normalized(s)
            } else {
                SemverVal::parse(s)
            };
            r.map(CowVal::owned)
                .map_err(|e| function_error("semver", e))
        },
    )?;
    env.add_overload("isSemver", "is_semver_string", vec![STRING_TYPE], |a| {
        owned(CelBool::from(SemverVal::parse(str_arg(&a, 0)?).is_ok()))
    })?;
    env.add_overload(
        "isSemver",
        "is_semver_string_bool",
        vec![STRING_TYPE, BOOL_TYPE],
        |a| {
            let s = str_arg(&a, 0)?;
            let ok = if bool_arg(&a, 1)? {
                SemverVal::parse_normalized(s).is_ok()
            } else {
                SemverVal::parse(s).is_ok()
            };
            owned(CelBool::from(ok))
        },
    )?;
    let v = || SEMVER_TYPE.to_owned();
    env.add_member_overload(
        "isGreaterThan",
        "semver_is_greater_than",
        v(),
        vec![v()],
        |a| {
            owned(CelBool::from(
                semver_arg(&a, 0)?.compare(semver_arg(&a, 1)?).is_gt(),
            ))
        },
    )?;
    env.add_member_overload("isLessThan", "semver_is_less_than", v(), vec![v()], |a| {
        owned(CelBool::from(
            semver_arg(&a, 0)?.compare(semver_arg(&a, 1)?).is_lt(),
        ))
    })?;
    env.add_member_overload("compareTo", "semver_compare_to", v(), vec![v()], |a| {
        owned(CelInt::from(
            semver_arg(&a, 0)?.compare(semver_arg(&a, 1)?) as i64
        ))
    })?;
    env.add_member_overload("major", "semver_major", v(), vec![], |a| {
        owned(CelInt::from(semver_arg(&a, 0)?.major as i64))
    })?;
    env.add_member_overload("minor", "semver_minor", v(), vec![], |a| {
        owned(CelInt::from(semver_arg(&a, 0)?.minor as i64))
    })?;
    env.add_member_overload("patch", "semver_patch", v(), vec![], |a| {
        owned(CelInt::from(semver_arg(&a, 0)?.patch as i64))
    })?;
    Ok(())
}

/// The loop variable of the comprehension `cel.bind` expands to: it never loops, and
/// the estimator and the cost limit tell binds apart by it.
const BIND_ITER_VAR: &str = "#unused";

/// `cel.bind(name, init, expr)`: `expr` with `name` bound to `init`.
fn bind_macro() -> Macro {
    Macro::receiver(
        "bind",
        3,
        |helper: &mut MacroExprHelper<'_>, target, args| {
            // The parser calls a macro only with its arity; a call that is not
            // `cel.bind(a, b, c)` is left to be an ordinary (undeclared) call.
            if args.len() != 3
                || !matches!(target.as_ref().map(|t| &t.expr), Some(Node::Ident(n)) if n == "cel")
            {
                return Ok(None);
            }
            let name = match &args[0].expr {
                Node::Ident(n) => n.clone(),
                _ => {
                    return Err(helper.new_error(
                        args[0].id,
                        "cel.bind() variable names must be simple identifiers",
                    ));
                }
            };
            let (Some(result), Some(init)) = (args.pop(), args.pop()) else {
                return Ok(None);
            };
            target.take();
            let iter_range =
                helper.next_expr(Node::List(::cel::common::ast::ListExpr::new(Vec::new())));
            let loop_cond = helper.next_expr(Node::Literal(LiteralValue::Boolean(false.into())));
            let loop_step = helper.next_expr(Node::Ident(name.clone()));
            Ok(Some(helper.next_expr(Node::Comprehension(Box::new(
                ::cel::common::ast::ComprehensionExpr {
                    iter_range,
                    iter_var: BIND_ITER_VAR.to_string(),
                    iter_var2: None,
                    accu_var: name,
                    accu_init: init,
                    loop_cond,
                    loop_step,
                    result,
                },
            )))))
        },
    )
}

static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| {
    let mut env = Env::stdlib();
    let built = env
        .add_extension(::cel::extensions::strings)
        .and_then(|()| quantity_lib(&mut env))
        .and_then(|()| semver_lib(&mut env))
        .and_then(|()| env.add_macro(bind_macro()))
        .and_then(|()| limit::declare(&mut env))
        .and_then(|()| env.add_type(QUANTITY_TYPE.to_owned()))
        .and_then(|()| env.add_type(SEMVER_TYPE.to_owned()));
    if let Err(e) = built {
        // Declarations are fixed at build time; the unit tests build this environment.
        panic!("building the DRA CEL environment: {e}");
    }
    Arc::new(env)
});

// ---- compiling ----

/// cel-go's rendering of parse errors: position, message, the source line and a caret.
fn show_parse_errors(errs: &ParseErrors, src: &str) -> String {
    let lines: Vec<&str> = src.split('\n').collect();
    // Past the nesting limit the parser gives up; what it says after that is noise.
    if let Some(e) = errs
        .errors
        .iter()
        .find(|e| e.msg.contains("Recursion limit"))
    {
        return show_error(e, &lines);
    }
    let mut out = Vec::new();
    for e in &errs.errors {
        out.push(show_error(e, &lines));
    }
    out.join("\n")
}

fn show_error(e: &ParseError, lines: &[&str]) -> String {
    let (line, col) = e.pos;
    if e.msg.contains("Recursion limit") {
        return format!(
            "ERROR: <input>:{line}:{col}: expression recursion limit exceeded: {MAX_DEPTH}"
        );
    }
    let mut s = format!("ERROR: <input>:{line}:{col}: {}", e.msg);
    if line >= 1
        && let Some(text) = lines.get(line as usize - 1)
    {
        let text = text.replace('\t', " ");
        let dots: String = text
            .chars()
            .take((col.max(1) - 1) as usize)
            .map(|c| if c.len_utf8() > 1 { '\u{ff0e}' } else { '.' })
            .collect();
        s += &format!("\n | {text}\n | {dots}^");
    }
    s
}

/// The deepest path from the root, counted without recursion.
fn depth(e: &IdedExpr) -> usize {
    let mut max = 0;
    let mut stack = vec![(e, 1usize)];
    while let Some((e, d)) = stack.pop() {
        max = max.max(d);
        for c in children(e) {
            stack.push((c, d + 1));
        }
    }
    max
}

fn children(e: &IdedExpr) -> Vec<&IdedExpr> {
    match &e.expr {
        Node::Call(c) => c.target.iter().map(|t| &**t).chain(&c.args).collect(),
        Node::Select(s) => vec![&s.operand],
        Node::List(l) => l.elements.iter().collect(),
        Node::Map(m) => m
            .entries
            .iter()
            .flat_map(|en| match &en.expr {
                EntryExpr::MapEntry(me) => vec![&me.key, &me.value],
                EntryExpr::StructField(f) => vec![&f.value],
            })
            .collect(),
        Node::Struct(s) => s
            .entries
            .iter()
            .flat_map(|en| match &en.expr {
                EntryExpr::MapEntry(me) => vec![&me.key, &me.value],
                EntryExpr::StructField(f) => vec![&f.value],
            })
            .collect(),
        Node::Comprehension(c) => vec![
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ],
        _ => Vec::new(),
    }
}

/// Names an expression may refer to besides `device` and comprehension variables.
const TYPE_NAMES: &[&str] = &[
    "bool",
    "bytes",
    "double",
    "duration",
    "dyn",
    "int",
    "list",
    "map",
    "null_type",
    "string",
    "timestamp",
    "type",
    "uint",
];

/// Whether the environment has a function of this name, asked by calling it with no
/// arguments: an unknown name is an undeclared reference, a known one a wrong call.
fn declared(name: &str, member: bool) -> bool {
    static KNOWN: LazyLock<Mutex<HashMap<(String, bool), bool>>> = LazyLock::new(Default::default);
    let mut known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    *known.entry((name.to_string(), member)).or_insert_with(|| {
        let null = || IdedExpr {
            id: 1,
            expr: Node::Literal(LiteralValue::Null),
        };
        let expr = IdedExpr {
            id: 2,
            expr: Node::Call(::cel::common::ast::CallExpr {
                func_name: name.to_string(),
                target: member.then(|| Box::new(null())),
                args: Vec::new(),
            }),
        };
        let ctx = Context::with_env(ENV.clone());
        !matches!(
            ::cel::Value::resolve(&expr, &ctx),
            Err(ExecutionError::UndeclaredReference(_))
        )
    })
}

/// What upstream's type checker rejects that the `cel` crate would only find when it
/// runs: references to undeclared variables and functions.
fn check(e: &IdedExpr, at: &dyn Fn(u64, String) -> String) -> Result<(), String> {
    let mut bound: BTreeSet<&str> = BTreeSet::new();
    let mut stack = vec![e];
    while let Some(n) = stack.pop() {
        if let Node::Comprehension(c) = &n.expr {
            bound.insert(&c.iter_var);
            bound.insert(&c.accu_var);
            if let Some(v) = &c.iter_var2 {
                bound.insert(v);
            }
        }
        stack.extend(children(n));
    }
    let mut stack = vec![e];
    while let Some(n) = stack.pop() {
        match &n.expr {
            Node::Ident(name)
                if name != "device"
                    && !bound.contains(name.as_str())
                    && !TYPE_NAMES.contains(&name.as_str()) =>
            {
                return Err(at(n.id, undeclared(name)));
            }
            Node::Call(c)
                if !c.func_name.starts_with('_')
                    && !c.func_name.starts_with('@')
                    && !c.func_name.starts_with('!')
                    && !c.func_name.starts_with('-') =>
            {
                let qualified = match &c.target {
                    Some(t) => match &t.expr {
                        Node::Ident(ns) if !bound.contains(ns.as_str()) && ns != "device" => {
                            Some(format!("{ns}.{}", c.func_name))
                        }
                        _ => None,
                    },
                    None => None,
                };
                if let Some(q) = &qualified {
                    if let Some((_, lib)) = NOT_PROVIDED.iter().find(|(f, _)| f == q) {
                        return Err(at(n.id, not_provided(q, lib)));
                    }
                    if !declared(q, false) {
                        return Err(at(n.id, undeclared(q)));
                    }
                    // The namespace is not a variable: do not look at it.
                    stack.extend(&c.args);
                    continue;
                }
                let member = c.target.is_some();
                if !declared(&c.func_name, member) && !declared(&c.func_name, !member) {
                    if let Some((_, lib)) = NOT_PROVIDED.iter().find(|(f, _)| *f == c.func_name) {
                        return Err(at(n.id, not_provided(&c.func_name, lib)));
                    }
                    return Err(at(n.id, undeclared(&c.func_name)));
                }
            }
            _ => {}
        }
        stack.extend(children(n));
    }
    Ok(())
}

fn undeclared(name: &str) -> String {
    format!("undeclared reference to '{name}' (in container '')")
}

fn not_provided(name: &str, lib: &str) -> String {
    format!("function '{name}' of the Kubernetes {lib} library is not supported by kubestep")
}

/// An error at a character offset of the source, as cel-go shows it.
fn at_offset(src: &str, offset: usize, msg: &str) -> String {
    let before: String = src.chars().take(offset).collect();
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    let lines: Vec<&str> = src.split('\n').collect();
    show_error(
        &ParseError {
            source: None,
            pos: (line as isize, col as isize),
            msg: msg.to_string(),
            expr_id: 0,
            source_info: None,
        },
        &lines,
    )
}

fn parse_checked(src: &str) -> Result<Program, String> {
    let (expr, info) = ENV
        .parser()
        .max_recursion_depth(MAX_DEPTH as u16)
        .parse_with_source_info(src)
        .map_err(|e| show_parse_errors(&e, src))?;
    if depth(&expr) > MAX_DEPTH {
        return Err(format!(
            "ERROR: <input>:1:1: expression recursion limit exceeded: {MAX_DEPTH}"
        ));
    }
    let at = |id: u64, msg: String| {
        let offset = info.offset_for(id).map_or(0, |(start, _)| start as usize);
        at_offset(src, offset, &msg)
    };
    check(&expr, &at)?;
    let worst = cost::estimate(&expr);
    if worst > MAX_COST {
        // Upstream's API validation refuses such a selector with these words.
        return Err(format!(
            "too complex, exceeds cost limit (estimated cost {worst}, limit {MAX_COST})"
        ));
    }
    let mut expr = expr;
    limit::instrument(&mut expr);
    Ok(Program { expr })
}

/// Compiles a selector (cached: a selector is compiled once per process). The error is
/// upstream's, `compilation failed: ...`.
pub fn compile(src: &str) -> Result<Expr, String> {
    type Cache = HashMap<String, Result<Expr, String>>;
    static CACHE: LazyLock<Mutex<Cache>> = LazyLock::new(Default::default);
    if let Some(r) = CACHE.lock().unwrap_or_else(|e| e.into_inner()).get(src) {
        return r.clone();
    }
    let r = compile_uncached(src).map_err(|e| format!("compilation failed: {e}"));
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if cache.len() >= 4096 {
        cache.clear();
    }
    cache.insert(src.to_string(), r.clone());
    r
}

fn compile_uncached(src: &str) -> Result<Expr, String> {
    if src.len() > MAX_LEN {
        return Err(format!(
            "expression is {} bytes, longer than the limit of {MAX_LEN}",
            src.len()
        ));
    }
    if src.len() <= SHORT {
        return parse_checked(src).map(Arc::new);
    }
    // The parser recurses once per nesting level, and so does dropping a deep tree: both
    // happen on a thread with room for the deepest 10 KiB expression.
    let owned = src.to_string();
    std::thread::Builder::new()
        .name("cel-compile".into())
        .stack_size(PARSE_STACK)
        .spawn(move || parse_checked(&owned).map(Arc::new))
        .map_err(|e| format!("starting the CEL compiler: {e}"))?
        .join()
        .unwrap_or_else(|_| Err("the CEL parser failed".into()))
}

// ---- evaluating ----

/// cel-go's words for what went wrong at run time.
fn runtime_error(e: ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        // The `cel` crate's own words for an operator or comparison on the wrong types
        // (`Unsupported binary operator 'add': ...`) are cel-go's `no such overload`.
        ExecutionError::NoSuchOverload(_)
        | ExecutionError::UnexpectedType { .. }
        | ExecutionError::UnsupportedBinaryOperator(..)
        | ExecutionError::ValuesNotComparable(..) => "no such overload".into(),
        ExecutionError::UndeclaredReference(r) => format!("no such attribute(s): {r}"),
        ExecutionError::DivisionByZero(_) => "division by zero".into(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".into(),
        ExecutionError::Overflow(..) => "integer overflow".into(),
        ExecutionError::IndexOutOfBounds(i) => format!("index out of bounds: {i:?}"),
        ExecutionError::FunctionError { message, .. } if message == "no such overload" => message,
        ExecutionError::FunctionError { message, .. } => message,
        other => other.to_string(),
    }
}

/// Whether the device matches the selector. The result must be a bool (upstream's
/// message otherwise). `device.allowMultipleAllocations` reads false unless
/// `multi_visible` (the allocators without consumable capacity do not pass it on).
pub fn matches(e: &Program, driver: &str, d: &Device, multi_visible: bool) -> Result<bool, String> {
    let device = device_val(driver, d, multi_visible)?;
    let mut ctx = Context::with_env(ENV.clone());
    ctx.add_variable_as_val("device", Box::new(device));
    limit::start();
    let v = ::cel::Value::resolve_val(&e.expr, &ctx);
    if limit::exceeded() {
        return Err(limit::COST_EXCEEDED.into());
    }
    let v = v.map_err(runtime_error)?;
    match v.downcast_ref::<CelBool>() {
        Some(b) => Ok(*b.inner()),
        None => {
            let t = v.get_type().name().to_string();
            Err(format!(
                "CEL result of type {t} could not be converted to bool: unsupported type conversion from '{t}' to bool"
            ))
        }
    }
}

#[cfg(test)]
mod tests;
