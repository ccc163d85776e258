//! The worst-case cost of a selector, estimated before it runs the way cel-go's checker
//! estimates it (checker/cost.go) with the Kubernetes library's estimates
//! (apiserver/pkg/cel/library/cost.go) and DRA's declared sizes of the device
//! (dynamic-resource-allocation/cel/compile.go). Only the maximum is kept for costs, as
//! only the maximum is compared with the limit; sizes keep both ends, as `replace`
//! divides by the smallest possible length of what it replaces.
//!
//! Without a type checker, kinds are inferred from the expression's shape; where the
//! kind is unknown the estimate covers every kind it could be, as cel-go does for `dyn`.
//! A size that cannot be bounded is unknown (`0..u64::MAX`) and makes every cost that
//! depends on it the largest there is, as upstream.

use std::rc::Rc;

use ::cel::IdedExpr;
use ::cel::common::ast::{EntryExpr, Expr as Node, LiteralValue};

/// What a value may be, as far as costs tell kinds apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Bool, int, uint, double, null, type: size 1.
    Scalar,
    Str,
    Bytes,
    List,
    Map,
    /// Quantities and semantic versions: compared in constant time.
    Opaque,
    /// The `device` variable.
    Device,
    Dyn,
}

/// A value's estimate: its kind, its size range, and for containers their elements'
/// (and a map's keys') estimates.
#[derive(Debug, Clone)]
struct Est {
    kind: Kind,
    min: u64,
    max: u64,
    elem: Option<Rc<Est>>,
    key: Option<Rc<Est>>,
}

const UNKNOWN: u64 = u64::MAX;

impl Est {
    fn sized(kind: Kind, min: u64, max: u64) -> Est {
        Est {
            kind,
            min,
            max,
            elem: None,
            key: None,
        }
    }
    fn scalar() -> Est {
        Est::sized(Kind::Scalar, 1, 1)
    }
    fn unknown(kind: Kind) -> Est {
        Est::sized(kind, 0, UNKNOWN)
    }
    fn container(kind: Kind, min: u64, max: u64, key: Option<Est>, elem: Option<Est>) -> Est {
        Est {
            kind,
            min,
            max,
            elem: elem.map(Rc::new),
            key: key.map(Rc::new),
        }
    }

    /// Covers both (cel-go's `Union`).
    fn union(&self, o: &Est) -> Est {
        let kind = if self.kind == o.kind {
            self.kind
        } else {
            Kind::Dyn
        };
        Est {
            kind,
            min: self.min.min(o.min),
            max: self.max.max(o.max),
            elem: union_opt(&self.elem, &o.elem),
            key: union_opt(&self.key, &o.key),
        }
    }
}

fn union_opt(a: &Option<Rc<Est>>, b: &Option<Rc<Est>>) -> Option<Rc<Est>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(Rc::new(a.union(b))),
        (Some(x), None) | (None, Some(x)) => Some(x.clone()),
        (None, None) => None,
    }
}

/// `ceil(size * factor)`, saturating (cel-go's `multiplyByCostFactor`).
fn factor(size: u64, f: f64) -> u64 {
    let v = (size as f64 * f).ceil();
    if v >= u64::MAX as f64 {
        UNKNOWN
    } else {
        v as u64
    }
}

/// The string traversal cost per character.
const TRAVERSAL: f64 = 0.1;
/// The regex cost per pattern character.
const REGEX: f64 = 0.25;
const LIST_CREATE: u64 = 10;
const MAP_CREATE: u64 = 30;

// DRA's declared sizes (resource.k8s.io/v1).
const DRIVER_MAX: u64 = 63;
const DOMAIN_MAX: u64 = 63;
const ID_MAX: u64 = 32;
const ATTRIBUTE_MAX: u64 = 64;
const PER_DEVICE: u64 = 32;

/// `device.attributes` or `device.capacity`: domain → id → value, 32 of each at most.
fn domains(value: Est) -> Est {
    let inner = Est::container(
        Kind::Map,
        0,
        PER_DEVICE,
        Some(Est::sized(Kind::Str, 0, ID_MAX)),
        Some(value),
    );
    Est::container(
        Kind::Map,
        0,
        PER_DEVICE,
        Some(Est::sized(Kind::Str, 0, DOMAIN_MAX)),
        Some(inner),
    )
}

fn device_field(field: &str) -> Est {
    match field {
        "driver" => Est::sized(Kind::Str, 0, DRIVER_MAX),
        "allowMultipleAllocations" => Est::scalar(),
        "attributes" => domains(Est::sized(Kind::Dyn, 0, ATTRIBUTE_MAX)),
        "capacity" => domains(Est::unknown(Kind::Opaque)),
        _ => Est::unknown(Kind::Dyn),
    }
}

