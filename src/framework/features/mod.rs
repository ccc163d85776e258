//! The Kubernetes a run follows: a kube-scheduler minor version (`version`), its feature
//! gates with the user's settings (`gates`), and what else differs between versions
//! without a gate (`Semantics`). One value, `Features`, goes with the configuration to
//! everything that decides: config defaulting and validation, plugin factories, the
//! scheduler and its queue. Plugins ask it about gates and named behaviours, never the
//! version number.
//!
//! To add a version (1.38): a variant in `KubeVersion` (with the release it is checked
//! against), a column in `gates.tsv`, and a row in `Semantics::of` for what changed
//! without a gate; then run the conformance corpus under that version's real scheduler.

pub mod gates;
pub mod version;

pub use gates::{FeatureGates, Gate, GateError};
pub use version::{Choice, KubeVersion, Source, VersionError};

/// How NodeResourcesBalancedAllocation scores a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BalancedFormula {
    /// Through 1.35: one minus the standard deviation of the resource fractions with the
    /// pod on the node, times 100.
    WithPod,
    /// From 1.36: how much the pod improves the node's balance, centred on 75
    /// (`50 + (50 + with - without) / 2`).
    Improvement,
}

/// What differs between versions without a feature gate: each a named behaviour, read by
/// the code that behaves so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Semantics {
    /// DynamicResources has Score (PreScore, Score, NormalizeScore): from 1.35.
    pub dynamic_resources_score: bool,
    pub balanced_allocation: BalancedFormula,
    /// `DynamicResourcesArgs.bindingTimeout` is a field of the schema: from 1.35.
    pub dynamic_resources_binding_timeout_field: bool,
    /// ImageLocality sums a pod's image volumes' images with its containers': from 1.36.
    pub image_locality_sums_image_volumes: bool,
    /// ImageLocality's threshold counts image volumes as containers: 1.37.
    pub image_locality_threshold_counts_image_volumes: bool,
    /// NodeDeclaredFeatures: which features a pod can require and the Filter's reason.
    pub node_declared_features: NodeDeclaredFeaturesRules,
    /// The queueing hints of InterPodAffinity and PodTopologySpread take a pod with only a
    /// nominated node as placed; InterPodAffinity also queues on the pod's own label update
    /// and on a deleted pod whose required anti-affinity the pod matches: from 1.36.
    pub hints_see_nominated_pods: bool,
    /// A preemption victim waiting at Permit is failed with an Error ("preempted") in
    /// memory, and deleted only when its wait was already over: from 1.36. (Upstream also
    /// cancels a victim in PreBind; kubestep's PreBind never spans another pod's cycle.)
    pub preempts_waiting_victims_in_memory: bool,
    /// NodeVolumeLimits counts Portworx volumes as CSI only where the CSINode's
    /// migrated-plugins annotation lists the plugin: up to 1.35.
    pub csi_portworx_needs_migrated_annotation: bool,
    /// VolumeLimitScaling's "CSI driver is not installed on the node" check applies only to
    /// CSIDrivers with `spec.preventPodSchedulingIfMissing: true`: from 1.36 (in 1.35, to
    /// every CSIDriver).
    pub csi_driver_check_opt_in: bool,
    /// NewFramework's score-weight overflow error begins "score plugins: ": from 1.36.
    pub score_overflow_prefix: bool,
    /// NodeResourcesFitArgs: scoringStrategy required, requestedToCapacityRatio only with
    /// its type, shape errors under requestedToCapacityRatio: from 1.36.
    pub strict_fit_args: bool,
    /// The `placementGenerate` and `placementScore` plugin sets: from 1.36.
    pub placement_plugin_sets: bool,
    /// DynamicResources' "was not created for Pod ... (Pod is not owner)" capitalizes
    /// Pod: from 1.36.
    pub dra_owner_message_capitalized: bool,
    /// Under DRAExtendedResource, Fit refuses to sign only pods whose extended resources a
    /// DeviceClass serves (from 1.36); in 1.35 every pod.
    pub fit_sign_refuses_only_dra_pods: bool,
    /// Under DRAExtendedResource, when kube-scheduler's NodeResourcesBalancedAllocation
    /// crashes scoring an extended resource in its `resources`.
    pub balanced_allocation_dra_crash: BalancedDraCrash,
    /// With DRADeviceTaintRules on, kube-scheduler crashes once a DeviceTaintRule exists:
    /// from 1.36 its slice tracker watches v1beta2 rules but reads them as v1alpha3.
    pub device_taint_rules_crash: bool,
}

