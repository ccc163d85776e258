//! Feature gates as kube-scheduler's `--feature-gates` takes them: every gate the
//! scheduler binary of a version knows, with its default, stage and lock at that version
//! (the table in `gates.tsv`, read from each release's feature specs), and the values a
//! user set. Upstream's errors, in upstream's words.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use super::version::KubeVersion;

/// A gate's maturity at one version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Alpha,
    Beta,
    Ga,
    Deprecated,
}

impl Stage {
    fn parse(s: &str) -> Option<Stage> {
        Some(match s {
            "ALPHA" => Stage::Alpha,
            "BETA" => Stage::Beta,
            "GA" => Stage::Ga,
            "Deprecated" => Stage::Deprecated,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Stage::Alpha => "ALPHA",
            Stage::Beta => "BETA",
            Stage::Ga => "GA",
            Stage::Deprecated => "DEPRECATED",
        }
    }
}

/// A gate at one version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    pub default: bool,
    pub stage: Stage,
    /// Locked to its default: setting it otherwise is refused.
    pub locked: bool,
}

/// One row of the table: the gate at each supported version (`None`: not known then),
/// and the gates it needs enabled (checked from 1.35 on, as upstream's dependencies).
#[derive(Debug)]
pub struct Row {
    pub name: String,
    specs: [Option<Spec>; KubeVersion::ALL.len()],
    needs_1_35: Vec<String>,
    needs_1_36: Vec<String>,
}

impl Row {
    pub fn at(&self, v: KubeVersion) -> Option<Spec> {
        self.specs[index(v)]
    }

    /// The gates this one needs enabled at `v`.
    pub fn needs(&self, v: KubeVersion) -> &[String] {
        match v {
            KubeVersion::V1_34 => &[],
            KubeVersion::V1_35 => &self.needs_1_35,
            _ => &self.needs_1_36,
        }
    }
}

fn index(v: KubeVersion) -> usize {
    KubeVersion::ALL.iter().position(|x| *x == v).unwrap_or(0)
}

/// The table: `name<TAB>v1.34<TAB>v1.35<TAB>v1.36<TAB>v1.37<TAB>needs<TAB>needs`, a
/// version's cell `true/GA/locked`, `false/ALPHA` or `-`, a needs cell `A,B` or `-`; `#`
/// starts a comment line.
const TABLE: &str = include_str!("gates.tsv");

/// Every gate by name. The table is compiled in, so a malformed row is a build defect,
/// caught by this module's tests, and skipped rather than panicking at run time.
pub fn table() -> &'static BTreeMap<String, Row> {
    static T: OnceLock<BTreeMap<String, Row>> = OnceLock::new();
    T.get_or_init(|| {
        TABLE
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .filter_map(parse_row)
            .map(|r| (r.name.clone(), r))
            .collect()
    })
}

fn parse_row(line: &str) -> Option<Row> {
    let mut cells = line.split('\t');
    let name = cells.next()?.trim().to_string();
    let mut specs = [None; KubeVersion::ALL.len()];
    for slot in specs.iter_mut() {
        let cell = cells.next()?.trim();
        if cell == "-" {
            continue;
        }
        let mut parts = cell.split('/');
        let default = match parts.next()? {
            "true" => true,
            "false" => false,
            _ => return None,
        };
        let stage = Stage::parse(parts.next()?)?;
        let locked = match parts.next() {
            None => false,
            Some("locked") => true,
            Some(_) => return None,
        };
        *slot = Some(Spec {
            default,
            stage,
            locked,
        });
    }
    let needs = |cell: &str| -> Vec<String> {
        match cell.trim() {
            "-" => Vec::new(),
            c => c.split(',').map(|n| n.trim().to_string()).collect(),
        }
    };
    let needs_1_35 = needs(cells.next()?);
    let needs_1_36 = needs(cells.next()?);
    cells.next().is_none().then_some(Row {
        name,
        specs,
        needs_1_35,
        needs_1_36,
    })
}