/// The worst-case cost of evaluating `e`.
pub(super) fn estimate(e: &IdedExpr) -> u64 {
    Coster { vars: Vec::new() }.cost(e).0
}

struct Coster {
    /// Comprehension and `cel.bind` variables in scope, innermost last.
    vars: Vec<(String, Est)>,
}

impl Coster {
    fn var(&self, name: &str) -> Option<Est> {
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, e)| e.clone())
    }

    fn cost(&mut self, e: &IdedExpr) -> (u64, Est) {
        match &e.expr {
            Node::Literal(l) => (0, literal(l)),
            Node::Ident(name) => {
                let est = match self.var(name) {
                    Some(v) => v,
                    None if name == "device" => Est::sized(Kind::Device, 1, 1),
                    None => Est::scalar(), // a type name
                };
                (1, est)
            }
            Node::Select(s) => {
                let (c, operand) = self.cost(&s.operand);
                if s.test {
                    return (c.saturating_add(1), Est::scalar());
                }
                let est = match operand.kind {
                    Kind::Device => device_field(&s.field),
                    Kind::Map => elem(&operand),
                    _ => Est::unknown(Kind::Dyn),
                };
                let own = u64::from(matches!(operand.kind, Kind::Device | Kind::Map));
                (c.saturating_add(own), est)
            }
            Node::List(l) => {
                let mut sum = LIST_CREATE;
                let mut item: Option<Est> = None;
                for el in &l.elements {
                    let (c, est) = self.cost(el);
                    sum = sum.saturating_add(c);
                    item = Some(match item {
                        Some(i) => i.union(&est),
                        None => est,
                    });
                }
                let n = l.elements.len() as u64;
                (sum, Est::container(Kind::List, n, n, None, item))
            }
            Node::Map(m) => {
                let mut sum = MAP_CREATE;
                let (mut keys, mut vals): (Option<Est>, Option<Est>) = (None, None);
                for en in &m.entries {
                    let EntryExpr::MapEntry(me) = &en.expr else {
                        continue;
                    };
                    let (kc, k) = self.cost(&me.key);
                    let (vc, v) = self.cost(&me.value);
                    sum = sum.saturating_add(kc).saturating_add(vc);
                    keys = Some(keys.map_or(k.clone(), |x| x.union(&k)));
                    vals = Some(vals.map_or(v.clone(), |x| x.union(&v)));
                }
                let n = m.entries.len() as u64;
                (sum, Est::container(Kind::Map, n, n, keys, vals))
            }
            Node::Struct(_) | Node::Unspecified => (1, Est::unknown(Kind::Dyn)),
            Node::Comprehension(c) => {
                let (rc, range) = self.cost(&c.iter_range);
                let (ic, init) = self.cost(&c.accu_init);
                let mut sum = rc.saturating_add(ic);
                if c.iter_var == super::BIND_ITER_VAR {
                    // `cel.bind`: the variable carries its initializer's estimate.
                    self.vars.push((c.accu_var.clone(), init));
                    let (cost, est) = self.cost(&c.result);
                    self.vars.pop();
                    return (sum.saturating_add(cost), est);
                }
                let iter = match range.kind {
                    Kind::List => elem(&range),
                    Kind::Map => range
                        .key
                        .as_deref()
                        .cloned()
                        .unwrap_or(Est::unknown(Kind::Dyn)),
                    _ => Est::unknown(Kind::Dyn),
                };
                self.vars.push((c.accu_var.clone(), init.clone()));
                self.vars.push((c.iter_var.clone(), iter.clone()));
                if let Some(v2) = &c.iter_var2 {
                    self.vars.push((v2.clone(), elem(&range)));
                }
                let (cc, _) = self.cost(&c.loop_cond);
                let (sc, step) = self.cost(&c.loop_step);
                if c.iter_var2.is_some() {
                    self.vars.pop();
                }
                self.vars.pop();
                let (resc, res) = self.cost(&c.result);
                self.vars.pop();
                sum = sum
                    .saturating_add(resc)
                    .saturating_add(range.max.saturating_mul(cc.saturating_add(sc)));
                let est = match &c.accu_init.expr {
                    // `map` and `filter` build a list as long as the range at most.
                    Node::List(_) | Node::Map(_) => Est {
                        kind: init.kind,
                        min: range.min,
                        max: range.max,
                        elem: step.elem.clone(),
                        key: step.key.clone(),
                    },
                    Node::Literal(_) => init,
                    _ => res,
                };
                (sum, est)
            }
            Node::Call(call) => self.call(call),
        }
    }

    fn call(&mut self, call: &::cel::common::ast::CallExpr) -> (u64, Est) {
        let name = call.func_name.as_str();
        // `dyn(x)` is `x` to the estimator, plus the call.
        if name == "dyn" && call.target.is_none() && call.args.len() == 1 {
            let (c, est) = self.cost(&call.args[0]);
            return (c.saturating_add(1), est);
        }
        // `strings.quote(x)`: a namespace, not a receiver.
        let namespaced = matches!(call.target.as_deref().map(|t| &t.expr),
            Some(Node::Ident(ns)) if ns == "strings" && self.var(ns).is_none());
        let (mut sum, target) = match (&call.target, namespaced) {
            (Some(t), false) => {
                let (c, est) = self.cost(t);
                (c, Some(est))
            }
            _ => (0, None),
        };
        let mut args = Vec::with_capacity(call.args.len());
        let mut arg_costs = Vec::with_capacity(call.args.len());
        for a in &call.args {
            let (c, est) = self.cost(a);
            arg_costs.push(c);
            args.push(est);
        }
        let arg = |i: usize| args.get(i).cloned().unwrap_or(Est::unknown(Kind::Dyn));
        match name {
            // Short-circuits: at most both sides.
            "_&&_" | "_||_" => {
                return (
                    arg_costs.iter().fold(0u64, |a, c| a.saturating_add(*c)),
                    Est::scalar(),
                );
            }
            "_?_:_" => {
                let branch = arg_costs
                    .get(1)
                    .copied()
                    .unwrap_or(0)
                    .max(arg_costs.get(2).copied().unwrap_or(0));
                let c = arg_costs
                    .first()
                    .copied()
                    .unwrap_or(0)
                    .saturating_add(branch);
                return (c, arg(1).union(&arg(2)));
            }
            _ => {}
        }
        for c in &arg_costs {
            sum = sum.saturating_add(*c);
        }
        let t = || target.clone().unwrap_or(Est::unknown(Kind::Dyn));
        let (own, est) = match (name, target.is_some()) {
            ("_+_", _) => {
                let (l, r) = (arg(0), arg(1));
                let kind = if l.kind == r.kind {
                    l.kind
                } else if l.kind == Kind::Dyn {
                    r.kind
                } else if r.kind == Kind::Dyn {
                    l.kind
                } else {
                    Kind::Dyn
                };
                let max = l.max.saturating_add(r.max);
                let est = Est {
                    kind,
                    min: l.min.saturating_add(r.min),
                    max,
                    elem: union_opt(&l.elem, &r.elem),
                    key: None,
                };
                match kind {
                    // List concatenation is constant time to cel-go; it tracks the size.
                    Kind::List => (1, est),
                    Kind::Scalar => (1, Est::scalar()),
                    _ => (factor(max, TRAVERSAL), est),
                }
            }
            ("_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_", _) => {
                let (l, r) = (arg(0), arg(1));
                let c = if l.kind == Kind::Opaque && r.kind == Kind::Opaque {
                    1
                } else {
                    factor(l.max.min(r.max), TRAVERSAL)
                };
                (c, Est::scalar())
            }
            ("_[_]", _) => (1, elem(&arg(0))),
            ("@in", _) => {
                let container = arg(1);
                let c = match container.kind {
                    Kind::List | Kind::Dyn => container.max,
                    _ => 1,
                };
                (c, Est::scalar())
            }
            ("lowerAscii" | "upperAscii" | "trim" | "substring", true) => {
                let s = t();
                (
                    factor(s.max, TRAVERSAL),
                    Est::sized(Kind::Str, s.min.min(1), s.max),
                )
            }
            ("replace", true) if args.len() >= 2 => replace(&t(), &arg(0), &arg(1)),
            ("split", true) => {
                let s = t();
                let mut max = s.max;
                if let Some(Node::Literal(LiteralValue::Int(n))) = call.args.get(1).map(|a| &a.expr)
                {
                    max = u64::try_from(*n.inner()).unwrap_or(max);
                }
                (
                    factor(s.max, 2.0 * TRAVERSAL),
                    Est::container(Kind::List, 0, max, None, None),
                )
            }
            ("join", true) => {
                let list = t();
                let mut size = match &list.elem {
                    Some(el) => mul(&list, el),
                    None => (0, 0),
                };
                if let Some(sep) = args.first() {
                    let seps = (list.min.saturating_sub(1), list.max.saturating_sub(1));
                    size.0 = size.0.saturating_add(sep.min.saturating_mul(seps.0));
                    size.1 = size.1.saturating_add(sep.max.saturating_mul(seps.1));
                }
                (
                    factor(size.1, TRAVERSAL),
                    Est::sized(Kind::Str, size.0, size.1),
                )
            }
            ("format", true) => (factor(t().max, TRAVERSAL), Est::unknown(Kind::Str)),
            ("quote", _) if namespaced => {
                let s = arg(0);
                (
                    factor(s.max, TRAVERSAL),
                    Est::sized(
                        Kind::Str,
                        s.min.saturating_add(2),
                        s.max.saturating_mul(2).saturating_add(2),
                    ),
                )
            }
            ("indexOf" | "lastIndexOf", true) => (factor(t().max, TRAVERSAL), Est::scalar()),
            ("startsWith" | "endsWith", true) => (factor(arg(0).max, TRAVERSAL), Est::scalar()),
            ("contains", true) => (
                factor(t().max, TRAVERSAL).saturating_mul(factor(arg(0).max, TRAVERSAL)),
                Est::scalar(),
            ),
            ("matches", true) => (
                factor(t().max.saturating_add(1), TRAVERSAL)
                    .saturating_mul(factor(arg(0).max, REGEX)),
                Est::scalar(),
            ),
            ("quantity" | "semver", false) => {
                (factor(arg(0).max, TRAVERSAL), Est::unknown(Kind::Opaque))
            }
            ("isQuantity" | "isSemver", false) => (factor(arg(0).max, TRAVERSAL), Est::scalar()),
            ("bytes", false) if args.len() == 1 => {
                let s = arg(0);
                (
                    factor(s.max, TRAVERSAL),
                    Est::sized(Kind::Bytes, s.min, s.max.saturating_mul(4)),
                )
            }
            ("string", false) if args.len() == 1 && arg(0).kind == Kind::Bytes => {
                let s = arg(0);
                (
                    factor(s.max, TRAVERSAL),
                    Est::sized(Kind::Str, s.min / 4, s.max),
                )
            }
            (_, _) => (1, result_of(name)),
        };
        (sum.saturating_add(own), est)
    }
}

