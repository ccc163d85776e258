//! The run time cost limit. The `cel` crate counts nothing while it evaluates, and it
//! copies values where cel-go shares them, so the compiled expression is rewritten to
//! pass every place that can build or copy a value through a function of ours that
//! charges a per-evaluation budget first:
//!
//! * `+` on strings, bytes and lists, and the string-building functions of the strings
//!   extension (`replace`, `split`, `join`, `format`, `strings.quote`): the size of the
//!   result is worked out from the arguments and charged before it is built;
//! * list and map literal entries and `cel.bind` initializers and results, which the
//!   crate copies: charged by the size of the value copied;
//! * other functions that may give a string, list or map (`upperAscii`, `string`,
//!   `dyn`, ...): charged by the size of their result, which is never larger than
//!   their arguments;
//! * comprehension ranges: each element is copied into the loop variable and each
//!   iteration evaluates the loop body, so both are charged up front.
//!
//! Strings are charged a tenth per byte, as cel-go's traversal cost, and each list or
//! map entry one: so the budget (upstream's limit, 1,000,000) bounds what one
//! evaluation can allocate to about 10 MB of strings plus about 50 bytes per entry.
//! Once the budget is spent, evaluation fails with cel-go's error, and that error wins
//! over any result, as the cancelled evaluation does upstream. The count is kubestep's
//! own (cel-go counts every node and a few functions by size), so the limit bites at
//! somewhat different points; selectors that stay under upstream's estimate stay far
//! under it.

use std::cell::Cell;

use ::cel::common::ast::{CallExpr, EntryExpr, Expr as Node, LiteralValue};
use ::cel::common::types::{CelBytes, CelInt, CelList, CelMap, CelString, DYN_TYPE, INT_TYPE};
use ::cel::common::value::{CowVal, Val};
use ::cel::context::VariableResolver;
use ::cel::{Context, Env, ExecutionError, IdedExpr};

use super::{BIND_ITER_VAR, Domains, ENV, MAX_COST};

/// cel-go's words when the runtime cost limit is hit.
pub const COST_EXCEEDED: &str = "operation cancelled: actual cost limit exceeded";

thread_local! {
    static LEFT: Cell<u64> = const { Cell::new(MAX_COST) };
    static SPENT: Cell<bool> = const { Cell::new(false) };
}

/// Starts an evaluation with the whole budget.
pub(super) fn start() {
    LEFT.set(MAX_COST);
    SPENT.set(false);
}

/// Whether the evaluation ran out of budget: then its result, whatever it is, does not
/// stand (`x || true` would otherwise hide the failure).
pub(super) fn exceeded() -> bool {
    SPENT.get()
}

fn charge(n: u64) -> Result<(), ExecutionError> {
    let left = LEFT.get();
    if n > left || SPENT.get() {
        LEFT.set(0);
        SPENT.set(true);
        return Err(ExecutionError::function_error("", COST_EXCEEDED));
    }
    LEFT.set(left - n);
    Ok(())
}

/// A tenth per byte, rounded up.
fn tenth(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(10)
}

/// What copying `v` costs: its strings' bytes at a tenth each, one per entry.
fn weight(v: &dyn Val) -> u64 {
    if let Some(s) = v.downcast_ref::<CelString>() {
        return 1 + tenth(s.inner().len());
    }
    if let Some(b) = v.downcast_ref::<CelBytes>() {
        return 1 + tenth(b.inner().len());
    }
    if let Some(l) = v.downcast_ref::<CelList>() {
        return l
            .inner()
            .iter()
            .fold(1u64, |a, e| a.saturating_add(weight(e.as_ref())));
    }
    if let Some(m) = v.downcast_ref::<CelMap>() {
        return m.inner().iter().fold(1u64, |a, (k, e)| {
            a.saturating_add(weight(k.inner()))
                .saturating_add(weight(e.as_ref()))
        });
    }
    if let Some(d) = v.downcast_ref::<Domains>() {
        return d.by_domain.iter().fold(1u64, |a, (k, m)| {
            a.saturating_add(1 + tenth(k.len()))
                .saturating_add(weight(m))
        });
    }
    1
}