/// The gates kubestep's engine reads: each changes what it changes upstream. Every other
/// gate of the table is accepted (as kube-scheduler accepts it) and has no effect here.
macro_rules! gates {
    ($($(#[$doc:meta])* $variant:ident,)*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Gate { $($(#[$doc])* $variant,)* }
        impl Gate {
            pub const ALL: &'static [Gate] = &[$(Gate::$variant,)*];
            pub fn name(self) -> &'static str {
                match self { $(Gate::$variant => stringify!($variant),)* }
            }
        }
    };
}

gates! {
    /// Signatures and batched node hints (beta, on in 1.35).
    OpportunisticBatching,
    /// A pod that waits at Permit or binds with PreBind work is nominated to its node first.
    NominatedNodeNameForExpectation,
    /// DynamicResources in the default profile.
    DynamicResourceAllocation,
    /// DynamicResourcesArgs.filterTimeout.
    DRASchedulerFilterTimeout,
    /// Devices with binding conditions; DynamicResourcesArgs.bindingTimeout.
    DRADeviceBindingConditions,
    DRAResourceClaimDeviceStatus,
    DRAExtendedResource,
    DRADeviceTaints,
    /// DeviceTaintRule objects add taints to the devices they select.
    DRADeviceTaintRules,
    DRAPartitionableDevices,
    DRAConsumableCapacity,
    DRAAdminAccess,
    DRAPrioritizedList,
    /// VolumeBindingArgs.shape and capacity scoring.
    StorageCapacityScoring,
    /// NodeDeclaredFeatures in the default profile.
    NodeDeclaredFeatures,
    /// GangScheduling in the default profile.
    GangScheduling,
    InPlacePodVerticalScaling,
    PodLevelResources,
    InPlacePodLevelResourcesVerticalScaling,
    SchedulerAsyncPreemption,
    SchedulerPopFromBackoffQ,
    SchedulerQueueingHints,
    MatchLabelKeysInPodTopologySpread,
    TaintTolerationComparisonOperators,
    VolumeLimitScaling,
    ImageVolume,
}

/// Why `--feature-gates` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GateError {
    /// The value is not `NAME=BOOL,...` (upstream's words).
    #[error("missing bool value for {0}")]
    MissingValue(String),
    #[error(
        "invalid value of {name}={value}, err: strconv.ParseBool: parsing {value:?}: invalid syntax"
    )]
    BadBool { name: String, value: String },
    /// Upstream only warns about unknown gates and runs on; a debugger that silently
    /// ignored a misspelt gate would show the wrong scheduler, so it is refused here.
    #[error("unrecognized feature gate: {name}{} (kube-scheduler {version} knows: {known})", .suggestion.as_ref().map(|s| format!("; did you mean {s}?")).unwrap_or_default())]
    Unknown {
        name: String,
        version: KubeVersion,
        /// A known gate the name is a slip of (case, or a letter or two).
        suggestion: Option<String>,
        known: String,
    },
    #[error("cannot set feature gate {name} to {value}, feature is locked to {default}")]
    Locked {
        name: String,
        value: bool,
        default: bool,
    },
    #[error("{name} is enabled, but depends on features that are disabled: [{}]", .disabled.join(" "))]
    Dependency { name: String, disabled: Vec<String> },
}

/// `A=true,B=false` as the flag (and config.toml's `feature-gates`) gives it, in order.
pub fn parse_list(text: &str) -> Result<Vec<(String, bool)>, GateError> {
    let mut out = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let Some((name, value)) = item.split_once('=') else {
            return Err(GateError::MissingValue(item.to_string()));
        };
        let (name, value) = (name.trim(), value.trim());
        let b = parse_go_bool(value).ok_or_else(|| GateError::BadBool {
            name: name.to_string(),
            value: value.to_string(),
        })?;
        out.push((name.to_string(), b));
    }
    Ok(out)
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// The gates of one version with the user's settings applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeatureGates {
    version: KubeVersion,
    /// Indexed by `Gate as usize`: what the engine reads on hot paths.
    enabled: Vec<bool>,
    /// What the user set that differs from the version's default, by name.
    set: BTreeMap<String, bool>,
    /// Said once: settings that have no effect here, GA or deprecated gates.
    pub warnings: Vec<String>,
}

impl FeatureGates {
    /// The version's defaults.
    pub fn defaults(version: KubeVersion) -> FeatureGates {
        let enabled = Gate::ALL
            .iter()
            .map(|g| default_of(g.name(), version))
            .collect();
        FeatureGates {
            version,
            enabled,
            set: BTreeMap::new(),
            warnings: Vec::new(),
        }
    }