/// The estimate of what an index or field of this container gives.
fn elem(c: &Est) -> Est {
    c.elem
        .as_deref()
        .cloned()
        .unwrap_or(Est::unknown(Kind::Dyn))
}

/// Both ends of `list size * element size`.
fn mul(list: &Est, el: &Est) -> (u64, u64) {
    (
        list.min.saturating_mul(el.min),
        list.max.saturating_mul(el.max),
    )
}

/// What a function the estimator has no rule for gives: a scalar when its name says
/// so, else a value of unknown size (upstream sizes only scalars by their type).
fn result_of(name: &str) -> Est {
    const SCALAR: &[&str] = &[
        "size",
        "int",
        "uint",
        "double",
        "bool",
        "type",
        "!_",
        "-_",
        "@not_strictly_false",
        "_-_",
        "_*_",
        "_/_",
        "_%_",
        "sign",
        "asInteger",
        "isInteger",
        "asApproximateFloat",
        "isGreaterThan",
        "isLessThan",
        "compareTo",
        "major",
        "minor",
        "patch",
        "exists",
        "all",
        "exists_one",
    ];
    match name {
        "add" | "sub" => Est::unknown(Kind::Opaque),
        n if SCALAR.contains(&n) => Est::scalar(),
        _ => Est::unknown(Kind::Dyn),
    }
}