fn arg<'a, 'b, 'v>(
    args: &'a [CowVal<'b, 'v>],
    i: usize,
) -> Result<&'a (dyn Val + 'v), ExecutionError> {
    args.get(i)
        .map(|a| a.as_ref())
        .ok_or_else(|| ExecutionError::function_error("", "no such overload"))
}

fn string<'a>(args: &'a [CowVal<'_, '_>], i: usize) -> Option<&'a str> {
    args.get(i)
        .and_then(|a| a.downcast_ref::<CelString>())
        .map(|s| s.inner())
}

fn int(args: &[CowVal<'_, '_>], i: usize) -> Option<i64> {
    args.get(i)
        .and_then(|a| a.downcast_ref::<CelInt>())
        .map(|n| *n.inner())
}

/// How many parts a `limit` (negative: none) allows of `found`.
fn at_most(found: usize, limit: Option<i64>) -> usize {
    match limit.map(usize::try_from) {
        Some(Ok(n)) => found.min(n),
        _ => found,
    }
}

// ---- the functions the rewritten expression calls ----

/// `a + b`, charged by the size of the result.
fn add<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (l, r) = (arg(&args, 0)?, arg(&args, 1)?);
    let sized = |v: &dyn Val| {
        v.downcast_ref::<CelString>().is_some()
            || v.downcast_ref::<CelBytes>().is_some()
            || v.downcast_ref::<CelList>().is_some()
    };
    charge(if sized(l) || sized(r) {
        weight(l).saturating_add(weight(r))
    } else {
        1
    })?;
    let adder = l.as_adder().ok_or_else(|| {
        ExecutionError::no_such_overload(
            "_+_",
            vec![
                l.get_type().name().to_owned(),
                r.get_type().name().to_owned(),
            ],
        )
    })?;
    Ok(CowVal::Owned(adder.add(r)?.into_owned()))
}

/// A value about to be copied (or just built): charged by its size.
fn keep<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    charge(weight(arg(&args, 0)?))?;
    args.pop()
        .ok_or_else(|| ExecutionError::function_error("", "no such overload"))
}

/// A comprehension's range: every element is copied into the loop variable and every
/// iteration evaluates a body of the given weight.
fn range<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let r = arg(&args, 0)?;
    let n = r.as_sizer().map_or(0, |s| *s.size().inner()).max(0) as u64;
    let body = int(&args, 1).unwrap_or(1).max(1) as u64;
    charge(weight(r).saturating_add(n.saturating_mul(body)))?;
    args.truncate(1);
    args.pop()
        .ok_or_else(|| ExecutionError::function_error("", "no such overload"))
}

fn replace<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    if let (Some(s), Some(old), Some(new)) = (string(&args, 0), string(&args, 1), string(&args, 2))
    {
        let found = if old.is_empty() {
            s.chars().count() + 1
        } else {
            s.matches(old).count()
        };
        let n = at_most(found, int(&args, 3)) as u64;
        let out = (s.len() as u64)
            .saturating_sub(n.saturating_mul(old.len() as u64))
            .saturating_add(n.saturating_mul(new.len() as u64));
        charge(
            1 + tenth(s.len())
                .saturating_mul(2)
                .saturating_add(out.div_ceil(10)),
        )?;
    }
    delegate("replace", true, &args)
}

fn split<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    if let (Some(s), Some(sep)) = (string(&args, 0), string(&args, 1)) {
        let found = if sep.is_empty() {
            s.chars().count()
        } else {
            s.matches(sep).count() + 1
        };
        let parts = at_most(found, int(&args, 2)) as u64;
        charge(1 + tenth(s.len()).saturating_mul(3).saturating_add(parts))?;
    }
    delegate("split", true, &args)
}