/// A nil pointer in upstream's NodeResourcesBalancedAllocation under DRAExtendedResource:
/// 1.35 builds it without the DRA manager, 1.36 without the CEL cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BalancedDraCrash {
    /// PreScore, for any extended resource name among its resources.
    AnyExtendedName,
    /// Score, on a node where a DeviceClass's CEL selectors are evaluated for one.
    ClassSelectors,
}

/// NodeDeclaredFeatures' rules, which changed in 1.36 (its registry of features and its
/// Filter reason).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeDeclaredFeaturesRules {
    V1_35,
    V1_36,
}

/// v1.35's, as `Features::default()`.
impl Default for Semantics {
    fn default() -> Semantics {
        Semantics::of(KubeVersion::V1_35)
    }
}

impl Semantics {
    pub fn of(v: KubeVersion) -> Semantics {
        use KubeVersion::*;
        Semantics {
            dynamic_resources_score: v >= V1_35,
            balanced_allocation: if v >= V1_36 {
                BalancedFormula::Improvement
            } else {
                BalancedFormula::WithPod
            },
            dynamic_resources_binding_timeout_field: v >= V1_35,
            image_locality_sums_image_volumes: v >= V1_36,
            image_locality_threshold_counts_image_volumes: v >= V1_37,
            node_declared_features: if v >= V1_36 {
                NodeDeclaredFeaturesRules::V1_36
            } else {
                NodeDeclaredFeaturesRules::V1_35
            },
            hints_see_nominated_pods: v >= V1_36,
            preempts_waiting_victims_in_memory: v >= V1_36,
            csi_portworx_needs_migrated_annotation: v <= V1_35,
            csi_driver_check_opt_in: v >= V1_36,
            score_overflow_prefix: v >= V1_36,
            strict_fit_args: v >= V1_36,
            placement_plugin_sets: v >= V1_36,
            dra_owner_message_capitalized: v >= V1_36,
            fit_sign_refuses_only_dra_pods: v >= V1_36,
            device_taint_rules_crash: v >= V1_36,
            balanced_allocation_dra_crash: if v >= V1_36 {
                BalancedDraCrash::ClassSelectors
            } else {
                BalancedDraCrash::AnyExtendedName
            },
        }
    }
}

/// The version (and where it came from), its gates with the user's settings, and its
/// gate-less differences.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Features {
    pub choice: Choice,
    pub gates: FeatureGates,
    pub semantics: Semantics,
}

impl Features {
    /// A version at its default gates.
    pub fn of(choice: Choice) -> Features {
        let v = choice.version;
        Features {
            choice,
            gates: FeatureGates::defaults(v),
            semantics: Semantics::of(v),
        }
    }

    /// A version with the user's gate settings, checked against that version's gates.
    pub fn with_gates(choice: Choice, settings: &[(String, bool)]) -> Result<Features, GateError> {
        let v = choice.version;
        Ok(Features {
            gates: FeatureGates::with(v, settings)?,
            choice,
            semantics: Semantics::of(v),
        })
    }

    /// A version at its defaults, chosen by the caller (tests, library users).
    pub fn version(v: KubeVersion) -> Features {
        Features::of(Choice::given(v, Source::Given))
    }

    pub fn kube_version(&self) -> KubeVersion {
        self.choice.version
    }

    pub fn enabled(&self, gate: Gate) -> bool {
        self.gates.enabled(gate)
    }

    /// `v1.36`: what JSON and YAML outputs call `k8sVersion`.
    pub fn k8s_version(&self) -> String {
        self.choice.version.to_string()
    }

    /// The one line every output starts with: the version, where it came from, and the
    /// gates set otherwise than their default.
    pub fn describe(&self) -> String {
        match self.gates.non_default_list() {
            Some(g) => format!("{}; feature gates {g}", self.choice),
            None => self.choice.to_string(),
        }
    }
}

/// The library's baseline when a caller names no version: v1.35 (the configuration
/// functions without `_for` use it). Drivers resolve the version from their input instead.
impl Default for Features {
    fn default() -> Features {
        Features::version(KubeVersion::V1_35)
    }
}

/// What the user asked for (`--kube-version` or config.toml, `--feature-gates`), before
/// the input is read: a driver resolves it against the version its input reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Request {
    /// A version the user chose, and where (the flag or the config file).
    pub version: Option<(KubeVersion, Source)>,
    /// Gate settings in the order given.
    pub gates: Vec<(String, bool)>,
}

impl Request {
    /// The user's version, else the input's (`reported`), else the newest checked one;
    /// then the gates, checked against that version.
    pub fn resolve(&self, reported: Option<Choice>) -> Result<Features, GateError> {
        let choice = match (&self.version, reported) {
            (Some((v, source)), _) => Choice::given(*v, source.clone()),
            (None, Some(c)) => c,
            (None, None) => Choice::default_choice(),
        };
        Features::with_gates(choice, &self.gates)
    }
}