    /// The version's defaults with `settings` applied, each checked as upstream checks it:
    /// the name known at that version, a locked gate only at its default, `AllAlpha` /
    /// `AllBeta` turning on every gate of their stage not set otherwise, then (from 1.35)
    /// every enabled gate's dependencies.
    pub fn with(
        version: KubeVersion,
        settings: &[(String, bool)],
    ) -> Result<FeatureGates, GateError> {
        let mut g = FeatureGates::defaults(version);
        // Every known gate's value at this version, by name: what dependencies are checked on.
        let mut values: BTreeMap<&str, bool> = table()
            .iter()
            .filter_map(|(n, r)| Some((n.as_str(), r.at(version)?.default)))
            .collect();
        for (name, value) in settings {
            let Some(spec) = table().get(name).and_then(|r| r.at(version)) else {
                let known = known_names(version);
                return Err(GateError::Unknown {
                    name: name.clone(),
                    version,
                    suggestion: nearest(name, &known).map(str::to_string),
                    known: known.join(", "),
                });
            };
            if spec.locked && spec.default != *value {
                return Err(GateError::Locked {
                    name: name.clone(),
                    value: *value,
                    default: spec.default,
                });
            }
            if let Some(stage) = all_of_stage(name) {
                for (n, r) in table() {
                    let explicit = settings.iter().any(|(s, _)| s == n);
                    if let Some(sp) = r.at(version)
                        && sp.stage == stage
                        && !sp.locked
                        && !explicit
                    {
                        values.insert(n.as_str(), *value);
                    }
                }
            }
            match spec.stage {
                Stage::Ga | Stage::Deprecated => g.warnings.push(format!(
                    "Setting {} feature gate {name}={value}. It will be removed in a future release.",
                    if spec.stage == Stage::Ga { "GA" } else { "deprecated" }
                )),
                _ => {}
            }
            values.insert(name.as_str(), *value);
        }
        for (name, on) in &values {
            let Some(row) = table().get(*name) else {
                continue;
            };
            if !on {
                continue;
            }
            let disabled: Vec<String> = row
                .needs(version)
                .iter()
                .filter(|d| !values.get(d.as_str()).copied().unwrap_or(false))
                .cloned()
                .collect();
            if !disabled.is_empty() {
                return Err(GateError::Dependency {
                    name: name.to_string(),
                    disabled,
                });
            }
        }
        for (i, gate) in Gate::ALL.iter().enumerate() {
            g.enabled[i] = values.get(gate.name()).copied().unwrap_or(false);
        }
        for (name, value) in &values {
            let default = default_of(name, version);
            if *value != default {
                g.set.insert(name.to_string(), *value);
                if !Gate::ALL.iter().any(|x| x.name() == *name) && !is_stage_switch(name) {
                    g.warnings.push(format!(
                        "feature gate {name}={value} is accepted, but kubestep does not model it: its effect is not shown"
                    ));
                }
            }
        }
        Ok(g)
    }

    pub fn version(&self) -> KubeVersion {
        self.version
    }

    pub fn enabled(&self, gate: Gate) -> bool {
        self.enabled[gate as usize]
    }

    /// The gates set to other than their default, by name: what the TUI and explain show.
    pub fn non_default(&self) -> &BTreeMap<String, bool> {
        &self.set
    }

    /// `A=true,B=false`, or `None` when every gate is at its default.
    pub fn non_default_list(&self) -> Option<String> {
        (!self.set.is_empty()).then(|| {
            let all: Vec<String> = self.set.iter().map(|(n, v)| format!("{n}={v}")).collect();
            all.join(",")
        })
    }
}

/// `AllAlpha` and `AllBeta`: switches for every gate of a stage.
fn all_of_stage(name: &str) -> Option<Stage> {
    match name {
        "AllAlpha" => Some(Stage::Alpha),
        "AllBeta" => Some(Stage::Beta),
        _ => None,
    }
}

fn is_stage_switch(name: &str) -> bool {
    all_of_stage(name).is_some()
}

fn default_of(name: &str, version: KubeVersion) -> bool {
    table()
        .get(name)
        .and_then(|r| r.at(version))
        .is_some_and(|s| s.default)
}

/// The known name `name` is most likely a slip of: the same but for case, else within
/// two edits.
fn nearest<'a>(name: &str, known: &[&'a str]) -> Option<&'a str> {
    if let Some(k) = known.iter().find(|k| k.eq_ignore_ascii_case(name)) {
        return Some(k);
    }
    known
        .iter()
        .map(|k| (edits(name, k), *k))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, k)| k)
}