fn join<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    if let Some(l) = args.first().and_then(|a| a.downcast_ref::<CelList>()) {
        let n = l.inner().len() as u64;
        let sep = string(&args, 1).map_or(0, str::len) as u64;
        let items = l.inner().iter().fold(0u64, |a, e| {
            let len = e.downcast_ref::<CelString>().map_or(0, |s| s.inner().len());
            a.saturating_add(len as u64)
        });
        let out = items.saturating_add(n.saturating_sub(1).saturating_mul(sep));
        charge(1 + out.div_ceil(10))?;
    }
    delegate("join", true, &args)
}

/// The longest a `format` clause can write beyond its argument: `%f` and `%e` with
/// the largest precision of the largest double.
const CLAUSE: u64 = 420;

fn format<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    if let (Some(f), Some(l)) = (
        string(&args, 0),
        args.get(1).and_then(|a| a.downcast_ref::<CelList>()),
    ) {
        // Each clause writes one argument: quoted, listed or as digits, at most a
        // couple of bytes per byte of it (its weight counts a tenth per byte).
        let out = l.inner().iter().fold(f.len() as u64, |a, e| {
            a.saturating_add(weight(e.as_ref()).saturating_mul(20).saturating_add(CLAUSE))
        });
        charge(1 + out.div_ceil(10))?;
    }
    delegate("format", true, &args)
}

fn quote<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    if let Some(s) = string(&args, 0) {
        // At worst every character escaped as `\u{10ffff}`, ten bytes for one.
        charge(1 + (s.len() as u64).saturating_add(2))?;
    }
    delegate("strings.quote", false, &args)
}

/// The arguments of a delegated call, as variables `#0`, `#1`, ... borrowed, not
/// copied.
struct Args<'a, 'b, 'v>(&'a [CowVal<'b, 'v>]);

impl VariableResolver for Args<'_, '_, '_> {
    fn resolve<'x>(&'x self, variable: &str) -> Option<CowVal<'x, 'x>> {
        let i: usize = variable.strip_prefix('#')?.parse().ok()?;
        self.0.get(i).map(|a| CowVal::Borrowed(a.as_ref()))
    }
}

/// Calls the environment's own function, once its cost is charged: the crate's
/// functions are not reachable but through an expression.
fn delegate<'b, 'v>(
    name: &str,
    member: bool,
    args: &[CowVal<'b, 'v>],
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let var = |i: usize| IdedExpr {
        id: 0,
        expr: Node::Ident(format!("#{i}")),
    };
    let call = if member {
        CallExpr {
            func_name: name.to_string(),
            target: Some(Box::new(var(0))),
            args: (1..args.len()).map(var).collect(),
        }
    } else {
        CallExpr {
            func_name: name.to_string(),
            target: None,
            args: (0..args.len()).map(var).collect(),
        }
    };
    let expr = IdedExpr {
        id: 0,
        expr: Node::Call(call),
    };
    let resolver = Args(args);
    let mut ctx = Context::with_env(ENV.clone());
    ctx.set_variable_resolver(&resolver);
    let out = ::cel::Value::resolve_val(&expr, &ctx)?;
    // The result is copied out of the context that borrows the arguments; these
    // functions give strings and lists of strings.
    let text = |v: &dyn Val| {
        v.downcast_ref::<CelString>()
            .map(|s| CelString::from(s.inner().to_owned()))
    };
    if let Some(s) = text(out.as_ref()) {
        return Ok(CowVal::owned(s));
    }
    if let Some(l) = out.downcast_ref::<CelList>() {
        let mut items: Vec<Box<dyn Val + 'v>> = Vec::with_capacity(l.inner().len());
        for e in l.inner() {
            items.push(Box::new(text(e.as_ref()).ok_or_else(unexpected)?));
        }
        return Ok(CowVal::owned(CelList::from(items)));
    }
    Err(unexpected())
}

fn unexpected() -> ExecutionError {
    ExecutionError::function_error("", "no such overload")
}

