//! The Filter tab's row order: the node filter (`/`: a name, `!` rejected, `!PLUGIN`,
//! `+` examined), the sorts (`o`), and upstream's first failure per node.

use crate::components::text::fuzzy;
use crate::framework::cycle::{FilterCell, FilterMatrix};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MatrixSort {
    /// The order upstream examined the nodes in.
    #[default]
    Examined,
    /// Rejected nodes first.
    Rejected,
    /// Nodes the selected column's plugin rejected first.
    ByPlugin,
    /// Passing nodes first.
    Passing,
    Name,
}

impl MatrixSort {
    pub fn next(self) -> MatrixSort {
        match self {
            MatrixSort::Examined => MatrixSort::Rejected,
            MatrixSort::Rejected => MatrixSort::ByPlugin,
            MatrixSort::ByPlugin => MatrixSort::Passing,
            MatrixSort::Passing => MatrixSort::Name,
            MatrixSort::Name => MatrixSort::Examined,
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            MatrixSort::Examined => "examined",
            MatrixSort::Rejected => "rejected first",
            MatrixSort::ByPlugin => "by the selected plugin",
            MatrixSort::Passing => "passing first",
            MatrixSort::Name => "name",
        }
    }
}

/// Upstream's verdict for a node is its first failing plugin (it stops there); the
/// matrix has every plugin, so find the first non-pass among the filled columns.
pub fn first_failure(m: &FilterMatrix, row: usize, columns: usize) -> Option<usize> {
    (0..columns).find(|&c| {
        matches!(
            m.cell(row, c),
            FilterCell::Reject { .. } | FilterCell::Error { .. }
        )
    })
}

/// Whether a cell is a rejection (or an error) among the filled columns.
fn rejects(m: &FilterMatrix, row: usize, col: usize, columns: usize) -> bool {
    col < columns
        && matches!(
            m.cell(row, col),
            FilterCell::Reject { .. } | FilterCell::Error { .. }
        )
}

/// A node filter: `!` (or `✗`) keeps rejected nodes, `!PLUGIN` those that plugin
/// rejected (its name or abbreviation, fuzzy), anything else matches names (fuzzy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeFilter {
    All,
    /// `+`: only the nodes upstream's search examined.
    Examined,
    Name(String),
    Rejected,
    RejectedBy(Vec<usize>),
}

impl NodeFilter {
    pub fn parse(text: &str, plugins: &[&str]) -> NodeFilter {
        let t = text.trim();
        if t.is_empty() {
            return NodeFilter::All;
        }
        if t == "+" {
            return NodeFilter::Examined;
        }
        let Some(rest) = t.strip_prefix('!').or_else(|| t.strip_prefix('✗')) else {
            return NodeFilter::Name(t.to_string());
        };
        let rest = rest.trim();
        if rest.is_empty() {
            return NodeFilter::Rejected;
        }
        let exact: Vec<usize> = (0..plugins.len())
            .filter(|&c| {
                plugins[c].eq_ignore_ascii_case(rest)
                    || crate::components::tabs::filter::draw::abbrev(plugins[c])
                        .eq_ignore_ascii_case(rest)
            })
            .collect();
        if !exact.is_empty() {
            return NodeFilter::RejectedBy(exact);
        }
        NodeFilter::RejectedBy(
            (0..plugins.len())
                .filter(|&c| fuzzy(rest, plugins[c]))
                .collect(),
        )
    }
}

/// Rows of the matrix after the filter and the sort; `col` is the selected column (for
/// `ByPlugin`). Computed when the rows are rebuilt, never per frame.
pub fn matrix_order(
    m: &FilterMatrix,
    names: impl Fn(usize) -> String,
    columns: usize,
    sort: MatrixSort,
    filter: &str,
    col: usize,
) -> Vec<usize> {
    let f = NodeFilter::parse(filter, &m.plugins);
    let mut rows: Vec<usize> = (0..m.nodes.len())
        .filter(|&r| match &f {
            NodeFilter::All => true,
            NodeFilter::Examined => m.was_examined(r),
            NodeFilter::Name(t) => fuzzy(t, &names(m.nodes[r])),
            // Rejected means rejected by upstream's search: a node it never examined was
            // not, whatever kubestep's own run of it says.
            NodeFilter::Rejected => m.was_examined(r) && first_failure(m, r, columns).is_some(),
            NodeFilter::RejectedBy(cols) => {
                m.was_examined(r) && cols.iter().any(|&c| rejects(m, r, c, columns))
            }
        })
        .collect();
    match sort {
        MatrixSort::Examined => {}
        MatrixSort::Rejected => rows.sort_by_key(|&r| first_failure(m, r, columns).is_none()),
        MatrixSort::ByPlugin => rows.sort_by_key(|&r| !rejects(m, r, col, columns)),
        MatrixSort::Passing => rows.sort_by_key(|&r| first_failure(m, r, columns).is_some()),
        MatrixSort::Name => rows.sort_by_cached_key(|&r| names(m.nodes[r])),
    }
    rows
}

/// How many examined nodes each plugin rejected (or errored on), among the filled
/// columns: the counts at the top of the matrix (the trace's `rejected` counts the same).
pub fn rejections_per_plugin(m: &FilterMatrix, columns: usize) -> Vec<usize> {
    (0..m.plugins.len())
        .map(|c| {
            (0..m.nodes.len())
                .filter(|&r| m.was_examined(r) && rejects(m, r, c, columns))
                .count()
        })
        .collect()
}