/// Levenshtein distance.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// The gates a version knows, by name.
pub fn known_names(version: KubeVersion) -> Vec<&'static str> {
    table()
        .iter()
        .filter(|(_, r)| r.at(version).is_some())
        .map(|(n, _)| n.as_str())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_of_the_table_parses() {
        let rows = TABLE
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .count();
        assert_eq!(table().len(), rows, "a row of gates.tsv does not parse");
        assert!(rows > 200, "{rows} gates");
        for r in table().values() {
            for need in r.needs_1_35.iter().chain(&r.needs_1_36) {
                assert!(
                    table().contains_key(need),
                    "{} needs unknown {need}",
                    r.name
                );
            }
        }
    }

    #[test]
    fn every_modelled_gate_is_in_the_table_at_the_versions_that_have_it() {
        for g in Gate::ALL {
            assert!(
                table().contains_key(g.name()),
                "{} not in gates.tsv",
                g.name()
            );
        }
    }

    #[test]
    fn settings_are_checked_in_upstreams_words() {
        assert_eq!(
            parse_list("A=true, B=false,,C=1").unwrap(),
            vec![("A".into(), true), ("B".into(), false), ("C".into(), true)]
        );
        assert_eq!(
            parse_list("A").unwrap_err().to_string(),
            "missing bool value for A"
        );
        assert!(
            parse_list("A=yes")
                .unwrap_err()
                .to_string()
                .starts_with("invalid value of A=yes")
        );
        let e = FeatureGates::with(KubeVersion::V1_35, &[("NoSuchGate".into(), true)]).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("unrecognized feature gate: NoSuchGate (kube-scheduler v1.35 knows: ")
        );
        // A gate 1.34 does not know yet.
        let e = FeatureGates::with(
            KubeVersion::V1_34,
            &[("OpportunisticBatching".into(), true)],
        );
        assert!(matches!(e, Err(GateError::Unknown { .. })), "{e:?}");
        let e = FeatureGates::with(
            KubeVersion::V1_35,
            &[("SchedulerQueueingHints".into(), false)],
        );
        assert_eq!(
            e.unwrap_err().to_string(),
            "cannot set feature gate SchedulerQueueingHints to false, feature is locked to true"
        );
    }

    #[test]
    fn defaults_differ_by_version() {
        let on = |v, g| FeatureGates::defaults(v).enabled(g);
        assert!(!on(KubeVersion::V1_34, Gate::OpportunisticBatching));
        assert!(on(KubeVersion::V1_35, Gate::OpportunisticBatching));
        assert!(!on(
            KubeVersion::V1_34,
            Gate::NominatedNodeNameForExpectation
        ));
        assert!(on(
            KubeVersion::V1_35,
            Gate::NominatedNodeNameForExpectation
        ));
        assert!(!on(KubeVersion::V1_35, Gate::NodeDeclaredFeatures));
        assert!(on(KubeVersion::V1_36, Gate::NodeDeclaredFeatures));
        assert!(!on(KubeVersion::V1_35, Gate::DRAExtendedResource));
        assert!(on(KubeVersion::V1_36, Gate::DRAExtendedResource));
        assert!(!on(KubeVersion::V1_36, Gate::StorageCapacityScoring));
        assert!(on(KubeVersion::V1_37, Gate::StorageCapacityScoring));
    }

    #[test]
    fn gates_are_set_with_their_dependencies_checked() {
        let g = FeatureGates::with(
            KubeVersion::V1_35,
            &[
                ("DRADeviceTaints".into(), true),
                ("OpportunisticBatching".into(), false),
            ],
        )
        .unwrap();
        assert!(g.enabled(Gate::DRADeviceTaints));
        assert!(!g.enabled(Gate::OpportunisticBatching));
        assert_eq!(
            g.non_default_list().as_deref(),
            Some("DRADeviceTaints=true,OpportunisticBatching=false")
        );
        // 1.36: InPlacePodLevelResourcesVerticalScaling is on and needs PodLevelResources.
        let e = FeatureGates::with(KubeVersion::V1_36, &[("PodLevelResources".into(), false)]);
        assert_eq!(
            e.unwrap_err().to_string(),
            "InPlacePodLevelResourcesVerticalScaling is enabled, but depends on features that are disabled: [PodLevelResources]"
        );
        // 1.34 checks no dependencies.
        assert!(
            FeatureGates::with(KubeVersion::V1_34, &[("PodLevelResources".into(), false)]).is_ok()
        );
        let all = FeatureGates::with(
            KubeVersion::V1_35,
            &[("AllAlpha".into(), true), ("GangScheduling".into(), false)],
        );
        let all = all.unwrap();
        assert!(all.enabled(Gate::StorageCapacityScoring));
        assert!(!all.enabled(Gate::GangScheduling));
    }
}