/// Declares the functions the rewritten expressions call. Their names cannot be
/// written in CEL source.
pub(super) fn declare(env: &mut Env) -> Result<(), ::cel::DeclarationError> {
    let dyns = |n: usize| (0..n).map(|_| DYN_TYPE).collect::<Vec<_>>();
    env.add_overload("@ks.add", "ks_add", dyns(2), add)?;
    env.add_overload("@ks.keep", "ks_keep", dyns(1), keep)?;
    env.add_overload("@ks.range", "ks_range", vec![DYN_TYPE, INT_TYPE], range)?;
    for n in [3, 4] {
        env.add_overload("@ks.replace", &format!("ks_replace_{n}"), dyns(n), replace)?;
    }
    for n in [2, 3] {
        env.add_overload("@ks.split", &format!("ks_split_{n}"), dyns(n), split)?;
    }
    for n in [1, 2] {
        env.add_overload("@ks.join", &format!("ks_join_{n}"), dyns(n), join)?;
    }
    env.add_overload("@ks.format", "ks_format", dyns(2), format)?;
    env.add_overload("@ks.quote", "ks_quote", dyns(1), quote)?;
    Ok(())
}

// ---- rewriting ----

/// Functions whose results are scalars or the device's own values: nothing to charge.
const SMALL: &[&str] = &[
    "size",
    "int",
    "uint",
    "double",
    "bool",
    "type",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "indexOf",
    "lastIndexOf",
    "quantity",
    "isQuantity",
    "semver",
    "isSemver",
    "sign",
    "asInteger",
    "isInteger",
    "asApproximateFloat",
    "isGreaterThan",
    "isLessThan",
    "compareTo",
    "add",
    "sub",
    "major",
    "minor",
    "patch",
];

/// Whether evaluating `e` builds a new value that nothing else holds, so that storing
/// it moves rather than copies.
fn fresh(e: &IdedExpr) -> bool {
    match &e.expr {
        Node::List(_) | Node::Map(_) => true,
        Node::Call(c) => c.func_name.starts_with("@ks."),
        _ => false,
    }
}

fn wrap(e: &mut IdedExpr, func: &str, extra: Option<IdedExpr>) {
    let inner = std::mem::replace(
        e,
        IdedExpr {
            id: 0,
            expr: Node::Literal(LiteralValue::Null),
        },
    );
    let id = inner.id;
    let mut args = vec![inner];
    args.extend(extra);
    *e = IdedExpr {
        id,
        expr: Node::Call(CallExpr {
            func_name: func.to_string(),
            target: None,
            args,
        }),
    };
}

/// Charges a value stored where the crate will copy it, unless it is a literal (the
/// loop charge covers literals in loops; outside them each is copied once) or fresh.
fn keep_stored(e: &mut IdedExpr) {
    if !fresh(e) && !matches!(e.expr, Node::Literal(_)) {
        wrap(e, "@ks.keep", None);
    }
}