fn literal(l: &LiteralValue) -> Est {
    match l {
        LiteralValue::String(s) => {
            let n = s.chars().count() as u64;
            Est::sized(Kind::Str, n, n)
        }
        LiteralValue::Bytes(b) => {
            let n = b.inner().len() as u64;
            Est::sized(Kind::Bytes, n, n)
        }
        _ => Est::scalar(),
    }
}

/// The Kubernetes library's estimate for `target.replace(old, new)`: the smallest
/// possible `old` replaced by the longest `new` as often as it fits.
fn replace(target: &Est, old: &Est, new: &Est) -> (u64, Est) {
    let (count_max, kept_max) = if old.min == 0 {
        (target.max.saturating_add(1), target.max)
    } else if new.max <= old.min {
        (0, target.max)
    } else {
        (target.max.div_ceil(old.min), 0)
    };
    let (count_min, kept_min) = if old.max == 0 {
        (target.min.saturating_add(1), target.min)
    } else if old.max <= new.min {
        (0, target.min)
    } else {
        (target.min.div_ceil(old.max), 0)
    };
    let size = Est::sized(
        Kind::Str,
        count_min.saturating_mul(new.min).saturating_add(kept_min),
        count_max.saturating_mul(new.max).saturating_add(kept_max),
    );
    (factor(target.max, 2.0 * TRAVERSAL), size)
}