/// What one pass of a loop body costs: its nodes, and its string literals, which are
/// copied when stored.
fn body_weight(e: &IdedExpr) -> i64 {
    let mut n = 0u64;
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        n = n.saturating_add(1);
        if let Node::Literal(LiteralValue::String(s)) = &x.expr {
            n = n.saturating_add(tenth(s.inner().len()));
        }
        stack.extend(super::children(x));
    }
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Rewrites `e` to count its cost as it runs (see the module's documentation).
pub(super) fn instrument(e: &mut IdedExpr) {
    rewrite(e, None);
}

/// `append` names the accumulator of a `map` or `filter` whose loop step `e` is: its
/// `@result + [x]` stays as it is, so the crate appends in place (the element is
/// charged as the list literal's).
fn rewrite(e: &mut IdedExpr, append: Option<&str>) {
    match &mut e.expr {
        Node::Literal(_) | Node::Ident(_) | Node::Unspecified => {}
        Node::Select(s) => rewrite(&mut s.operand, None),
        Node::List(l) => {
            for el in &mut l.elements {
                rewrite(el, None);
                keep_stored(el);
            }
        }
        Node::Map(m) => {
            for en in &mut m.entries {
                match &mut en.expr {
                    EntryExpr::MapEntry(me) => {
                        rewrite(&mut me.key, None);
                        rewrite(&mut me.value, None);
                        keep_stored(&mut me.key);
                        keep_stored(&mut me.value);
                    }
                    EntryExpr::StructField(f) => {
                        rewrite(&mut f.value, None);
                        keep_stored(&mut f.value);
                    }
                }
            }
        }
        Node::Struct(s) => {
            for en in &mut s.entries {
                if let EntryExpr::StructField(f) = &mut en.expr {
                    rewrite(&mut f.value, None);
                    keep_stored(&mut f.value);
                }
            }
        }
        Node::Comprehension(c) => {
            if c.iter_var == BIND_ITER_VAR {
                rewrite(&mut c.accu_init, None);
                rewrite(&mut c.result, None);
                keep_stored(&mut c.accu_init);
                keep_stored(&mut c.result);
                return;
            }
            // The crate's in-place append applies exactly when these hold.
            let appends = matches!(&c.accu_init.expr, Node::List(l) if l.elements.is_empty())
                && matches!(c.loop_cond.expr, Node::Literal(_))
                && matches!(&c.result.expr, Node::Ident(n) if *n == c.accu_var);
            let body = body_weight(&c.loop_cond).saturating_add(body_weight(&c.loop_step));
            rewrite(&mut c.iter_range, None);
            rewrite(&mut c.accu_init, None);
            rewrite(&mut c.loop_cond, None);
            rewrite(&mut c.loop_step, appends.then_some(c.accu_var.as_str()));
            rewrite(&mut c.result, None);
            let id = c.iter_range.id;
            wrap(
                &mut c.iter_range,
                "@ks.range",
                Some(IdedExpr {
                    id,
                    expr: Node::Literal(LiteralValue::Int(body.into())),
                }),
            );
        }
        Node::Call(call) => rewrite_call(call, append),
    }
    // Functions that may hand back a string, list or map of their own.
    if let Node::Call(call) = &e.expr {
        let name = call.func_name.as_str();
        let operator =
            name.starts_with('_') || name.starts_with('@') || name == "!_" || name == "-_";
        if !operator && !SMALL.contains(&name) {
            wrap(e, "@ks.keep", None);
        }
    }
}

fn rewrite_call(call: &mut CallExpr, append: Option<&str>) {
    let is_append = |call: &CallExpr, accu: &str| {
        call.func_name == "_+_"
            && call.target.is_none()
            && matches!(call.args.as_slice(),
                [l, r] if matches!(&l.expr, Node::Ident(n) if n == accu)
                    && matches!(r.expr, Node::List(_)))
    };
    let namespace = matches!(call.target.as_deref().map(|t| &t.expr),
        Some(Node::Ident(ns)) if ns == "strings");
    if let Some(t) = &mut call.target
        && !namespace
    {
        rewrite(t, None);
    }
    let conditional_append = append.filter(|_| call.func_name == "_?_:_");
    for (i, a) in call.args.iter_mut().enumerate() {
        // `cond ? @result + [x] : @result`, the step of a filtering map.
        rewrite(a, conditional_append.filter(|_| i == 1));
    }
    if append.is_some_and(|accu| is_append(call, accu)) {
        return;
    }
    let name = call.func_name.as_str();
    let renamed = match (name, call.target.is_some(), namespace) {
        ("_+_", false, _) => Some("@ks.add"),
        ("replace", true, false) => Some("@ks.replace"),
        ("split", true, false) => Some("@ks.split"),
        ("join", true, false) => Some("@ks.join"),
        ("format", true, false) => Some("@ks.format"),
        ("quote", true, true) => Some("@ks.quote"),
        _ => None,
    };
    let Some(renamed) = renamed else {
        return;
    };
    call.func_name = renamed.to_string();
    if let Some(t) = call.target.take()
        && !namespace
    {
        call.args.insert(0, *t);
    }
}
